package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	bam, err := os.ReadFile(filepath.Join(p.Mnt, "a.bam"))
	if err != nil {
		t.Fatal(err)
	}
	os.Stat(filepath.Join(p.Mnt, "gone.bam")) // fails: its reference is missing

	st := statusJSON(t, cache, p.Mnt)
	if st.PID != p.Cmd.Process.Pid || st.Mnt != p.Mnt || st.Cache.MaxBytes != 256<<20 || st.Cache.Misses == 0 {
		t.Errorf("status = %+v, want pid %d, mnt %s, a 256 MiB cache that was used", st, p.Cmd.Process.Pid, p.Mnt)
	}
	if ss := st.States; ss.Descriptors < 1 || ss.Descriptors > ss.MaxOpen || ss.Bytes <= 0 || ss.MaxBytes < 8<<20 || ss.Bytes > ss.MaxBytes {
		t.Errorf("states = %+v, want a.cram's descriptor and state held, within bounds of at least 8 MiB", ss)
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

	rc, stderr, out := runCmd(t, "status", "--cache-dir", cache, p.Mnt)
	if rc != 0 || !strings.Contains(string(out), "cache: ") || !strings.Contains(string(out), "open files: ") || !strings.Contains(string(out), filepath.Join(src, "a.cram")) || !strings.Contains(string(out), "failing: reference") {
		t.Errorf("cramfs status: exit %d, stderr %q, stdout:\n%s", rc, stderr, out)
	}

	sock := statusSocket(cache, p.Mnt)
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
		rc, stderr := runAsNobody(t, nb, nil, "status", "--cache-dir", cache, p.Mnt)
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
	rc, stderr, _ = runCmd(t, "status", "--cache-dir", cache, p.Mnt)
	if rc != 1 || !strings.Contains(stderr, "no cramfs mount of yours is running at "+p.Mnt) {
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

// TestStatusFromMountPointAlone: a mount with a --cache-dir and no
// XDG_RUNTIME_DIR has its status socket in that cache directory; `cramfs
// status MNT`, given neither, finds it through the mount's root
// (statusXattr), and `cramfs status --cache-dir DIR MNT` finds it in DIR.
// Both work with a cache directory deep enough that the socket's path is
// longer than a unix socket address holds (a deep TMPDIR, or --cache-dir).
func TestStatusFromMountPointAlone(t *testing.T) {
	requireMount(t)
	bin := buildCramfs(t)
	for _, deep := range []bool{false, true} {
		for _, relative := range []bool{false, true} {
			t.Run(fmt.Sprintf("relative=%v,deep=%v", relative, deep), func(t *testing.T) {
				statusFromMountPointAlone(t, bin, relative, deep)
			})
		}
	}
}

// statusFromMountPointAlone is TestStatusFromMountPointAlone with the
// mount given its --cache-dir as an absolute path or relative to its
// working directory (the test's), deep or not.
func statusFromMountPointAlone(t *testing.T, bin string, relative, deep bool) {
	src, cache, mnt := t.TempDir(), t.TempDir(), t.TempDir()
	if deep {
		cache = filepath.Join(cache, strings.Repeat("d", 60), strings.Repeat("e", 60))
	}
	if sock := statusSocket(cache, mnt); deep && len(sock) <= sunPathMax {
		t.Fatalf("socket path %s is %d bytes, want more than %d", sock, len(sock), sunPathMax)
	}
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), filepath.Join(src, "a.cram"))
	cacheArg := cache
	if relative {
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		if cacheArg, err = filepath.Rel(wd, cache); err != nil {
			t.Fatal(err)
		}
	}
	// The client's default cache directory is another, empty one.
	env := append(envWithout("XDG_RUNTIME_DIR", "XDG_CACHE_HOME"), "XDG_CACHE_HOME="+t.TempDir())
	p := startMountEnv(t, bin, mnt, env, "mount", "-T", testdata("ref", "ce.fa"), "--cache-dir", cacheArg, src, mnt)
	for _, args := range [][]string{{"status", "--json", mnt}, {"status", "--json", "--cache-dir", cacheArg, mnt}} {
		var out []byte
		poll(t, "an answer to cramfs "+strings.Join(args, " "), 10*time.Second, func() error {
			cmd := exec.Command(bin, args...)
			cmd.Env = env
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			var err error
			if out, err = cmd.Output(); err != nil {
				return fmt.Errorf("%v: %s; mount log:\n%s", err, stderr.String(), p.Stderr.String())
			}
			return nil
		})
		var st mountStatus
		if err := json.Unmarshal(out, &st); err != nil || st.PID != p.Cmd.Process.Pid {
			t.Fatalf("cramfs %s: %+v (%v), want the answer of pid %d", strings.Join(args, " "), st, err, p.Cmd.Process.Pid)
		}
	}
	named, err := mountXattr(mnt, statusXattr)
	if err != nil || filepath.Dir(named) != filepath.Join(cache, "run") {
		t.Errorf("the mount names %q (%v), want a socket in %s", named, err, filepath.Join(cache, "run"))
	}
	if strings.Contains(p.Stderr.String(), "level=WARN") {
		t.Errorf("the mount warned:\n%s", p.Stderr.String())
	}
}

// TestTrustedSocketRefuses: a status socket a mount names is used only
// when it has the name derived from the mount point and lies, a socket,
// in a private directory (what an unknown FUSE mount cannot fake).
func TestTrustedSocketRefuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	d, err := openPrivateDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const base = "status-0123456789abcdef.sock"
	sock := filepath.Join(dir, base)
	addr, err := d.addr(base) // dir may be deeper than a socket address holds
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := trustedSocket(sock, base); err != nil {
		t.Fatalf("a socket in a private directory refused: %v", err)
	}
	plain := filepath.Join(dir, "status-fedcba9876543210.sock")
	if err := os.WriteFile(plain, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := trustedSocket(plain, filepath.Base(plain)); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("a plain file: %v, want refused", err)
	}
	if err := trustedSocket(sock, "status-other.sock"); err == nil {
		t.Error("a socket of another mount point's name accepted")
	}
	if err := trustedSocket(base, base); err == nil {
		t.Error("a relative path accepted")
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := trustedSocket(sock, base); err == nil || !strings.Contains(err.Error(), "want 0700") {
		t.Errorf("a socket in a directory others may enter: %v, want refused", err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if err := trustedSocket(filepath.Join(link, base), base); err == nil {
		t.Error("a socket through a link accepted")
	}
}
