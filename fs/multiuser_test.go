package fs

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cramfs/cramfs/internal/corpus"
)

// The tests in this file are a lab's shared mount: a mount run by root
// with AllowOther, read by user nobody, who must read through it exactly
// what they may read in the source.

// requireNobody fails (skips outside CI) unless the test runs as root
// with setpriv and setfacl at hand, which running as nobody needs.
func requireNobody(tb testing.TB) {
	tb.Helper()
	corpus.RequireFUSE(tb)
	if os.Geteuid() != 0 {
		corpus.Missing(tb, "running as user %d, not root: cannot run commands as nobody", os.Geteuid())
	}
	for _, tool := range []string{"setpriv", "setfacl"} {
		if _, err := exec.LookPath(tool); err != nil {
			corpus.Missing(tb, "%s: %v", tool, err)
		}
	}
}

// sharedTemp is a new directory that nobody may traverse (t.TempDir()
// and its parent are 0700).
func sharedTemp(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		must(t, os.Chmod(d, 0o711))
	}
	return dir
}

// asNobody runs cat on path as user nobody and returns what it printed,
// or an error with its standard error.
func asNobody(t *testing.T, path string) ([]byte, error) {
	t.Helper()
	cmd := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat", "--", path)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, errors.New(strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// sharedMount mounts src, as root with AllowOther, on a mount point
// nobody can reach.
func sharedMount(t *testing.T, top, src string, op Opener, opts Options) (*Server, string) {
	t.Helper()
	mnt := filepath.Join(top, "mnt")
	must(t, os.Mkdir(mnt, 0o755))
	opts.AllowOther = true
	s, err := Mount(src, mnt, op, opts)
	if err != nil {
		t.Fatalf("Mount: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Unmount(); err != nil {
			t.Errorf("Unmount: %v", err)
			_ = Unmount(mnt)
		}
	})
	return s, mnt
}

func setfacl(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("setfacl", args...).CombinedOutput(); err != nil {
		t.Fatalf("setfacl %q: %v: %s", args, err, out)
	}
}

// checkNobody checks that nobody reads each name of can under dir with
// the content given, and none of cannot.
func checkNobody(t *testing.T, where, dir string, can map[string][]byte, cannot []string) {
	t.Helper()
	for name, want := range can {
		got, err := asNobody(t, filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: nobody reads %s: %d bytes, %v; want %d bytes", where, name, len(got), err, len(want))
		}
	}
	for _, name := range cannot {
		if got, err := asNobody(t, filepath.Join(dir, name)); err == nil || !strings.Contains(err.Error(), "Permission denied") {
			t.Errorf("%s: nobody reads %s: %d bytes, %v; want Permission denied", where, name, len(got), err)
		}
	}
}

