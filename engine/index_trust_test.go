package engine

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/encode/bai"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/engine/layout"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/hostile"
)

// forgeIndex rewrites the index file at path with an index that claims
// no records at all (every region query finds nothing), its checksum
// valid, and returns the forged BAI.
func forgeIndex(t *testing.T, path string, nRef int) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := layout.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := bai.NewBuilder(nRef).Finish(uint64(idx.Layout.EOFOffset()) << 16)
	if err != nil {
		t.Fatal(err)
	}
	idx.BAI = forged
	if err := os.WriteFile(path, layout.Marshal(idx), 0o644); err != nil {
		t.Fatal(err)
	}
	return forged
}

// TestIndexTrustModel: an index whose BAI was replaced (checksum
// recomputed) is used only if the cache directory and the file are owned
// by this user or root and writable by nobody else; otherwise it is
// refused with a log line naming the file and why, and the layout and BAI
// are rebuilt. With SharedCache, a group's files are accepted, never a
// world-writable one.
func TestIndexTrustModel(t *testing.T) {
	fx := fixture(t, "small")
	nRef, _, err := parseRefs(fx.header)
	if err != nil {
		t.Fatal(err)
	}
	genuine := openT(t, mustManager(t, Options{}), newFakeSource(fx, "")).Index()
	const other = 4242 // a uid that is neither this user nor root
	for _, tc := range []struct {
		name    string
		shared  bool
		prepare func(t *testing.T, dir, path string) // after the forgery
		trusted bool
		why     string // in the refusal's log line
	}{
		{"own file", false, func(*testing.T, string, string) {}, true, ""},
		{"owned by another user", false, func(t *testing.T, _, p string) { chownT(t, p, other) }, false, "owned by uid 4242"},
		{"group-writable file", false, func(t *testing.T, _, p string) { chmodT(t, p, 0o664) }, false, "writable by group or others"},
		{"world-writable file", false, func(t *testing.T, _, p string) { chmodT(t, p, 0o646) }, false, "writable by group or others"},
		{"group-writable directory", false, func(t *testing.T, d, _ string) { chmodT(t, d, 0o775) }, false, "cache directory"},
		{"directory of another user", false, func(t *testing.T, d, _ string) { chownT(t, d, other) }, false, "cache directory"},
		{"symbolic link", false, func(t *testing.T, _, p string) {
			target := filepath.Join(t.TempDir(), "elsewhere.idx")
			if err := os.Rename(p, target); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		}, false, "symbolic link"},
		{"shared: group file of another user", true, func(t *testing.T, d, p string) {
			chownT(t, p, other)
			chmodT(t, p, 0o664)
			chmodT(t, d, 0o2775)
		}, true, ""},
		{"shared: world-writable file", true, func(t *testing.T, _, p string) { chmodT(t, p, 0o666) }, false, "writable by others"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "cache")
			opts := Options{CacheDir: dir, SharedCache: tc.shared}
			src := newFakeSource(fx, "")
			m := mustManager(t, opts)
			openT(t, m, src)
			path := indexPathFor(t, m, src)
			forged := forgeIndex(t, path, nRef)
			tc.prepare(t, dir, path)

			s := newFakeSource(fx, "")
			m2, lc := newTestManager(t, opts)
			v := openT(t, m2, s)
			rescanned := s.total.Load() > 0
			if tc.trusted {
				// The documented limit: what a trusted writer stores is
				// served as it is.
				if rescanned || !bytes.Equal(v.Index(), forged) {
					t.Fatalf("trusted index not used (rescanned %v)", rescanned)
				}
				return
			}
			if !rescanned || !bytes.Equal(v.Index(), genuine) {
				t.Fatalf("untrusted index used: rescanned %v, BAI genuine %v", rescanned, bytes.Equal(v.Index(), genuine))
			}
			logs := lc.text()
			if !strings.Contains(logs, "refused") || !strings.Contains(logs, tc.why) {
				t.Errorf("refusal not logged with %q:\n%s", tc.why, logs)
			}
			if !strings.Contains(logs, filepath.Base(path)) && !strings.Contains(logs, dir) {
				t.Errorf("refusal does not name the index or directory:\n%s", logs)
			}
		})
	}
}

func mustManager(t *testing.T, opts Options) *Manager {
	m, _ := newTestManager(t, opts)
	return m
}

func chownT(t *testing.T, p string, uid int) {
	t.Helper()
	if err := os.Lchown(p, uid, -1); err != nil {
		t.Skipf("cannot give %s to uid %d (%v): needs root", p, uid, err)
	}
}

func chmodT(t *testing.T, p string, mode os.FileMode) {
	t.Helper()
	if mode&0o2000 != 0 {
		mode = mode&0o777 | os.ModeSetgid
	}
	if err := os.Chmod(p, mode); err != nil {
		t.Fatal(err)
	}
}

