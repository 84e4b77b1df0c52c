package fs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

func TestAllowOtherNeedsFuseConf(t *testing.T) {
	dir := t.TempDir()
	conf := func(name, text string) string {
		p := filepath.Join(dir, name)
		writeFile(t, p, text)
		return p
	}
	for _, tc := range []struct {
		name string
		euid int
		conf string
		ok   bool
	}{
		{"root", 0, filepath.Join(dir, "none"), true},
		{"no file", 1000, filepath.Join(dir, "none"), false},
		{"commented out", 1000, conf("commented", "# mount_max = 1000\n#user_allow_other\n"), false},
		{"set", 1000, conf("set", "mount_max = 1000\n  user_allow_other  # for cramfs\n"), true},
		{"other option", 1000, conf("other", "user_allow_other_not\n"), false},
	} {
		err := allowOtherProblem(tc.euid, tc.conf)
		if tc.ok != (err == nil) {
			t.Errorf("%s: allowOtherProblem = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if err != nil && (!errors.Is(err, ErrAllowOther) || !errors.Is(err, ErrMount) ||
			!strings.Contains(err.Error(), "user_allow_other") || !strings.Contains(err.Error(), tc.conf)) {
			t.Errorf("%s: error %q does not name the file and the line to add", tc.name, err)
		}
	}
}

func TestParseMountinfo(t *testing.T) {
	e, ok := parseMountinfo(`43 27 0:40 / /tmp/a\040b ro,nosuid shared:1 master:2 - fuse.cramfs /src\040dir ro,user_id=1000,group_id=1000,default_permissions`)
	want := mountEntry{point: "/tmp/a b", fstype: "fuse.cramfs", source: "/src dir", userID: 1000}
	if !ok || e != want {
		t.Errorf("parseMountinfo = %+v %v, want %+v", e, ok, want)
	}
	e, ok = parseMountinfo("22 27 0:21 / /proc rw,relatime - proc proc rw")
	if !ok || e.point != "/proc" || e.fstype != "proc" || e.userID != -1 {
		t.Errorf("parseMountinfo(/proc) = %+v %v", e, ok)
	}
	if _, ok := parseMountinfo("22 27 0:21 /"); ok {
		t.Error("a short line was accepted")
	}
}

// FuzzParseMountinfo checks that no line makes parseMountinfo panic and
// that the mount point it returns is the unescaped fifth field.
func FuzzParseMountinfo(f *testing.F) {
	f.Add("43 27 0:40 / /tmp/m ro - fuse.cramfs /src ro,user_id=0")
	f.Add(`1 2 3 4 /a\040\134 - - x y user_id=`)
	f.Fuzz(func(t *testing.T, line string) {
		e, ok := parseMountinfo(line)
		if fields := strings.Fields(line); ok != (len(fields) >= 5) || ok && e.point != unescapeMount(fields[4]) {
			t.Fatalf("parseMountinfo(%q) = %+v, %v", line, e, ok)
		}
	})
}

// TestUnmountRefusesWhatIsNotOurs checks that Unmount leaves alone a
// directory with nothing mounted, a mount of another type, and another
// user's cramfs mount, and says so.
func TestUnmountRefusesWhatIsNotOurs(t *testing.T) {
	corpus.RequireFUSE(t)
	dir := t.TempDir()
	err := Unmount(dir)
	if !errors.Is(err, ErrNotMounted) || !errors.Is(err, ErrMount) || !strings.Contains(err.Error(), dir+" is not mounted") {
		t.Errorf("Unmount of a plain directory = %v, want ErrNotMounted naming it", err)
	}
	tmp := t.TempDir()
	if err := syscall.Mount("tmpfs", tmp, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("cannot mount a tmpfs to unmount: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(tmp, 0) })
	err = Unmount(tmp)
	if !errors.Is(err, ErrNotCramfs) || !strings.Contains(err.Error(), "tmpfs mount") {
		t.Errorf("Unmount of a tmpfs = %v, want ErrNotCramfs naming its type", err)
	}
	if busy, _ := isMountPoint(tmp); !busy {
		t.Error("Unmount unmounted the tmpfs")
	}
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "u.cram"), "u")
	mnt := mountT(t, src, &fakeOpener{}, Options{})
	err = unmountable(mnt, os.Geteuid()+1000)
	if !errors.Is(err, ErrNotCramfs) || !strings.Contains(err.Error(), "only they or root") {
		t.Errorf("another user's view of our mount = %v, want ErrNotCramfs", err)
	}
	if err := unmountable(mnt, os.Geteuid()); err != nil {
		t.Errorf("our own cramfs mount: %v", err)
	}
}