// TestSharedMountLinks: a link in a public directory to a CRAM (or file,
// or directory) of a 0700 one gives nobody nothing through the mount, as
// in the source; links are shown as links, their text rewritten to name
// the synthetic files, and absolute links below the source made relative.
// A link to a CRAM nobody may read is read through the mount.
func TestSharedMountLinks(t *testing.T) {
	requireNobody(t)
	top := sharedTemp(t)
	src := filepath.Join(top, "src")
	for name, content := range map[string]string{
		"priv/p.cram": "CRAM p", "priv/q.cram": "CRAM q", "priv/secret.txt": "secret",
		"shared/s.cram": "CRAM s", "pub/own.txt": "own",
	} {
		writeFile(t, filepath.Join(src, name), content)
	}
	must(t, os.Chmod(filepath.Join(src, "priv"), 0o700))
	real, err := filepath.EvalSymlinks(src)
	must(t, err)
	for link, target := range map[string]string{
		"link.cram": "../priv/p.cram", "abs.cram": filepath.Join(real, "priv", "q.cram"),
		"dlink": "../priv", "plain.txt": "../priv/secret.txt", "ok.cram": "../shared/s.cram",
		"chain.cram": "link.cram", "blob.cram": "own.txt",
	} {
		must(t, os.Symlink(target, filepath.Join(src, "pub", link)))
	}
	_, mnt := sharedMount(t, top, src, &fakeOpener{}, Options{})
	p, q, s := expectedBAM(t, filepath.Join(src, "priv", "p.cram")), expectedBAM(t, filepath.Join(src, "priv", "q.cram")), expectedBAM(t, filepath.Join(src, "shared", "s.cram"))

	checkNobody(t, "source", src, map[string][]byte{"pub/ok.cram": []byte("CRAM s")}, []string{"pub/link.cram", "pub/abs.cram", "pub/dlink/p.cram", "pub/plain.txt"})
	// Root reads them all through the mount (which opens the CRAMs: their
	// indexes are then known and listed).
	for name, want := range map[string][]byte{
		"pub/link.bam": p.data, "pub/link.bam.bai": p.index, "pub/link.bai": p.index, "pub/chain.bam": p.data,
		"pub/abs.bam": q.data, "pub/abs.bai": q.index, "pub/dlink/p.bam": p.data, "pub/plain.txt": []byte("secret"),
		"pub/ok.bam": s.data, "pub/ok.bai": s.index,
	} {
		got, err := os.ReadFile(filepath.Join(mnt, name))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("root reads %s: %d bytes, %v; want %d bytes", name, len(got), err, len(want))
		}
	}
	checkNobody(t, "mount", mnt, map[string][]byte{"pub/ok.bam": s.data, "pub/ok.bai": s.index, "pub/own.txt": []byte("own")},
		[]string{"pub/link.bam", "pub/link.bam.bai", "pub/link.bai", "pub/chain.bam", "pub/abs.bam", "pub/abs.bam.bai", "pub/abs.bai", "pub/dlink/p.bam", "pub/plain.txt"})

	for name, want := range map[string]string{
		"link.bam": "../priv/p.bam", "link.bam.bai": "../priv/p.bam.bai", "link.bai": "../priv/p.bai",
		"abs.bam": "../priv/q.bam", "abs.bai": "../priv/q.bai", "dlink": "../priv", "plain.txt": "../priv/secret.txt",
		"chain.bam": "link.bam",
	} {
		got, err := os.Readlink(filepath.Join(mnt, "pub", name))
		if err != nil || got != want {
			t.Errorf("readlink %s = %q, %v; want %q", name, got, err, want)
		}
		fi, err := os.Lstat(filepath.Join(mnt, "pub", name))
		if err != nil || fi.Mode()&os.ModeSymlink == 0 || fi.Size() != int64(len(want)) {
			t.Errorf("lstat %s = %v, %v; want a link of %d bytes", name, fi, err, len(want))
		}
	}
	// blob.cram leads to own.txt, whose name gives no synthetic name to
	// lead to: hidden.
	want := []string{"abs.bai", "abs.bam", "abs.bam.bai", "chain.bai", "chain.bam", "chain.bam.bai", "dlink",
		"link.bai", "link.bam", "link.bam.bai", "ok.bai", "ok.bam", "ok.bam.bai", "own.txt", "plain.txt"}
	if got := readDirNames(t, filepath.Join(mnt, "pub")); !slices.Equal(got, want) {
		t.Errorf("listing of pub %q, want %q", got, want)
	}
	for _, name := range []string{"blob.bam", "blob.bai", "link.cram"} {
		if _, err := os.Lstat(filepath.Join(mnt, "pub", name)); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("lstat %s: %v, want ENOENT", name, err)
		}
	}
}

