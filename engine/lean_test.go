package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/engine/layout"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/cramtest"
)

// TestStoredBlocksAreTheCompressors: the blocks of a level-0 segment
// computed from its length alone are those the stored compressor cuts,
// both ways it is driven (AppendBlocks, and Begin/Cut/End as records are
// encoded), at every size around the block boundaries.
func TestStoredBlocksAreTheCompressors(t *testing.T) {
	c, err := bgzf.NewCompressor(0)
	if err != nil {
		t.Fatal(err)
	}
	const m = bgzf.MaxBlockData
	for _, n := range []int{0, 1, 36, m - 1, m, m + 1, 2*m - 1, 2 * m, 2*m + 1, 5*m + 4321} {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(i * 7)
		}
		whole, err := c.AppendBlocks(nil, data)
		if err != nil {
			t.Fatal(err)
		}
		// Records of 300 bytes appended one by one, cut after each.
		buf := c.Begin(nil)
		for off := 0; off < n; off += 300 {
			buf = append(buf, data[off:min(n, off+300)]...)
			if buf, err = c.Cut(buf); err != nil {
				t.Fatal(err)
			}
		}
		streamed, raw, err := c.End(buf)
		if err != nil || raw != int64(n) || !bytes.Equal(streamed, whole) {
			t.Fatalf("n=%d: streamed blocks (%d bytes, %d raw, %v) differ from AppendBlocks' (%d bytes)", n, len(streamed), raw, err, len(whole))
		}
		got, err := walkBlocks(nil, whole)
		if err != nil {
			t.Fatal(err)
		}
		want := storedBlocks(nil, int64(n))
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("n=%d: compressor's blocks %v, computed %v", n, got, want)
		}
		if int64(len(whole)) != bgzf.StoredSize(int64(n)) {
			t.Errorf("n=%d: %d bytes of blocks, StoredSize %d", n, len(whole), bgzf.StoredSize(int64(n)))
		}
	}
}

// scanningSource is a fakeSource that measures its containers
// (LayoutScanner) by framing the records it would build.
type scanningSource struct{ *fakeSource }

func (s *scanningSource) ScanLayout(ctx context.Context, i int, each func(source.RecordLayout) error) (int64, source.Sum, error) {
	return measureBuilt(ctx, s, i, each)
}

// measureBuilt implements ScanLayout for src by building container i and
// framing its records.
func measureBuilt(ctx context.Context, src source.Source, i int, each func(source.RecordLayout) error) (int64, source.Sum, error) {
	raw, err := src.AppendContainer(ctx, i, nil)
	if err != nil {
		return 0, source.Sum{}, err
	}
	recs, err := walkRecords(nil, raw)
	if err != nil {
		return 0, source.Sum{}, err
	}
	for _, r := range recs {
		if err := each(source.RecordLayout{Len: r.uEnd - r.uStart, RefID: r.refID, Beg: r.beg, End: r.end, Unmapped: r.unmapped}); err != nil {
			return 0, source.Sum{}, err
		}
	}
	return int64(len(raw)), source.Sum{}, nil
}

// comparableIndex returns the index file f as it would be without any
// digest of a data segment (every one not yet known) nor content sum.
func comparableIndex(f *layout.File) []byte {
	g := *f
	g.Layout = f.Layout.Clone()
	g.Learned = nil
	for i := range g.Layout.Segments {
		g.Layout.Segments[i].Digest, g.Layout.Segments[i].NoDigest = 0, true
		g.Layout.Segments[i].Sum, g.Layout.Segments[i].HasSum = 0, false
	}
	return layout.Marshal(&g)
}