// openCRAMWith opens a CRAM with the reference FASTA ref and opts.
func openCRAMWith(t *testing.T, path, ref string, opts cram.Options) *cram.CRAM {
	t.Helper()
	store, err := reference.Open([]string{ref}, reference.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	opts.Reference = store
	c, err := cram.Open(path, cram.Path(path), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func readAllErr(v *VirtualBAM) ([]byte, error) {
	b := make([]byte, v.Size())
	_, err := v.ReadAt(b, 0)
	return b, err
}

// TestIndexKeyHasNoMD: a layout persisted for the BAM with MD/NM tags is
// not used for the BAM without them (`cramfs index`, then `mount
// --no-md` on the same cache); each variant gets its own.
func TestIndexKeyHasNoMD(t *testing.T) {
	path := filepath.Join(corpus.Root(), "testdata", "cram", "ce_1000.3.0.cram")
	ref := filepath.Join(corpus.Root(), "testdata", "ref", "ce.fa")
	dir := t.TempDir()
	opts := Options{CacheDir: dir, Level: Stored, CacheSize: -1, Readahead: -1}
	mWith, mNo := mustManager(t, opts), mustManager(t, opts)
	withMD := openT(t, mWith, openCRAMWith(t, path, ref, cram.Options{}))
	noMD := openT(t, mNo, openCRAMWith(t, path, ref, cram.Options{NoMD: true}))
	got, err := readAllErr(noMD)
	if err != nil {
		t.Fatalf("--no-md after an index with MD: %v (size %d, with MD %d)", err, noMD.Size(), withMD.Size())
	}
	fresh := openT(t, mustManager(t, Options{Level: Stored}), openCRAMWith(t, path, ref, cram.Options{NoMD: true}))
	want, err := readAllErr(fresh)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("--no-md BAM differs from one made with an empty cache (%v)", err)
	}
	if withMD.Size() == noMD.Size() {
		t.Fatal("the fixture's BAM does not depend on MD generation")
	}
	// Both layouts are persisted, under different keys, once the saves of
	// the digests learned (each a temporary file renamed) are done.
	mWith.Close()
	mNo.Close()
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("cache holds %d files, want one per variant: %v", len(ents), ents)
	}
}

// TestIdentityIsOfTheFileRead: the CRAM is replaced by rename after it
// was opened (while `cramfs index` reads its container table). The layout
// is stored under the identity of the file read, so a later open of the
// new file scans it instead of loading the old file's layout.
func TestIdentityIsOfTheFileRead(t *testing.T) {
	ref := filepath.Join(corpus.Root(), "testdata", "ref", "ce.fa")
	old, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata", "cram", "ce_1000.3.0-multislice.cram"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "x.cram")
	// The same header and containers, other records in the last one.
	changed := decodableFlip(t, old, p, ref)
	if err := os.WriteFile(p, old, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts := Options{CacheDir: dir, Level: Stored, CacheSize: -1, Readahead: -1}
	c := openCRAMWith(t, p, ref, cram.Options{})
	if err := os.WriteFile(p+".new", changed, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	first := openT(t, mustManager(t, opts), c)
	if _, err := readAllErr(first); err != nil {
		t.Fatalf("the old file, still open: %v", err)
	}
	v := openT(t, mustManager(t, opts), openCRAMWith(t, p, ref, cram.Options{}))
	got, err := readAllErr(v)
	if err != nil {
		t.Fatalf("the new file got the old file's layout: %v", err)
	}
	want, err := readAllErr(openT(t, mustManager(t, Options{Level: Stored}), openCRAMWith(t, p, ref, cram.Options{})))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the new file's BAM differs from one made with an empty cache (%v)", err)
	}
}

// decodableFlip returns orig with one bit flipped near its end (CRCs
// fixed) such that the file still decodes, to other records; it uses path
// as scratch.
func decodableFlip(t *testing.T, orig []byte, path, ref string) []byte {
	t.Helper()
	want := convertBytes(t, orig, path, ref)
	for off := len(orig) - 100; off > len(orig)-4000 && off > 0; off-- {
		b, err := hostile.FlipAt(orig, off, 0x01, true)
		if err != nil {
			t.Fatal(err)
		}
		if got := convertBytes(t, b, path, ref); got != nil && !bytes.Equal(got, want) {
			return b
		}
	}
	t.Fatal("no one-bit change near the end of the file decodes")
	return nil
}

// convertBytes writes data, a CRAM, to path and returns its BAM, or nil
// when it does not decode.
func convertBytes(t *testing.T, data []byte, path, ref string) []byte {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	c := openCRAMWith(t, path, ref, cram.Options{})
	var out bytes.Buffer
	if err := Convert(context.Background(), c, &out, ConvertOptions{Threads: 1, Level: Stored}); err != nil {
		return nil
	}
	return out.Bytes()
}

// TestFileChangedDuringScan: the file is rewritten in place while its
// layout is scanned. Its identity after the scan differs from the one
// before: the open fails with source.ErrChanged and nothing is persisted.
func TestFileChangedDuringScan(t *testing.T) {
	fx := fixture(t, "synth")
	p := filepath.Join(t.TempDir(), "x.bam")
	data, err := os.ReadFile(fx.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	src := newFakeSource(fx, p)
	src.duringScan = func() {
		data[len(data)/2] ^= 1
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Error(err)
		}
	}
	m := mustManager(t, Options{})
	_, err = m.Open(context.Background(), src)
	if !errors.Is(err, source.ErrChanged) {
		t.Fatalf("Open of a file changed during its scan: %v, want source.ErrChanged", err)
	}
	if ents, _ := os.ReadDir(m.opts.CacheDir); len(ents) != 0 {
		t.Fatalf("%d files persisted for a file that changed during its scan", len(ents))
	}
}

// TestDigestMismatchDropsLayout: once a rebuilt segment disagrees with
// the layout, the open VirtualBAM keeps failing that segment, but the
// layout is forgotten in memory and on disk: the next Open, in the same
// Manager, scans again and serves the file as it now is.
func TestDigestMismatchDropsLayout(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	src.flipOn, src.flipIdx = 2, 4 // the scan sees the true bytes, every later decode other ones
	m, _ := newTestManager(t, Options{Readahead: -1})
	v := openT(t, m, src)
	path := indexPathFor(t, m, src)
	seg := v.Layout().Segments[4]
	if _, err := v.ReadAt(make([]byte, 64), seg.Offset); !errors.Is(err, ErrMismatch) {
		t.Fatalf("read of the changed segment: %v, want ErrMismatch", err)
	}
	if !v.Stale() {
		t.Error("VirtualBAM not marked stale")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the wrong layout's index is still on disk (%v)", err)
	}
	before := src.decodes[4].Load()
	v2 := openT(t, m, src)
	if src.decodes[4].Load() == before {
		t.Fatal("the second Open did not scan again")
	}
	got := readAll(t, v2, 1<<16) // fails the test on a read error
	if bytes.Equal(got, src.expected(t, 1)) {
		t.Fatal("the rescanned BAM serves the old bytes")
	}
	if _, err := v.ReadAt(make([]byte, 64), seg.Offset); !errors.Is(err, ErrMismatch) {
		t.Fatalf("the stale VirtualBAM: %v, want ErrMismatch still", err)
	}
	// The new layout is persisted: another Manager loads it and serves.
	m3, _ := newTestManager(t, Options{CacheDir: m.opts.CacheDir, Readahead: -1})
	v3 := openT(t, m3, src)
	if !bytes.Equal(readAll(t, v3, 1<<16), got) {
		t.Fatal("the persisted new layout serves other bytes")
	}
	m.checkInvariants(t, v, v2)
	m3.checkInvariants(t, v3)
}

// TestDroppedLayoutNotReloadedAsAnother: two VirtualBAMs of one file
// version share its layout in the states.FileStates. Once a rebuilt segment of
// one disagrees with it, the other, reading the layout again, finds the
// file scanned to another layout: it fails with ErrMismatch and is Stale
// rather than serving the new layout's segments at its own offsets under
// the old layout's cache keys; a new Open serves the new bytes.
func TestDroppedLayoutNotReloadedAsAnother(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	src.flipOn, src.flipIdx = 2, 4 // the scan sees the true bytes, every later decode other ones
	m, _ := newTestManager(t, Options{Readahead: -1})
	v := openT(t, m, src)
	v2 := openT(t, m, src) // the same layout, loaded from memory
	seg := v.Layout().Segments[4]
	if _, err := v.ReadAt(make([]byte, 64), seg.Offset); !errors.Is(err, ErrMismatch) {
		t.Fatalf("read of the changed segment: %v, want ErrMismatch", err)
	}
	// v keeps the layout it served: the segments before still read.
	if _, err := v.ReadAt(make([]byte, 64), 0); err != nil {
		t.Fatalf("stale VirtualBAM, its header: %v", err)
	}
	if _, err := v2.ReadAt(make([]byte, 64), v2.Size()-64); !errors.Is(err, ErrMismatch) {
		t.Fatalf("the other VirtualBAM of the dropped layout: %v, want ErrMismatch", err)
	}
	if !v2.Stale() {
		t.Error("the other VirtualBAM is not Stale")
	}
	v3 := openT(t, m, src)
	got := readAll(t, v3, 1<<16)
	if bytes.Equal(got, src.expected(t, 1)) {
		t.Fatal("the new open serves the old bytes")
	}
	m.checkInvariants(t, v, v2, v3)
}

// TestStaleTempsRemoved: temporary index files left by a killed writer
// (older than staleTempAge) are removed when a Manager starts; a recent
// one, possibly a live writer's, and index files stay.
func TestStaleTempsRemoved(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	plant := func(name string, mtime time.Time) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := plant(".tmp-0123.idx-4711-98765", old)
	live := plant(".tmp-4567.idx-4712-12345", time.Now())
	index := plant("89ab.idx", old)
	_, lc := newTestManager(t, Options{CacheDir: dir})
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale temporary file not removed (%v)", err)
	}
	for _, p := range []string{live, index} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", filepath.Base(p), err)
		}
	}
	if lc.count(slog.LevelInfo) != 1 {
		t.Errorf("removal not logged once:\n%s", lc.text())
	}
}
