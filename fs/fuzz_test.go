package fs

import (
	"context"
	"errors"
	iofs "io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// FuzzNameMapping feeds arbitrary names to the lookup rules of the root
// of a fixture source tree (no mount needed) and checks that they never
// escape the source, never show a .cram or .crai file, and agree with the
// directory listing.
func FuzzNameMapping(f *testing.F) {
	src := f.TempDir()
	for name, content := range map[string]string{
		"a.cram": "CRAM a", "a.cram.crai": "i", "b.crai": "i", "x.bam": "real", "x.txt": "t",
		"sub/c.cram": "CRAM c", "dir.cram/inner.txt": "d",
	} {
		writeFile(f, filepath.Join(src, name), content)
	}
	for target, link := range map[string]string{
		"/etc/passwd": "out", "..": "up", "sub/c.cram": "l.cram", "a.cram": "sub/back.cram", ".": "self",
		"../../": "sub/up2", "missing": "dangling",
	} {
		must(f, os.Symlink(target, filepath.Join(src, link)))
	}
	real, err := filepath.EvalSymlinks(src)
	must(f, err)
	root, err := os.OpenRoot(real)
	must(f, err)
	f.Cleanup(func() { root.Close() })
	m := newMountFS(root, real, &fakeOpener{}, discardLogger())
	d := &dirNode{m: m, rel: ".", mpath: "."}

	ds, errno := d.Readdir(context.Background())
	if errno != 0 {
		f.Fatalf("Readdir: %v", errno)
	}
	listed := map[string]bool{}
	for ds.HasNext() {
		e, errno := ds.Next()
		if errno != 0 {
			f.Fatal(errno)
		}
		listed[e.Name] = true
		f.Add(e.Name)
	}
	for _, s := range []string{"a.cram", "a.cram.crai", "out", "up", "self", "../a.cram", "/etc", "sub/c.bam", "", ".", "..", "x.bam", "dir.cram", "a\x00.bam", "dangling", "l.bam.bai"} {
		f.Add(s)
	}

	f.Fuzz(func(t *testing.T, name string) {
		e, err := m.child(d, name)
		if err != nil {
			if listed[name] {
				t.Fatalf("%q is listed but lookup fails: %v", name, err)
			}
			if !errors.Is(err, iofs.ErrNotExist) && !errors.Is(err, syscall.ENAMETOOLONG) {
				t.Fatalf("child(%q) = %v, want a not-exist error", name, err)
			}
			return
		}
		// An index (or a link to one) is listed only once the Opener
		// knows it exists.
		idx, isIndex := e, e.kind == kindBAI
		if e.kind == kindLink && e.want == kindBAI {
			idx, isIndex = *e.dest, true
		}
		if !listed[name] && (!isIndex || m.knownIndex(idx)) {
			t.Fatalf("%q resolves (%+v) but is not listed", name, e)
		}
		if e.rel == ".." || strings.HasPrefix(e.rel, "../") || path.IsAbs(e.rel) {
			t.Fatalf("%q escapes the source: %q", name, e.rel)
		}
		if e.kind == kindLink {
			if e.dest == nil || path.IsAbs(e.text) || e.dest.kind == kindLink || e.want != kindLink && e.dest.kind != e.want {
				t.Fatalf("%q: link %+v leads to %+v", name, e, e.dest)
			}
			e = *e.dest
		}
		switch e.kind {
		case kindBAM, kindBAI:
			if !strings.HasSuffix(e.rel, ".cram") || !isReg(&e.st) {
				t.Fatalf("%q: synthetic file backed by %q", name, e.rel)
			}
		case kindFile:
			if strings.HasSuffix(name, ".cram") || strings.HasSuffix(name, ".crai") {
				t.Fatalf("%q: CRAM-side file shown", name)
			}
		}
	})
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// FuzzResolveLink makes a symbolic link sub/l with an arbitrary target in a
// fixture tree (with links of its own, and a directory outside it) and
// resolves it as the mount does: the result never lies outside the source
// and, when the link is followed, it is where the kernel's own resolution
// leads (filepath.EvalSymlinks); a link that leaves the source is hidden;
// a link shown has a relative text that leads there too.
func FuzzResolveLink(f *testing.F) {
	top, err := filepath.EvalSymlinks(f.TempDir())
	must(f, err)
	src, out := filepath.Join(top, "src"), filepath.Join(top, "out")
	writeFile(f, filepath.Join(src, "sub", "deep", "x.cram"), "x")
	writeFile(f, filepath.Join(src, "y.txt"), "y")
	writeFile(f, filepath.Join(out, "secret.cram"), "s")
	for link, target := range map[string]string{
		"up": "..", "dl": "sub/deep", "abs": filepath.Join(src, "sub"), "outl": out, "self": "self",
	} {
		must(f, os.Symlink(target, filepath.Join(src, link)))
	}
	root, err := os.OpenRoot(src)
	must(f, err)
	f.Cleanup(func() { root.Close() })
	m := newMountFS(root, src, &fakeOpener{}, discardLogger())
	for _, s := range []string{"deep/x.cram", "../y.txt", "../../out/secret.cram", "/etc/passwd", src + "/y.txt",
		"../dl/x.cram", "../up/up/y.txt", "../abs/deep/../../y.txt", "../outl/secret.cram", "../outl/../src/y.txt",
		"../self", "l", ".", "deep/", "//" + src[1:] + "/y.txt"} {
		f.Add(s)
	}
	link, twin := filepath.Join(src, "sub", "l"), filepath.Join(src, "sub", "twin")
	sub := &dirNode{m: m, rel: "sub", mpath: "sub"}
	f.Fuzz(func(t *testing.T, target string) {
		if target == "" || len(target) > 512 || strings.ContainsRune(target, 0) {
			return
		}
		os.Remove(link)
		if err := os.Symlink(target, link); err != nil {
			t.Skip(err)
		}
		rel, st, err := m.resolveSource("sub", "l")
		if err != nil {
			if !errors.Is(err, iofs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
				t.Fatalf("target %q: %v, want a not-exist error", target, err)
			}
			return
		}
		if rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
			t.Fatalf("target %q resolves outside the source: %q", target, rel)
		}
		kernel, err := filepath.EvalSymlinks(link)
		if err != nil || kernel != filepath.Join(src, filepath.FromSlash(rel)) {
			t.Fatalf("target %q resolves to %q, the kernel's resolution to %q (%v)", target, rel, kernel, err)
		}
		fi, err := root.Lstat(rel)
		if err != nil || fi.Mode()&os.ModeSymlink != 0 || fi.Sys().(*syscall.Stat_t).Ino != st.Ino {
			t.Fatalf("target %q: resolved %q is not the file stat'ed (%v)", target, rel, err)
		}
		// Shown, the link's text in the mount leads, in the source too,
		// where the link leads.
		e, err := m.child(sub, "l")
		if err != nil {
			return
		}
		if e.kind != kindLink || e.dest.rel != rel || path.IsAbs(e.text) {
			t.Fatalf("target %q: shown as %+v, want a relative link to %q", target, e, rel)
		}
		os.Remove(twin)
		must(t, os.Symlink(e.text, twin))
		if got, err := filepath.EvalSymlinks(twin); err != nil || got != kernel {
			t.Fatalf("target %q: shown as %q, which leads to %q (%v), not %q", target, e.text, got, err, kernel)
		}
	})
}
