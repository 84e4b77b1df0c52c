package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// TestMountOwnerAndUmask: --uid, --gid and --umask replace what a shared
// mount shows of owners and modes (the -o uid=,gid=,umask= forms too), and
// the kernel checks access against it: a group member reads a file of
// SRC that is private to root, which without them it cannot.
func TestMountOwnerAndUmask(t *testing.T) {
	requireMount(t)
	if os.Geteuid() != 0 {
		corpus.Missing(t, "root, to share the mount with user nobody")
	}
	bin := buildCramfs(t)
	top := sharedDir(t)
	src := filepath.Join(top, "src")
	must(t, os.MkdirAll(filepath.Join(src, "sub"), 0o700))
	copyFile(t, testdata("cram", "ce_1000.3.0.cram"), filepath.Join(src, "sub", "x.cram"))
	must(t, os.Chmod(filepath.Join(src, "sub", "x.cram"), 0o600))

	plain := filepath.Join(top, "plain")
	must(t, os.Mkdir(plain, 0o755))
	startMountProc(t, bin, plain, "mount", "--allow-other", "-T", testdata("ref", "ce.fa"), "--cache-dir", t.TempDir(), src, plain)
	if rc, _ := runAsNobody(t, "/bin/cat", nil, filepath.Join(plain, "sub", "x.bam")); rc == 0 {
		t.Fatal("without --gid/--umask, nobody reads a file private to root in SRC")
	}

	shared := filepath.Join(top, "shared")
	must(t, os.Mkdir(shared, 0o755))
	startMountProc(t, bin, shared, "mount", "--allow-other", "--uid", "0", "--gid", "65534", "--umask", "027",
		"-T", testdata("ref", "ce.fa"), "--cache-dir", t.TempDir(), src, shared)
	for p, want := range map[string]uint32{"sub": syscall.S_IFDIR | 0o550, "sub/x.bam": syscall.S_IFREG | 0o440} {
		var st syscall.Stat_t
		must(t, syscall.Stat(filepath.Join(shared, p), &st))
		if st.Mode != want || st.Uid != 0 || st.Gid != 65534 {
			t.Errorf("%s: mode %o uid %d gid %d, want mode %o uid 0 gid 65534", p, st.Mode, st.Uid, st.Gid, want)
		}
	}
	if rc, stderr := runAsNobody(t, "/bin/cat", nil, filepath.Join(shared, "sub", "x.bam")); rc != 0 {
		t.Errorf("nobody, of group 65534, cannot read x.bam with --gid 65534 --umask 027: %s", stderr)
	}
	if rc, _, _ := runCmd(t, "mount", "--umask", "9", src, shared); rc != exitUsage {
		t.Errorf("--umask 9: exit %d, want %d", rc, exitUsage)
	}
}
