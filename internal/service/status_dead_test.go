package service

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUnmountBusySaysDetached: `cramfs unmount` of a mount with a file
// open detaches it, exit 0, and says so and that the process ends when the
// last file is closed; it does.
func TestUnmountBusySaysDetached(t *testing.T) {
	requireMount(t)
	bin := buildCramfs(t)
	src := t.TempDir()
	copyFile(t, testdata("cram", "ce_1000.3.0.cram"), filepath.Join(src, "x.cram"))
	p := startMount(t, bin, src, "--cache-dir", t.TempDir())
	f, err := os.Open(filepath.Join(p.Mnt, "x.bam"))
	if err != nil {
		t.Fatal(err)
	}
	rc, stderr, _ := runCmd(t, "unmount", p.Mnt)
	if rc != 0 || !strings.Contains(stderr, "detached") || !strings.Contains(stderr, "ends when the last") {
		t.Errorf("cramfs unmount of a busy mount: exit %d, %q; want 0 saying it detached", rc, stderr)
	}
	select {
	case <-p.Done:
		t.Error("the mount process ended while a file was open on the detached mount")
	case <-time.After(300 * time.Millisecond):
	}
	f.Close()
	select {
	case <-p.Done:
	case <-time.After(10 * time.Second):
		t.Fatal("the mount process still runs after the last file was closed")
	}
}

// TestStatusOfDeadMount: `cramfs status` of a mount whose process was
// killed says the mount is dead and how to clear it.
func TestStatusOfDeadMount(t *testing.T) {
	requireMount(t)
	bin := buildCramfs(t)
	src := t.TempDir()
	copyFile(t, testdata("cram", "ce_1000.3.0.cram"), filepath.Join(src, "x.cram"))
	cache := t.TempDir()
	p := startMount(t, bin, src, "--cache-dir", cache)
	must(t, p.Cmd.Process.Signal(syscall.SIGKILL))
	<-p.Done
	rc, stderr, _ := runCmd(t, "status", "--cache-dir", cache, p.Mnt)
	if rc != 1 || !strings.Contains(stderr, "is dead") || !strings.Contains(stderr, "cramfs unmount "+p.Mnt) {
		t.Errorf("cramfs status of a dead mount: exit %d, %q; want 1 saying it is dead and to run cramfs unmount", rc, stderr)
	}
}

// TestStatusJSONNaming: `cramfs status --json` names every field in one
// style (lower case with underscores) and gives absolute paths, also for
// a mount given relative ones.
func TestStatusJSONNaming(t *testing.T) {
	requireMount(t)
	bin := buildCramfs(t)
	dir := t.TempDir()
	src, mnt, cache := filepath.Join(dir, "src"), filepath.Join(dir, "mnt"), filepath.Join(dir, "cache")
	for _, d := range []string{src, mnt} {
		must(t, os.Mkdir(d, 0o755))
	}
	copyFile(t, testdata("cram", "ce_1000.3.0.cram"), filepath.Join(src, "x.cram"))
	ref := testdata("ref", "ce.fa")
	t.Chdir(dir) // the mount is given src and mnt relative to it
	startMountEnv(t, bin, mnt, samtoolsEnv(), "mount", "-T", ref, "--cache-dir", "cache", "--", "src", "mnt")
	if _, err := os.ReadFile(filepath.Join(mnt, "x.bam")); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	poll(t, "status --json", 10*time.Second, func() error {
		cmd := exec.Command(bin, "status", "--json", "--cache-dir", cache, mnt)
		var err error
		raw, err = cmd.Output()
		return err
	})
	var tree any
	must(t, json.Unmarshal(raw, &tree))
	key := regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if !key.MatchString(k) {
					t.Errorf("status --json: key %q at %s is not lower case with underscores", k, at)
				}
				walk(e, at+"."+k)
			}
		case []any:
			for _, e := range v {
				walk(e, at+"[]")
			}
		}
	}
	walk(tree, "")
	var st mountStatus
	must(t, json.Unmarshal(raw, &st))
	if st.Src != src || st.Mnt != mnt {
		t.Errorf("status src %q mnt %q, want the absolute %q and %q", st.Src, st.Mnt, src, mnt)
	}
	if len(st.Files) != 1 || st.Files[0].Path != filepath.Join(src, "x.cram") {
		t.Errorf("status files %+v, want the absolute path of x.cram", st.Files)
	}
}