// checkSums checks that every segment of the lean index file idx of the
// CRAM at path has the content sum of its container's data in the file.
func checkSums(t *testing.T, idx *layout.File, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cram.Open(path, cram.Path(path), cram.Options{AllowMissingEOF: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i, h := range c.File().Containers {
		s := idx.Layout.Segments[i]
		if want := crc32.Checksum(b[h.DataOffset():h.End()], castagnoli); !s.HasSum || s.Sum != want {
			t.Fatalf("segment %d: content sum %08x (recorded: %v), the container's data %08x", i, s.Sum, s.HasSum, want)
		}
	}
}

// scanBoth opens src with a measuring (lean) Manager and with one that
// builds every container (Options.Digests), each with its own cache
// directory, and returns both VirtualBAMs and the index files written.
func scanBoth(t *testing.T, open func() source.Source) (lean, full *VirtualBAM, leanIdx, fullIdx *layout.File) {
	t.Helper()
	var vs [2]*VirtualBAM
	var idxs [2]*layout.File
	for k, digests := range []bool{false, true} {
		m, _ := newTestManager(t, Options{Level: Stored, Digests: digests, Readahead: -1})
		src := open()
		vs[k] = openT(t, m, src)
		b, err := os.ReadFile(indexPathFor(t, m, src))
		if err != nil {
			t.Fatalf("digests=%v: index not written: %v", digests, err)
		}
		if idxs[k], err = layout.Parse(b); err != nil {
			t.Fatal(err)
		}
	}
	return vs[0], vs[1], idxs[0], idxs[1]
}

// checkLeanEqualsFull compares the lean and full index files of one file
// byte for byte, digests aside, and checks that every data segment of the
// lean one is measured and of the full one built.
func checkLeanEqualsFull(t *testing.T, leanIdx, fullIdx *layout.File) {
	t.Helper()
	if a, b := comparableIndex(leanIdx), comparableIndex(fullIdx); !bytes.Equal(a, b) {
		t.Fatalf("lean index file (%d bytes) differs from the full scan's (%d bytes), digests aside", len(a), len(b))
	}
	for i, s := range leanIdx.Layout.Segments {
		if !s.NoDigest || fullIdx.Layout.Segments[i].NoDigest {
			t.Fatalf("segment %d: lean NoDigest=%v, full NoDigest=%v", i, s.NoDigest, fullIdx.Layout.Segments[i].NoDigest)
		}
	}
}

// TestLeanScanEqualsFullScan: for every fake fixture, the layout and
// index of a level-0 scan that only measures records equal those of the
// scan that builds and compresses them, byte for byte of the index file
// but the digests; the BAM served is the same and the digests learned
// from the first builds are the full scan's.
func TestLeanScanEqualsFullScan(t *testing.T) {
	for _, name := range []string{"synth", "small", "unsorted"} {
		t.Run(name, func(t *testing.T) {
			fx := fixture(t, name)
			lean, full, leanIdx, fullIdx := scanBoth(t, func() source.Source {
				return &scanningSource{newFakeSource(fx, "")}
			})
			checkLeanEqualsFull(t, leanIdx, fullIdx)
			checkLearned(t, lean, full)
		})
	}
}

// checkLearned reads lean and full whole, compares their bytes, and
// checks that lean learned the digests the full scan computed.
func checkLearned(t *testing.T, lean, full *VirtualBAM) {
	t.Helper()
	if a, b := readAll(t, lean, 1<<16), readAll(t, full, 1<<16); !bytes.Equal(a, b) {
		t.Fatalf("lean layout serves %d bytes, full %d, not the same", len(a), len(b))
	}
	ls, err := lean.state(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range full.Layout().Segments {
		if got := ls.want(i); s.CompLen > 0 && (got.NoDigest || got.Digest != s.Digest) {
			t.Fatalf("segment %d: learned %+v, full scan's digest %08x", i, got, s.Digest)
		}
	}
}

// TestLeanScanEqualsFullScanCRAM is TestLeanScanEqualsFullScan for every
// CRAM of testdata and of the corpus that samtools decodes, with MD/NM
// generation on and off (the index file of the corpus' is compared, the
// testdata's are also read whole).
func TestLeanScanEqualsFullScanCRAM(t *testing.T) {
	sets := []struct {
		dir, manifest string
		read          bool
	}{
		{filepath.Join(corpus.Root(), "testdata"), "cram/manifest.tsv", true},
		{corpus.Dir(t), "cram_manifest.tsv", false},
	}
	for _, set := range sets {
		for _, e := range corpus.CRAMManifest(t, filepath.Join(set.dir, set.manifest)) {
			if e.RC != "0" || strings.Contains(e.Path, "truncated") {
				continue
			}
			t.Run(e.Path, func(t *testing.T) {
				var fastas []string
				if e.Ref != "" {
					fastas = []string{filepath.Join(set.dir, e.Ref)}
				}
				store, err := reference.Open(fastas, reference.Options{NoEnv: true})
				if err != nil {
					t.Fatal(err)
				}
				defer store.Close()
				for _, noMD := range []bool{false, true} {
					lean, full, leanIdx, fullIdx := scanBoth(t, func() source.Source {
						c, err := cram.Open(filepath.Join(set.dir, e.Path), cram.Path(filepath.Join(set.dir, e.Path)), cram.Options{Reference: store, NoMD: noMD, AllowMissingEOF: true})
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { c.Close() })
						return c
					})
					checkLeanEqualsFull(t, leanIdx, fullIdx)
					checkSums(t, leanIdx, filepath.Join(set.dir, e.Path))
					if set.read {
						checkLearned(t, lean, full)
					}
				}
			})
		}
	}
}

// TestLeanIndexMatchesSamtools: the index of a measured level-0 layout is
// the one samtools index makes of the BAM served.
func TestLeanIndexMatchesSamtools(t *testing.T) {
	for _, name := range []string{"synth", "small"} {
		t.Run(name, func(t *testing.T) {
			src := &scanningSource{newFakeSource(fixture(t, name), "")}
			m, _ := newTestManager(t, Options{Level: Stored})
			v := openT(t, m, src)
			if s := v.Layout().Segments[0]; !s.NoDigest {
				t.Fatal("the layout was built, not measured")
			}
			path := filepath.Join(t.TempDir(), "v.bam")
			if err := os.WriteFile(path, readAll(t, v, 1<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			cramtest.Samtools(t, "index", path)
			want, err := os.ReadFile(path + ".bai")
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Index(); !bytes.Equal(got, want) {
				t.Fatalf(".bai of the measured layout differs from samtools index: %d vs %d bytes", len(got), len(want))
			}
		})
	}
}

// learnedOnDisk returns the digests the index file at path holds of its
// data segments, and how many segments have records.
func learnedOnDisk(t *testing.T, path string) (map[int]uint32, int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := layout.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range f.Layout.Segments {
		if s.CompLen > 0 {
			n++
		}
	}
	return digestsOf(f), n
}

// TestLearnedDigestsCheckLaterBuilds: the digests of a measured layout,
// learned at each segment's first build, check every build after it (no
// cache: each read builds again), so that a container decoding to other
// bytes of the same length is refused; they are persisted, and after a
// remount the file reads the same, checked against them.
func TestLearnedDigestsCheckLaterBuilds(t *testing.T) {
	fx := fixture(t, "synth")
	dir := t.TempDir()
	opts := Options{CacheDir: dir, Level: Stored, CacheSize: -1, Readahead: -1}
	src := &scanningSource{newFakeSource(fx, "")}
	m, _ := newTestManager(t, opts)
	v := openT(t, m, src)
	want := src.expected(t, 0)
	for round := range 2 {
		if got := readAll(t, v, 1<<16); !bytes.Equal(got, want) {
			t.Fatalf("read %d: %d bytes differ from the independent compression", round, len(got))
		}
	}
	m.Close() // waits for the index file to be written
	path := indexPathFor(t, m, src)
	learned, n := learnedOnDisk(t, path)
	if len(learned) != n {
		t.Fatalf("index file holds %d learned digests, want %d", len(learned), n)
	}

	// A remount loads the layout with its digests and serves the same bytes.
	m2, _ := newTestManager(t, opts)
	src2 := &scanningSource{newFakeSource(fx, "")}
	v2 := openT(t, m2, src2)
	if src2.total.Load() != 0 {
		t.Fatal("the remount scanned again")
	}
	if got := readAll(t, v2, 7919); !bytes.Equal(got, want) {
		t.Fatal("after the remount the file reads other bytes")
	}

	// The scan (decode 1) and the first build (decode 2) see the true
	// bytes, the build after it other ones of the same length.
	m3, _ := newTestManager(t, Options{Level: Stored, CacheSize: -1, Readahead: -1})
	src3 := &scanningSource{newFakeSource(fx, "")}
	src3.flipOn, src3.flipIdx = 3, 4
	v3 := openT(t, m3, src3)
	seg := v3.Layout().Segments[4]
	if _, err := v3.ReadAt(make([]byte, 64), seg.Offset); err != nil {
		t.Fatalf("first build: %v", err)
	}
	if _, err := v3.ReadAt(make([]byte, 64), seg.Offset); !errors.Is(err, ErrMismatch) {
		t.Fatalf("build after the first, of other bytes: %v, want ErrMismatch", err)
	}
	m2.checkInvariants(t, v2)
	m3.checkInvariants(t, v3)
}

// TestLearnedDigestsMerged: two Managers sharing a cache directory each
// learn the digests of the segments they read; the index file ends with
// all of them, the second writer merging the first's.
func TestLearnedDigestsMerged(t *testing.T) {
	fx := fixture(t, "synth")
	opts := Options{CacheDir: t.TempDir(), Level: Stored, Readahead: -1}
	m1, _ := newTestManager(t, opts)
	v1 := openT(t, m1, &scanningSource{newFakeSource(fx, "")})
	m2, _ := newTestManager(t, opts)
	src := &scanningSource{newFakeSource(fx, "")}
	v2 := openT(t, m2, src)
	segs := v1.Layout().Segments
	half := len(segs) / 2
	read := func(v *VirtualBAM, from, to int) {
		for _, s := range segs[from:to] {
			if s.CompLen > 0 {
				if _, err := v.ReadAt(make([]byte, 1), s.Offset); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	read(v1, 0, half)
	m1.Close()
	read(v2, half, len(segs))
	m2.Close()
	learned, n := learnedOnDisk(t, indexPathFor(t, m2, src))
	if len(learned) != n {
		t.Fatalf("index file holds %d learned digests, want all %d", len(learned), n)
	}
	m1.checkInvariants(t, v1)
	m2.checkInvariants(t, v2)
}

// marshalFormat encodes f in the index format given, 6 (layout.Marshal) or
// an older one: format 5 has no content sum per segment, format 4 no kind
// of digest either (every digest built).
func marshalFormat(f *layout.File, format uint32) []byte {
	// The format's record lengths, as layout.Parse describes them: a segment
	// of format 6 is CompLen, RawLen (u64), digest (u32), digest kind and
	// sum kind (u8), sum (u32); format 5 has no sum, format 4 neither
	// kind.
	const (
		indexFixedHead = 8 + 4 + 4 // magic, format, depends length
		segRecordLen   = 8 + 8 + 4 + 1 + 1 + 4
	)
	keep := map[uint32]int{4: segRecordLen - 6, 5: segRecordLen - 5}[format]
	b := layout.Marshal(f)
	if format == layout.Format {
		return b
	}
	b = b[:len(b)-4]
	binary.LittleEndian.PutUint32(b[8:], format)
	// The segments follow the fixed part: keep the start of each record.
	at := indexFixedHead + len(f.Depends) + 5*8 + 2*32 + 4
	out := append([]byte(nil), b[:at]...)
	out = append(out, b[at:at+keep]...) // header segment
	at += segRecordLen
	out = append(out, b[at:at+8]...) // segment count
	at += 8
	for range f.Layout.Segments {
		out = append(out, b[at:at+keep]...)
		at += segRecordLen
	}
	out = append(out, b[at:]...)
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, crc32.MakeTable(crc32.Castagnoli)))
}

// TestLegacyIndexRead: an index file of format 4, as an earlier cramfs
// wrote it, is used without a scan and written again in the current
// format.
func TestLegacyIndexRead(t *testing.T) {
	fx := fixture(t, "synth")
	dir := t.TempDir()
	opts := Options{CacheDir: dir, Level: Stored, Readahead: -1, Digests: true}
	m, _ := newTestManager(t, opts)
	src := &scanningSource{newFakeSource(fx, "")}
	v := openT(t, m, src)
	path := indexPathFor(t, m, src)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := layout.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(path)
	f.Depends = layout.DependsFormat(4, 0, "fake")
	old := m.dir.PathOf(layout.Key(f.ID, f.Depends))
	if err := os.WriteFile(old, marshalFormat(f, 4), 0o600); err != nil {
		t.Fatal(err)
	}
	m2, _ := newTestManager(t, Options{CacheDir: dir, Level: Stored, Readahead: -1})
	src2 := &scanningSource{newFakeSource(fx, "")}
	v2 := openT(t, m2, src2)
	if src2.total.Load() != 0 {
		t.Fatal("the format-4 index was not used")
	}
	if fmt.Sprint(v2.Layout()) != fmt.Sprint(v.Layout()) || !bytes.Equal(v2.Index(), v.Index()) {
		t.Fatal("the format-4 index gives another layout or index")
	}
	if !bytes.Equal(readAll(t, v2, 1<<16), src.expected(t, 0)) {
		t.Fatal("wrong bytes through the format-4 index")
	}
	b, err = os.ReadFile(path)
	if err != nil {
		t.Fatalf("not written again in the current format: %v", err)
	}
	if g, err := layout.Parse(b); err != nil || binary.LittleEndian.Uint32(b[8:]) != layout.Format || fmt.Sprint(g.Layout) != fmt.Sprint(f.Layout) {
		t.Fatalf("the current format's copy: %v", err)
	}
}

// TestFirstBuildOfChangedFileRefused: a measured segment's first build
// from a source.Source without content sums, checked against the layout's
// lengths only, is refused once the file is no longer the version scanned
// (here its ctime moved), rather than serving bytes that may be another
// version's.
func TestFirstBuildOfChangedFileRefused(t *testing.T) {
	fx := fixture(t, "synth")
	path := filepath.Join(t.TempDir(), "copy.bam")
	data, err := os.ReadFile(fx.path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, _ := newTestManager(t, Options{Level: Stored, CacheSize: -1, Readahead: -1})
	v := openT(t, m, &scanningSource{newFakeSource(fx, path)})
	segs := v.Layout().Segments
	if _, err := v.ReadAt(make([]byte, 64), segs[1].Offset); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o600); err != nil { // a new ctime
		t.Fatal(err)
	}
	if _, err := v.ReadAt(make([]byte, 64), segs[4].Offset); !errors.Is(err, source.ErrChanged) || !strings.Contains(err.Error(), "container 4") {
		t.Fatalf("first build after the file changed: %v, want source.ErrChanged naming the container", err)
	}
}

// TestDroppedIndexNotRestoredBySave: once a layout was found wrong and its
// index file removed, a save of learned digests by a state of that layout
// kept before (one that had left memory, its save late) writes nothing.
func TestDroppedIndexNotRestoredBySave(t *testing.T) {
	src := &scanningSource{newFakeSource(fixture(t, "synth"), "")}
	src.flipOn, src.flipIdx = 3, 4 // the scan and the first build true, the next other bytes
	m, _ := newTestManager(t, Options{Level: Stored, CacheSize: -1, Readahead: -1})
	v := openT(t, m, src)
	seg := v.Layout().Segments[4]
	if _, err := v.ReadAt(make([]byte, 64), seg.Offset); err != nil {
		t.Fatal(err)
	}
	old, err := v.state(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	path := indexPathFor(t, m, src)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(time.Millisecond) {
		if learned, _ := learnedOnDisk(t, path); len(learned) == 1 {
			break // the digest learned is saved
		}
		if time.Now().After(deadline) {
			t.Fatal("the digest learned was not saved")
		}
	}
	m.states.DropAll() // the state leaves memory; v reads it again
	if _, err := v.ReadAt(make([]byte, 64), seg.Offset); !errors.Is(err, ErrMismatch) {
		t.Fatalf("build of other bytes: %v, want ErrMismatch", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("index of the wrong layout still there: %v", err)
	}
	if err := old.writeLearnedIfCurrent(map[int]uint32{4: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a late save restored the index of the wrong layout: %v", err)
	}
	m.checkInvariants(t, v)
}

// TestLateDropKeepsNewerIndex: a VirtualBAM of a layout dropped and
// scanned again since finds its own layout wrong late (a build in flight
// when the first drop happened); the index file, now the newer layout's,
// stays, and the newer layout keeps serving without a scan.
func TestLateDropKeepsNewerIndex(t *testing.T) {
	fx := fixture(t, "synth")
	m, _ := newTestManager(t, Options{Level: Stored, Readahead: -1, Digests: true})
	src := newFakeSource(fx, "")
	v1 := openT(t, m, src)
	v2 := openT(t, m, src) // the same layout as v1
	m.dropLayout(v1)       // v1's build disagreed: layout and index file gone
	path := indexPathFor(t, m, src)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("index of the dropped layout still there: %v", err)
	}
	v3 := openT(t, m, src) // scans again, writes the newer layout's index
	if v3.tag == v2.tag {
		t.Fatal("the layout scanned again has the dropped one's tag")
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the newer layout's index was not written: %v", err)
	}
	m.dropLayout(v2) // v2's build, of the old layout, disagreed late
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("dropping an older layout removed the newer layout's index: %v", err)
	}
	if !v2.stale.Load() {
		t.Fatal("v2 not stale after its layout was dropped")
	}
	if got := readAll(t, v3, 1<<16); !bytes.Equal(got, src.expected(t, 0)) {
		t.Fatal("the newer layout reads other bytes")
	}
	scans := src.total.Load()
	m2, _ := newTestManager(t, Options{CacheDir: m.opts.CacheDir, Level: Stored, Readahead: -1})
	openT(t, m2, src)
	if src.total.Load() != scans {
		t.Fatal("a new mount scanned again: the newer index was lost")
	}
	m.checkInvariants(t, v1, v2, v3)
	m2.checkInvariants(t)
}

// TestLearnedDigestsSurviveKill: digests learned are written within about
// saveEvery, not only at the doublings or at Close, so that a mount killed
// (no Close: here a second Manager opens the cache directory while the
// first still runs) finds all of them but the last few seconds'.
func TestLearnedDigestsSurviveKill(t *testing.T) {
	fx := fixture(t, "synth")
	opts := Options{CacheDir: t.TempDir(), Level: Stored, Readahead: -1}
	m, _ := newTestManager(t, opts)
	src := &scanningSource{newFakeSource(fx, "")}
	v := openT(t, m, src)
	// Three segments: the doublings write the first two, the third waits.
	read := 0
	for _, s := range v.Layout().Segments {
		if s.CompLen > 0 && read < 3 {
			if _, err := v.ReadAt(make([]byte, 1), s.Offset); err != nil {
				t.Fatal(err)
			}
			read++
		}
	}
	path := indexPathFor(t, m, src)
	learnedIn := func() int {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := layout.Parse(b)
		if err != nil {
			t.Fatal(err)
		}
		return len(f.Learned)
	}
	const patience = 10 * saveEvery
	for deadline := time.Now().Add(patience); learnedIn() < read; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v the index file holds %d of the %d digests learned", patience, learnedIn(), read)
		}
	}
	m2, _ := newTestManager(t, opts)
	src2 := &scanningSource{newFakeSource(fx, "")}
	v2 := openT(t, m2, src2)
	if src2.total.Load() != 0 {
		t.Fatal("the second mount scanned again")
	}
	ls, err := v2.state(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ls.mu.Lock()
	known := ls.learn.known
	ls.mu.Unlock()
	if known != read {
		t.Fatalf("the second mount knows %d digests, want %d", known, read)
	}
	m.checkInvariants(t, v)
	m2.checkInvariants(t, v2)
}
