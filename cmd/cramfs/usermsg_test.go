package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestMountMessagesForUsers checks the messages a user other than root
// gets when FUSE, --allow-other or the mount point is not available to
// them: each says what is wrong and what to do, on one line, exit 1.
func TestMountMessagesForUsers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run cramfs as another user")
	}
	requireMount(t)
	dir := sharedDir(t)
	bin := filepath.Join(dir, "cramfs")
	copyFile(t, buildCramfs(t), bin)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Chmod(bin, 0o755))
	src, own, roots := filepath.Join(dir, "src"), filepath.Join(dir, "own"), filepath.Join(dir, "roots")
	for _, d := range []string{src, own, roots} {
		must(os.Mkdir(d, 0o755))
	}
	must(os.Chown(own, nobody, nobody))
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + own}

	check := func(name string, rc int, stderr string, want ...string) {
		t.Helper()
		if rc != 1 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.HasPrefix(stderr, "cramfs mount: ") {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line", name, rc, stderr)
		}
		for _, w := range want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: %q does not say %q", name, stderr, w)
			}
		}
	}

	t.Run("no FUSE access", func(t *testing.T) {
		if nobodyCan(t, "-w", "/dev/fuse") {
			t.Skip("/dev/fuse is writable by every user here")
		}
		// fusermount3 without its setuid bit, found first on PATH.
		fmDir := filepath.Join(dir, "bin")
		must(os.Mkdir(fmDir, 0o755))
		fm, err := exec.LookPath("fusermount3")
		if err != nil {
			t.Skip("no fusermount3")
		}
		copyFile(t, fm, filepath.Join(fmDir, "fusermount3"))
		must(os.Chmod(filepath.Join(fmDir, "fusermount3"), 0o755))
		rc, stderr := runAsNobody(t, bin, []string{"PATH=" + fmDir + ":/usr/bin:/bin"}, "mount", src, own)
		check("no FUSE access", rc, stderr, "user 65534 can neither open /dev/fuse", "is not setuid root", "chmod u+s", "run cramfs as root")
	})
	t.Run("allow-other", func(t *testing.T) {
		if conf, _ := os.ReadFile("/etc/fuse.conf"); bytes.Contains(conf, []byte("\nuser_allow_other")) || bytes.HasPrefix(conf, []byte("user_allow_other")) {
			t.Skip("/etc/fuse.conf allows allow_other here")
		}
		rc, stderr := runAsNobody(t, bin, env, "mount", "--allow-other", src, own)
		check("allow-other", rc, stderr, "--allow-other", "/etc/fuse.conf does not contain the line user_allow_other", "mount without --allow-other")
	})
	t.Run("mount point not writable", func(t *testing.T) {
		rc, stderr := runAsNobody(t, bin, env, "mount", src, roots)
		// Either FUSE itself is refused to users here (checked first), or
		// the mount point is.
		if !strings.Contains(stderr, "no access to FUSE") {
			check("mount point", rc, stderr, "mount point "+roots+" is not writable by user 65534", "mkdir ~/mnt")
		}
	})
}

// TestMountPointMissingSaysMkdir checks the message for a mount point
// that does not exist.
func TestMountPointMissingSaysMkdir(t *testing.T) {
	requireMount(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	rc, stderr, _ := runCmd(t, "mount", t.TempDir(), mnt)
	if rc != 1 || stderr != "cramfs mount: mount point "+mnt+" does not exist: create it with `mkdir -p "+mnt+"`\n" {
		t.Errorf("exit %d, stderr %q", rc, stderr)
	}
}

// TestUnmountMessages checks `cramfs unmount` of a directory with nothing
// mounted and of a mount that is not cramfs's: exit 1, the mount left
// alone, one line saying why.
func TestUnmountMessages(t *testing.T) {
	requireMount(t)
	dir := t.TempDir()
	rc, stderr, _ := runCmd(t, "unmount", dir)
	if want := "cramfs unmount: nothing to unmount: " + dir + " is not mounted\n"; rc != 1 || stderr != want {
		t.Errorf("unmount of a plain directory: exit %d, stderr %q, want %q", rc, stderr, want)
	}
	tmp := t.TempDir()
	if err := syscall.Mount("tmpfs", tmp, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(tmp, 0) })
	rc, stderr, _ = runCmd(t, "unmount", tmp)
	if want := "cramfs unmount: " + tmp + " is not a cramfs mount but a tmpfs mount of tmpfs; left alone (unmount it with umount if you mean it)\n"; rc != 1 || stderr != want {
		t.Errorf("unmount of a tmpfs: exit %d, stderr %q, want %q", rc, stderr, want)
	}
	if !isMounted(t, tmp) {
		t.Error("cramfs unmount unmounted a tmpfs")
	}
}