// aclAccess reads the access ACL of path (an error when it has none).
func aclAccess(path string) ([]byte, error) {
	buf := make([]byte, 4096)
	n, err := unix.Getxattr(path, "system.posix_acl_access", buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// TestSharedMountACL: POSIX ACLs of the source decide through the mount
// as in the source, for CRAMs (their BAM and index), pass-through files
// and directories: one that refuses nobody refuses them, one that grants
// grants, a mask limits; a change to an ACL takes effect within seconds.
// The root's status xattr still answers.
func TestSharedMountACL(t *testing.T) {
	requireNobody(t)
	top := sharedTemp(t)
	src := filepath.Join(top, "src")
	for name, content := range map[string]string{
		"deny.cram": "CRAM deny", "grant.cram": "CRAM grant", "deny.txt": "deny", "grant.txt": "grant",
		"masked.cram": "CRAM masked", "ok.cram": "CRAM ok", "later.txt": "later", "closed/in.cram": "CRAM in",
	} {
		writeFile(t, filepath.Join(src, name), content)
	}
	setfacl(t, "-m", "u:nobody:---", filepath.Join(src, "deny.cram"), filepath.Join(src, "deny.txt"), filepath.Join(src, "closed"))
	must(t, os.Chmod(filepath.Join(src, "grant.cram"), 0o600))
	must(t, os.Chmod(filepath.Join(src, "grant.txt"), 0o600))
	setfacl(t, "-m", "u:nobody:r", filepath.Join(src, "grant.cram"), filepath.Join(src, "grant.txt"))
	// The mask (the group bits) is write only: it leaves nobody's entry
	// nothing to read, although others may.
	must(t, os.Chmod(filepath.Join(src, "masked.cram"), 0o624))
	setfacl(t, "-n", "-m", "u:nobody:rw-", filepath.Join(src, "masked.cram"))

	const sockXattr = "user.cramfs.status_socket"
	_, mnt := sharedMount(t, top, src, &fakeOpener{}, Options{RootXattrs: map[string]string{sockXattr: "/run/x.sock"}})
	bam := func(name string) *fakeBAM { return expectedBAM(t, filepath.Join(src, name)) }
	// Root opens every CRAM first, so that the indexes are known.
	for _, n := range []string{"deny.bam", "grant.bam", "masked.bam", "ok.bam", "closed/in.bam"} {
		if _, err := os.ReadFile(filepath.Join(mnt, n)); err != nil {
			t.Fatal(err)
		}
	}
	checkNobody(t, "source", src, map[string][]byte{"grant.cram": []byte("CRAM grant"), "grant.txt": []byte("grant"), "ok.cram": []byte("CRAM ok")},
		[]string{"deny.cram", "deny.txt", "masked.cram", "closed/in.cram"})
	checkNobody(t, "mount", mnt, map[string][]byte{
		"grant.bam": bam("grant.cram").data, "grant.bai": bam("grant.cram").index, "grant.txt": []byte("grant"),
		"ok.bam": bam("ok.cram").data, "later.txt": []byte("later"),
	}, []string{"deny.bam", "deny.bam.bai", "deny.bai", "deny.txt", "masked.bam", "closed/in.bam"})

	// The ACL served is the source's, minus write permission.
	srcACL, err := aclAccess(filepath.Join(src, "masked.cram"))
	must(t, err)
	got, err := aclAccess(filepath.Join(mnt, "masked.bam"))
	if err != nil || len(got) != len(srcACL) || len(got) < 12 {
		t.Fatalf("ACL of masked.bam: %x, %v; the CRAM's is %x", got, err, srcACL)
	}
	for i := 4; i+8 <= len(got); i += 8 {
		if got[i+2] != srcACL[i+2]&^2 || !bytes.Equal(got[i:i+2], srcACL[i:i+2]) || !bytes.Equal(got[i+4:i+8], srcACL[i+4:i+8]) {
			t.Errorf("ACL entry %d of masked.bam: %x, want the CRAM's %x minus write", (i-4)/8, got[i:i+8], srcACL[i:i+8])
		}
	}
	if v, err := unix.Getxattr(mnt, sockXattr, make([]byte, 64)); err != nil || v != len("/run/x.sock") {
		t.Errorf("getxattr %s of the mount root: %d, %v", sockXattr, v, err)
	}
	for name, want := range map[string]string{"grant.bam": "system.posix_acl_access\x00", "ok.bam": "", ".": sockXattr + "\x00"} {
		buf := make([]byte, 256)
		n, err := unix.Listxattr(filepath.Join(mnt, name), buf)
		if err != nil || string(buf[:n]) != want {
			t.Errorf("listxattr %s = %q, %v; want %q", name, buf[:max(n, 0)], err, want)
		}
	}

	// A new ACL entry refusing nobody takes effect through the mount.
	setfacl(t, "-m", "u:nobody:---", filepath.Join(src, "later.txt"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := asNobody(t, filepath.Join(mnt, "later.txt"))
		if err != nil && strings.Contains(err.Error(), "Permission denied") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nobody still reads later.txt 10 s after its ACL refused them (%v)", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestShadowedNames: a real entry of the source named like a synthetic
// file (a directory v.bam beside v.cram, a real x.bam, x.bam.bai and
// x.bai, a link y.bai) is shown instead of the synthetic file; each is
// logged once and listed by Server.Shadowed.
func TestShadowedNames(t *testing.T) {
	corpus.RequireFUSE(t)
	src := t.TempDir()
	for name, content := range map[string]string{
		"v.cram": "CRAM v", "v.bam/inner.txt": "inner", "x.cram": "CRAM x", "x.bam": "real x.bam",
		"x.bam.bai": "real x.bam.bai", "x.bai": "real x.bai", "y.cram": "CRAM y", "elsewhere.txt": "elsewhere",
	} {
		writeFile(t, filepath.Join(src, name), content)
	}
	must(t, os.Symlink("elsewhere.txt", filepath.Join(src, "y.bai")))
	var logBuf syncBuffer
	log := slog.New(slog.NewTextHandler(&logBuf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	mnt := t.TempDir()
	s, err := Mount(src, mnt, &fakeOpener{}, Options{Logger: log})
	must(t, err)
	defer func() { must(t, s.Unmount()) }()
	for range 2 {
		for name, want := range map[string]string{
			"v.bam/inner.txt": "inner", "x.bam": "real x.bam", "x.bam.bai": "real x.bam.bai", "x.bai": "real x.bai", "y.bai": "elsewhere",
		} {
			got, err := os.ReadFile(filepath.Join(mnt, name))
			if err != nil || string(got) != want {
				t.Errorf("%s = %d bytes %q..., %v; want the real entry's %q", name, len(got), got[:min(len(got), 12)], err, want)
			}
		}
		readDirNames(t, mnt)
	}
	if fi, err := os.Stat(filepath.Join(mnt, "v.bam")); err != nil || !fi.IsDir() {
		t.Errorf("v.bam: %v, %v; want the directory", fi, err)
	}
	got, truncated := s.Shadowed()
	slices.SortFunc(got, func(a, b Shadow) int { return strings.Compare(a.Name, b.Name) })
	want := []Shadow{
		{Dir: ".", Name: "v.bam", Kind: "directory", CRAM: "v.cram"},
		{Dir: ".", Name: "x.bai", Kind: "file", CRAM: "x.cram"},
		{Dir: ".", Name: "x.bam", Kind: "file", CRAM: "x.cram"},
		{Dir: ".", Name: "x.bam.bai", Kind: "file", CRAM: "x.cram"},
		{Dir: ".", Name: "y.bai", Kind: "symbolic link", CRAM: "y.cram"},
	}
	if !slices.Equal(got, want) || truncated {
		t.Errorf("Shadowed() = %+v, %v; want %+v", got, truncated, want)
	}
	lines := strings.Split(strings.TrimSpace(logBuf.String()), "\n")
	for _, w := range want {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, "level=WARN") && strings.Contains(l, "name="+w.Name+" ") && strings.Contains(l, "cram="+w.CRAM) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%s is logged %d times, want once; log:\n%s", w.Name, n, logBuf.String())
		}
	}
}
