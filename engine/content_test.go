//go:build linux

package engine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/engine/layout"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/engine/states"
	"github.com/cramfs/cramfs/internal/cramtest"
	"github.com/cramfs/cramfs/internal/hostile"
)

// rawCRAM writes at path, with samtools, a CRAM of 3,000 synthetic reads
// in containers of 500, its blocks stored raw and without reference, so
// that read names are plain text in the file, and returns its bytes.
func rawCRAM(t *testing.T, path string) []byte {
	t.Helper()
	sam := path + ".sam"
	synthSAM(t, sam, 3000, 11)
	cramtest.Samtools(t, "view", "-C", "--no-PG", "--output-fmt-option", "no_ref=1", "--output-fmt-option", "seqs_per_slice=500",
		"--output-fmt-option", "level=0", "-o", path, sam)
	os.Remove(sam)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// flipped returns b with the first byte of the first occurrence of s
// XORed with 1, its CRCs fixed: a file of the same size that decodes to
// records of the same lengths but other bytes.
func flipped(t *testing.T, b []byte, s string) []byte {
	t.Helper()
	off := bytes.Index(b, []byte(s))
	if off < 0 {
		t.Fatalf("%q not in the file", s)
	}
	out, err := hostile.FlipAt(b, off, 0x01, true)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// contentFixture is a CRAM of several containers in a source directory,
// with another CRAM beside it (to evict its descriptor) and the BAM the
// unchanged file gives.
type contentFixture struct {
	dir, path string
	orig      []byte
	want      []byte // the virtual BAM of orig, at level 0
	root      *os.Root
}

func newContentFixture(t *testing.T) *contentFixture {
	t.Helper()
	f := &contentFixture{dir: t.TempDir()}
	f.path = filepath.Join(f.dir, "x.cram")
	f.orig = rawCRAM(t, f.path)
	cramtest.CopyCRAM(t, "ce_1000.3.0-noref.cram", filepath.Join(f.dir, "other.cram"))
	f.root = cramtest.OpenRoot(t, f.dir)
	c, err := cram.Open(f.path, cram.Path(f.path), cram.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.NumContainers() < 5 {
		t.Fatalf("%d containers, want several", c.NumContainers())
	}
	m, _ := newTestManager(t, Options{Level: Stored, Readahead: -1})
	f.want = readAll(t, openT(t, m, c), 1<<16)
	return f
}

// open opens the fixture's CRAM, with a states.FileStates of one descriptor,
// and its virtual BAM with m; the first segment is read.
func (f *contentFixture) open(t *testing.T, m *Manager) (*VirtualBAM, *cram.CRAM, cram.Options) {
	t.Helper()
	opt := cram.Options{States: states.NewFileStates(1<<30, 1)}
	c, err := cram.Open(f.path, atRoot(f.root, "x.cram"), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	v := openT(t, m, c)
	if _, err := v.ReadAt(make([]byte, 64<<10), 0); err != nil {
		t.Fatal(err)
	}
	return v, c, opt
}

// rewrite overwrites the fixture's CRAM in place with b and sets its
// mtime back: only its ctime tells.
func (f *contentFixture) rewrite(t *testing.T, b []byte) {
	t.Helper()
	fi, err := os.Stat(f.path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(f.path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(f.path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// TestFirstBuildAfterMetadataChange: once the first segment of a level-0
// layout is read, the CRAM's metadata changes (its ctime moves, its
// bytes stay): the first builds of the other segments, checked against
// the content sums the scan recorded, serve exactly the file's BAM; with
// the descriptor held, and with it closed (the file opened again, its
// ctime new), and with the layout read from the index file.
func TestFirstBuildAfterMetadataChange(t *testing.T) {
	f := newContentFixture(t)
	changes := []struct {
		name   string
		change func(p string) error
		reopen bool // the file can be opened again by its name after
	}{
		{"chmod", func(p string) error { return os.Chmod(p, 0o644) }, true},
		{"link", func(p string) error { return os.Link(p, p+".bak") }, true},
		{"remove", os.Remove, false},
		{"rename over", func(p string) error { return os.Rename(filepath.Join(filepath.Dir(p), "other.cram"), p) }, false},
	}
	for _, how := range []string{"held", "dropped", "indexed"} {
		for _, ch := range changes {
			if how == "dropped" && !ch.reopen {
				continue // ENOENT or another file: not the version served
			}
			t.Run(how+"/"+ch.name, func(t *testing.T) {
				f := newContentFixtureFrom(t, f)
				opts := Options{Level: Stored, Readahead: -1, CacheDir: t.TempDir()}
				if how == "indexed" {
					m0, _ := newTestManager(t, opts)
					f.open(t, m0) // scans; the index file is written
					m0.Close()
				}
				m, lc := newTestManager(t, opts)
				v, c, opt := f.open(t, m)
				if how == "indexed" && !strings.Contains(lc.text(), "layout index loaded") {
					t.Fatalf("the index file was not used:\n%s", lc.text())
				}
				held, err := os.Open(f.path) // the version read, to see its ctime after
				if err != nil {
					t.Fatal(err)
				}
				defer held.Close()
				before := ctimeOf(t, held)
				time.Sleep(10 * time.Millisecond) // a ctime the kernel tells apart
				if err := ch.change(f.path); err != nil {
					t.Fatal(err)
				}
				if ctimeOf(t, held) == before {
					t.Fatalf("%s left the ctime as it was: the test would prove nothing", ch.name)
				}
				if how == "dropped" {
					evictByOther(t, c, f.root, opt)
				}
				if got := readAll(t, v, 1<<16); !bytes.Equal(got, f.want) {
					t.Fatalf("%d bytes read, not the %d of the file's BAM", len(got), len(f.want))
				}
				m.checkInvariants(t, v)
			})
		}
	}
}

// ctimeOf is the ctime of the open file f, in nanoseconds.
func ctimeOf(t *testing.T, f *os.File) int64 {
	t.Helper()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ctim.Nano()
}

// newContentFixtureFrom copies f's CRAM into a directory of t's, so that
// each subtest changes its own.
func newContentFixtureFrom(t *testing.T, f *contentFixture) *contentFixture {
	t.Helper()
	g := &contentFixture{dir: t.TempDir(), orig: f.orig, want: f.want}
	g.path = filepath.Join(g.dir, "x.cram")
	if err := os.WriteFile(g.path, f.orig, 0o644); err != nil {
		t.Fatal(err)
	}
	cramtest.CopyCRAM(t, "ce_1000.3.0-noref.cram", filepath.Join(g.dir, "other.cram"))
	g.root = cramtest.OpenRoot(t, g.dir)
	return g
}

// TestFirstBuildOfRewrittenCRAMRefused: the CRAM is rewritten in place,
// one read renamed in a middle container (the same size, the records of
// the same lengths), and its mtime set back. The first build of that
// container's segment is refused (source.ErrChanged, naming it), whether the
// descriptor stayed open or the file was opened again; a header changed
// the same way is refused when the file is opened again.
func TestFirstBuildOfRewrittenCRAMRefused(t *testing.T) {
	f := newContentFixture(t)
	for _, tc := range []struct {
		name, what string
		drop       bool
		want       string // in the error
	}{
		{"records, descriptor held", "r001500", false, "content sum"},
		{"records, descriptor closed", "r001500", true, "content sum"},
		{"header, descriptor closed", "SM:s", true, "header or container table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newContentFixtureFrom(t, f)
			m, _ := newTestManager(t, Options{Level: Stored, Readahead: -1})
			v, c, opt := f.open(t, m)
			seg := -1
			off := int64(bytes.Index(f.orig, []byte("r001500")))
			for i, h := range c.File().Containers {
				if h.Offset <= off && off < h.End() {
					seg = i
				}
			}
			if seg < 2 {
				t.Fatalf("read r001500 in container %d: not a middle one", seg)
			}
			want := tc.want
			if !strings.HasPrefix(tc.name, "header") {
				want = fmt.Sprintf("container %d at offset %d: first build: the container's bytes have %s", seg, c.ContainerOffset(seg), tc.want)
			}
			time.Sleep(10 * time.Millisecond) // a ctime the kernel tells apart
			f.rewrite(t, flipped(t, f.orig, tc.what))
			if tc.drop {
				evictByOther(t, c, f.root, opt)
			}
			_, err := v.ReadAt(make([]byte, 64), v.Layout().Segments[seg].Offset)
			if !errors.Is(err, source.ErrChanged) || !strings.Contains(err.Error(), want) {
				t.Fatalf("first build of segment %d after the rewrite: %v, want source.ErrChanged saying %q", seg, err, want)
			}
			m.checkInvariants(t, v)
		})
	}
}

// TestLegacyIndexFirstBuildChecksIdentity: a layout read from an index
// file of format 5, which has no content sums, checks a measured
// segment's first build against the file's identity, its ctime included:
// after a chmod that build is refused (source.ErrChanged), as before format 6.
func TestLegacyIndexFirstBuildChecksIdentity(t *testing.T) {
	f, opts, path, idx := scannedIndex(t)
	os.Remove(path)
	idx.Learned = nil
	for i := range idx.Layout.Segments {
		if !idx.Layout.Segments[i].HasSum {
			t.Fatalf("segment %d of the scan has no content sum", i)
		}
		idx.Layout.Segments[i].Sum, idx.Layout.Segments[i].HasSum = 0, false
	}
	idx.Depends = layout.DependsFormat(5, 0, "md=1")
	if err := os.WriteFile((layout.Dir{Path: opts.CacheDir}).PathOf(layout.Key(idx.ID, idx.Depends)), marshalFormat(idx, 5), 0o600); err != nil {
		t.Fatal(err)
	}
	m, lc := newTestManager(t, opts)
	v, _, _ := f.open(t, m)
	if !strings.Contains(lc.text(), "earlier format") {
		t.Fatalf("the format-5 index was not used:\n%s", lc.text())
	}
	if err := os.Chmod(f.path, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := v.ReadAt(make([]byte, 64), v.Layout().Segments[3].Offset)
	if !errors.Is(err, source.ErrChanged) || !strings.Contains(err.Error(), "not the version scanned") {
		t.Fatalf("first build after a chmod with a format-5 layout: %v, want source.ErrChanged", err)
	}
}

// TestWrongContentSumDropsLayout: a trusted index file whose content sum
// of a measured segment is wrong, for a file whose identity has not
// changed, fails that segment's first build (ErrMismatch, never its
// bytes) and is dropped, index file included, so that the next open
// scans the file again.
func TestWrongContentSumDropsLayout(t *testing.T) {
	f, opts, path, idx := scannedIndex(t)
	idx.Layout.Segments[3].Sum ^= 1
	if err := os.WriteFile(path, layout.Marshal(idx), 0o600); err != nil {
		t.Fatal(err)
	}
	m, _ := newTestManager(t, opts)
	v, _, _ := f.open(t, m)
	_, err := v.ReadAt(make([]byte, 64), v.Layout().Segments[3].Offset)
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "content sum") {
		t.Fatalf("first build against a wrong content sum: %v, want ErrMismatch", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the index file of the wrong layout is still there: %v", err)
	}
	v2, _, _ := f.open(t, m)
	if got := readAll(t, v2, 1<<16); !bytes.Equal(got, f.want) {
		t.Fatalf("after the rescan: %d bytes, not the %d of the file's BAM", len(got), len(f.want))
	}
	m.checkInvariants(t, v, v2)
}

// scannedIndex scans a content fixture with a manager of its own and
// returns the fixture, the options, and the index file written and read
// back, for tests that alter it.
func scannedIndex(t *testing.T) (*contentFixture, Options, string, *layout.File) {
	t.Helper()
	f := newContentFixtureFrom(t, newContentFixture(t))
	opts := Options{Level: Stored, Readahead: -1, CacheDir: t.TempDir()}
	m0, _ := newTestManager(t, opts)
	v0, _, _ := f.open(t, m0)
	path := indexPathFor(t, m0, v0.src)
	m0.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := layout.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return f, opts, path, idx
}
