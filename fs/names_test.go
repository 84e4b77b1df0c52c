package fs

import (
	"bytes"
	"context"
	"errors"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// namesFS builds a mountFS on a new source tree made by build (called
// with the source's real path and a directory outside it) without a
// kernel mount, and returns it with its root directory node.
func namesFS(t *testing.T, op Opener, build func(src, out string)) (*mountFS, *dirNode) {
	t.Helper()
	top, err := filepath.EvalSymlinks(t.TempDir())
	must(t, err)
	src, out := filepath.Join(top, "src"), filepath.Join(top, "out")
	must(t, os.Mkdir(src, 0o755))
	must(t, os.Mkdir(out, 0o755))
	build(src, out)
	root, err := os.OpenRoot(src)
	must(t, err)
	t.Cleanup(func() { root.Close() })
	m := newMountFS(root, src, op, discardLogger())
	return m, &dirNode{m: m, rel: ".", mpath: "."}
}

func listNames(t *testing.T, d *dirNode) []string {
	t.Helper()
	ds, errno := d.Readdir(context.Background())
	if errno != 0 {
		t.Fatalf("Readdir: %v", errno)
	}
	var names []string
	for ds.HasNext() {
		e, errno := ds.Next()
		if errno != 0 {
			t.Fatal(errno)
		}
		names = append(names, e.Name)
	}
	return names
}

// TestResolveLinks resolves links through the root only: absolute links
// whose name lies below the source are followed, links out of it (by
// name, by "..", through a linked directory) are hidden.
func TestResolveLinks(t *testing.T) {
	m, d := namesFS(t, &fakeOpener{}, func(src, out string) {
		writeFile(t, filepath.Join(src, "sub", "a.cram"), "a")
		writeFile(t, filepath.Join(out, "o.cram"), "outside")
		for link, target := range map[string]string{
			"abs-in.cram":  filepath.Join(src, "sub", "a.cram"),
			"abs-out.cram": filepath.Join(out, "o.cram"),
			"up.cram":      "../out/o.cram",
			"deep.cram":    "sub/../sub/./a.cram",
			"outdir":       out,
			"via.cram":     "outdir/o.cram",
			"subl":         "sub",
			"chain.cram":   "subl/a.cram",
			"loop1":        "loop2",
			"loop2":        "loop1",
		} {
			must(t, os.Symlink(target, filepath.Join(src, link)))
		}
	})
	for name, want := range map[string]string{
		"abs-in.bam": "sub/a.cram", "deep.bam": "sub/a.cram", "chain.bam": "sub/a.cram", "subl": "sub",
	} {
		e, err := m.child(d, name)
		if err != nil || e.kind != kindLink || e.dest.rel != want {
			t.Errorf("child %s = %+v, %v; want a link to %q", name, e, err, want)
		}
	}
	for _, name := range []string{"abs-out.bam", "up.bam", "outdir", "via.bam", "loop1", "abs-out.cram"} {
		if e, err := m.child(d, name); !errors.Is(err, iofs.ErrNotExist) {
			t.Errorf("child %s = %+v, %v; want hidden", name, e, err)
		}
	}
}

// TestIndexNameMapping checks the names of a CRAM's index: x.bam.bai and
// x.bai, listed only once the Opener knows them; x.bam.bai belongs to
// x.cram before x.bam.cram; a real x.bai wins; names over NAME_MAX are
// neither listed nor resolved.
func TestIndexNameMapping(t *testing.T) {
	long := strings.Repeat("n", 250)
	op := &fakeOpener{}
	m, d := namesFS(t, op, func(src, out string) {
		writeFile(t, filepath.Join(src, "x.cram"), "x")
		writeFile(t, filepath.Join(src, "x.bam.cram"), "x.bam")
		writeFile(t, filepath.Join(src, long+".cram"), "long")
		writeFile(t, filepath.Join(src, "x.bai"), "a real x.bai, shown")
	})
	if got, want := listNames(t, d), []string{long + ".bam", "x.bai", "x.bam", "x.bam.bam"}; !slices.Equal(got, want) {
		t.Errorf("listing before opening %q, want %q", got, want)
	}
	for _, name := range []string{"x.bam", "x.bam.bam", long + ".bam"} {
		e, err := m.child(d, name)
		must(t, err)
		if _, _, err := m.openBAM(context.Background(), e); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{long + ".bai", long + ".bam", "x.bai", "x.bam", "x.bam.bai", "x.bam.bam", "x.bam.bam.bai"}
	if got := listNames(t, d); !slices.Equal(got, want) {
		t.Errorf("listing after opening %q, want %q", got, want)
	}
	for name, cram := range map[string]string{"x.bam.bai": "x.cram", "x.bam.bam.bai": "x.bam.cram", long + ".bai": long + ".cram"} {
		e, err := m.child(d, name)
		if err != nil || e.kind != kindBAI || e.rel != cram {
			t.Errorf("child %s = %+v, %v; want the index of %s", name, e, err, cram)
		}
	}
	if e, err := m.child(d, "x.bai"); err != nil || e.kind != kindFile || e.rel != "x.bai" {
		t.Errorf("child x.bai = %+v, %v; want the real x.bai", e, err)
	}
	if e, err := m.child(d, long+".bam.bai"); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("child of a %d-byte name = %+v, %v; want hidden", len(long)+8, e, err)
	}
}

// TestRenamedSourceDirectory renames a directory of the source while a
// file in it is held open through the mount: the files under the new name
// must be served (they used to get the held node, which read the old path
// and failed with ENOENT for as long as the kernel kept it).
func TestRenamedSourceDirectory(t *testing.T) {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "a", "x.cram"), "x")
	writeFile(t, filepath.Join(src, "a", "note.txt"), "note")
	mnt := mountT(t, src, &fakeOpener{}, Options{EntryTimeout: time.Millisecond, AttrTimeout: time.Millisecond})
	var held []*os.File
	for _, n := range []string{"a/x.bam", "a/x.bam.bai", "a/note.txt"} {
		f, err := os.Open(filepath.Join(mnt, n))
		must(t, err)
		held = append(held, f)
	}
	defer func() {
		for _, f := range held {
			f.Close()
		}
	}()
	must(t, os.Rename(filepath.Join(src, "a"), filepath.Join(src, "b")))
	want := expectedBAM(t, filepath.Join(src, "b", "x.cram"))
	for n, content := range map[string][]byte{"b/x.bam": want.data, "b/x.bam.bai": want.index, "b/note.txt": []byte("note")} {
		eventually(t, n+" is served", func() bool {
			got, err := os.ReadFile(filepath.Join(mnt, n))
			return err == nil && bytes.Equal(got, content)
		})
	}
}

// TestStatfs answers statfs with the numbers of the source's filesystem,
// read through the source root.
func TestStatfs(t *testing.T) {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "x.cram"), "x")
	mnt := mountT(t, src, &fakeOpener{}, Options{})
	var got, want syscall.Statfs_t
	must(t, syscall.Statfs(mnt, &got))
	must(t, syscall.Statfs(src, &want))
	if got.Bsize != want.Bsize || got.Blocks != want.Blocks || got.Files != want.Files {
		t.Errorf("statfs of the mount: bsize %d blocks %d files %d; of the source: %d %d %d",
			got.Bsize, got.Blocks, got.Files, want.Bsize, want.Blocks, want.Files)
	}
}
