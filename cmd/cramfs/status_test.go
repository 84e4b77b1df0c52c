package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatus checks `cramfs status` against a real mount: the files asked
// for with their state, reads and bytes served, the cache figures, a
// socket only the mount's user can reach, and gone after the unmount.
func TestStatus(t *testing.T) {
	requireMount(t)
	bin := buildCramfs(t)
	src, cache := t.TempDir(), t.TempDir()
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), filepath.Join(src, "a.cram"))
	gone, goneRef := cramNamingRef(t, src, "gone", "xx_tlen.3.0", testdata("ref", "xx.fa"))
	if err := os.Remove(goneRef); err != nil {
		t.Fatal(err)
	}
	p := startMount(t, bin, src, "--cache-dir", cache)
	bam, err := os.ReadFile(filepath.Join(p.mnt, "a.bam"))
	if err != nil {
		t.Fatal(err)
	}
	os.Stat(filepath.Join(p.mnt, "gone.bam")) // fails: its reference is missing

	st := statusJSON(t, cache, p.mnt)
	if st.PID != p.cmd.Process.Pid || st.Mnt != p.mnt || st.Cache.MaxBytes != 256<<20 || st.Cache.Misses == 0 {
		t.Errorf("status = %+v, want pid %d, mnt %s, a 256 MiB cache that was used", st, p.cmd.Process.Pid, p.mnt)
	}
	files := map[string]fileStatus{}
	for _, f := range st.Files {
		files[filepath.Base(f.Path)] = f
	}
	if a := files["a.cram"]; a.Size != int64(len(bam)) || a.BytesRead < int64(len(bam)) || a.Reads == 0 || a.Index != ".bai" || a.Error != "" {
		t.Errorf("a.cram: %+v, want %d bytes, all read, with its .bai", a, len(bam))
	}
	if g := files["gone.cram"]; !strings.Contains(g.Error, "not found") || g.Path != gone {
		t.Errorf("gone.cram: %+v, want its reference problem", g)
	}

	rc, stderr, out := runCmd(t, "status", "--cache-dir", cache, p.mnt)
	if rc != 0 || !strings.Contains(string(out), "cache: ") || !strings.Contains(string(out), filepath.Join(src, "a.cram")) || !strings.Contains(string(out), "failing: reference") {
		t.Errorf("cramfs status: exit %d, stderr %q, stdout:\n%s", rc, stderr, out)
	}

	sock := statusSocket(cache, p.mnt)
	for path, want := range map[string]os.FileMode{filepath.Dir(sock): 0o700, sock: 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", path, fi.Mode(), err, want)
		}
	}
	if os.Geteuid() == 0 {
		dir := sharedDir(t)
		nb := filepath.Join(dir, "cramfs")
		copyFile(t, bin, nb)
		os.Chmod(nb, 0o755)
		rc, stderr := runAsNobody(t, nb, nil, "status", "--cache-dir", cache, p.mnt)
		if rc != 1 || !strings.Contains(stderr, "cramfs status: ") || strings.Contains(stderr, "a.cram") {
			t.Errorf("status as another user: exit %d, stderr %q; want a refusal", rc, stderr)
		}
	}

	if err := unmountProc(t, p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("status socket left after the unmount: %v", err)
	}
	rc, stderr, _ = runCmd(t, "status", "--cache-dir", cache, p.mnt)
	if rc != 1 || !strings.Contains(stderr, "no cramfs mount of yours is running at "+p.mnt) {
		t.Errorf("status after the unmount: exit %d, stderr %q", rc, stderr)
	}
}

// statusJSON runs `cramfs status --json` for the mount at mnt whose cache
// directory is cache, and decodes its answer.
func statusJSON(t *testing.T, cache, mnt string) mountStatus {
	t.Helper()
	rc, stderr, out := runCmd(t, "status", "--json", "--cache-dir", cache, mnt)
	if rc != 0 {
		t.Fatalf("cramfs status --json: exit %d: %s", rc, stderr)
	}
	var st mountStatus
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("status JSON: %v\n%s", err, out)
	}
	return st
}
