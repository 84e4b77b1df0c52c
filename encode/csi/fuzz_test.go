package csi

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/encode/bai"
	"github.com/cramfs/cramfs/internal/bgzftest"
)

// synthRecords turns fuzz bytes into coordinate-sorted records with
// chained virtual offsets, 4 bytes a record: reference step and position
// shift, position step, span, flags and record size. Positions reach
// 2^(14+3*depth) for the deepest schemes.
func synthRecords(data []byte, nRef int, maxPos int64) ([]record, uint64) {
	var recs []record
	tid := int32(0)
	pos := int64(0)
	coff, uoff := uint64(0), uint64(0)
	for i := 0; i+4 <= len(data) && len(recs) < 5000; i += 4 {
		a, b, c, d := data[i], data[i+1], data[i+2], data[i+3]
		if a&0x80 != 0 {
			tid++
			pos = 0
		}
		pos += int64(b) << (a & 0x3f % 36)
		pos = min(pos, maxPos-1)
		span := int64(c) << (d & 0xf)
		size := 32 + uint64(d)*40
		if uoff+size > 0xff00 {
			coff += 1000 + uint64(c)*50
			uoff = 0
		}
		vbeg := coff<<16 | uoff
		uoff += size
		r := record{tid: tid, beg: pos, end: min(pos+max(span, 1), maxPos), unmapped: a&0x40 != 0, vbeg: vbeg, vend: coff<<16 | uoff}
		if tid >= int32(nRef) {
			r.tid, r.beg, r.end, r.unmapped = -1, -1, 0, true
		}
		recs = append(recs, r)
	}
	return recs, coff<<16 | uoff
}

// FuzzRoundTrip builds a CSI from synthetic sorted records, parses it back
// and checks that it describes them: header, pseudo-bin offsets and
// counts, n_no_coor, every record reachable through its bin ancestry, and
// each bin's loffset at or before the records in it.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0x80, 4, 5, 6, 0x41, 200, 255, 15}, int64(1_000_000_000))
	f.Add([]byte{0x1f, 0xff, 0xff, 0xff, 0x9f, 0xff, 0xff, 0xff, 0x80, 0, 0, 0, 0x80, 0, 0, 0}, int64(200_000_000))
	f.Add([]byte{0x23, 0xff, 0xff, 0xff, 0x23, 0xff, 0x10, 0x0f}, int64(1)<<40)
	f.Add([]byte{5, 5, 5, 5, 6, 6, 6, 6}, int64(1000))
	f.Fuzz(func(t *testing.T, data []byte, maxLen int64) {
		const nRef = 3
		b := NewBuilder(nRef, maxLen)
		depth := Depth(maxLen)
		if depth > bai.MaxDepth {
			if err := b.Add(0, 0, 1, false, 0, 10); !errors.Is(err, ErrInvalid) {
				t.Fatalf("depth %d: Add gave %v, want ErrInvalid", depth, err)
			}
			return
		}
		recs, final := synthRecords(data, nRef, int64(1)<<(MinShift+3*depth))
		for _, r := range recs {
			if err := b.Add(r.tid, r.beg, r.end, r.unmapped, r.vbeg, r.vend); err != nil {
				t.Fatalf("Add %+v: %v", r, err)
			}
		}
		out, err := b.Finish(final)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := bgzftest.DecompressAll(out)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := parseCSI(raw)
		if err != nil {
			t.Fatal(err)
		}
		if idx.minShift != MinShift || idx.depth != depth || len(idx.refs) != nRef {
			t.Fatalf("header min_shift %d depth %d n_ref %d", idx.minShift, idx.depth, len(idx.refs))
		}
		meta := bai.BinLimit(depth) + 1
		type stat struct {
			first          uint64
			mapped, unmapd uint64
			n              int
		}
		stats := make([]stat, nRef)
		var noCoor uint64
		for i, r := range recs {
			if r.tid < 0 {
				noCoor++
				continue
			}
			s := &stats[r.tid]
			if s.n == 0 {
				s.first = r.vbeg
			}
			s.n++
			if r.unmapped {
				s.unmapd++
			} else {
				s.mapped++
			}
			if !covered(idx.refs[r.tid], r, depth) {
				t.Fatalf("record %d %+v not covered by any chunk of its bins", i, r)
			}
		}
		if idx.noCoor != noCoor {
			t.Fatalf("n_no_coor %d, want %d", idx.noCoor, noCoor)
		}
		for tid, s := range stats {
			ref := idx.refs[tid]
			if s.n == 0 {
				if len(ref.bins) != 0 {
					t.Fatalf("reference %d has no records but %d bins", tid, len(ref.bins))
				}
				continue
			}
			var metaBin *parsedBin
			for i := range ref.bins {
				pb := &ref.bins[i]
				if pb.bin == meta {
					metaBin = pb
					continue
				}
				if pb.bin >= meta {
					t.Fatalf("reference %d: bin %d beyond the pseudo-bin %d", tid, pb.bin, meta)
				}
				if pb.loff > pb.chunks[0].Beg {
					t.Fatalf("reference %d bin %d: loffset %#x after its first chunk %#x", tid, pb.bin, pb.loff, pb.chunks[0].Beg)
				}
			}
			if metaBin == nil || len(metaBin.chunks) != 2 || metaBin.loff != 0 {
				t.Fatalf("reference %d: pseudo-bin %+v", tid, metaBin)
			}
			if metaBin.chunks[0].Beg != s.first || metaBin.chunks[1] != (bai.Chunk{Beg: s.mapped, End: s.unmapd}) {
				t.Fatalf("reference %d: pseudo-bin %+v, want start %#x counts %d/%d", tid, metaBin.chunks, s.first, s.mapped, s.unmapd)
			}
		}
	})
}

func TestDepth(t *testing.T) {
	tests := []struct {
		maxLen int64
		want   int
	}{
		{-5, 0}, {0, 0}, {16128, 0}, {16129, 1}, {1<<17 - 256, 1}, {1<<17 - 255, 2},
		{1<<29 - 256, 5}, {1<<29 - 255, 6}, {1_000_000_000, 6}, {1<<31 - 1, 6},
		{1<<32 - 256, 6}, {1<<32 - 255, 7}, {1<<41 - 256, 9}, {1<<41 - 255, 10}, {1 << 62, 10},
	}
	for _, tc := range tests {
		if got := Depth(tc.maxLen); got != tc.want {
			t.Errorf("Depth(%d) = %d, want %d", tc.maxLen, got, tc.want)
		}
	}
}

func TestAddErrors(t *testing.T) {
	type add struct {
		tid      int32
		beg, end int64
	}
	tests := []struct {
		name   string
		maxLen int64
		adds   []add
		want   error
	}{
		{"unsorted", 1e6, []add{{0, 100, 110}, {0, 50, 60}}, ErrUnsorted},
		{"reference revisited", 1e6, []add{{0, 1, 2}, {1, 1, 2}, {0, 5, 6}}, ErrUnsorted},
		{"placed after unplaced", 1e6, []add{{-1, -1, 0}, {0, 1, 2}}, ErrUnsorted},
		{"refID out of range", 1e6, []add{{3, 1, 2}}, ErrInvalid},
		{"refID below -1", 1e6, []add{{-2, 1, 2}}, ErrInvalid},
		{"end before begin", 1e6, []add{{0, 10, 5}}, ErrInvalid},
		{"beyond depth 2", 1e6, []add{{0, 1 << 20, 1<<20 + 1}}, ErrInvalid},
		{"reference too long", 1 << 45, []add{{0, 1, 2}}, ErrInvalid},
		{"beyond 2^29 at depth 6", 1e9, []add{{0, 1 << 29, 1<<29 + 1}, {0, 1 << 32, 1 << 32}}, nil},
		{"ok", 1e6, []add{{0, 1, 2}, {0, 1, 2}, {2, 0, 0}, {-1, -1, 0}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder(3, tc.maxLen)
			var err error
			off := uint64(1 << 16)
			for _, a := range tc.adds {
				if err = b.Add(a.tid, a.beg, a.end, false, off, off+100); err != nil {
					break
				}
				off += 100
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if err != nil {
				if _, ferr := b.Finish(off); ferr == nil {
					t.Fatal("Finish succeeded after a failed Add")
				}
				return
			}
			out, err := b.Finish(off)
			if err != nil {
				t.Fatal(err)
			}
			raw, err := bgzftest.DecompressAll(out)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := parseCSI(raw); err != nil {
				t.Fatal(err)
			}
			if _, err := b.Finish(off); !errors.Is(err, ErrInvalid) {
				t.Fatalf("second Finish: %v", err)
			}
			if err := b.Add(0, 1, 2, false, off, off+1); !errors.Is(err, ErrInvalid) {
				t.Fatalf("Add after Finish: %v", err)
			}
		})
	}
}

// BenchmarkAdd feeds the records of a samtools-sorted 1 Gbp BAM (20000
// reads) to a Builder and finishes it (uncompressed); bytes are the
// BAM's uncompressed size.
func BenchmarkAdd(b *testing.B) {
	st := samtools(b)
	dir := b.TempDir()
	sam := filepath.Join(dir, "bench.sam")
	if err := writeSAM(sam, []int64{1_000_000_000, 5_000, 3_000_000}, 20000, 1<<29+5_000_000, 1); err != nil {
		b.Fatal(err)
	}
	bamPath := filepath.Join(dir, "bench.bam")
	run(b, st, "sort", "--no-PG", "-o", bamPath, sam)
	file, err := os.ReadFile(bamPath)
	if err != nil {
		b.Fatal(err)
	}
	f := readBAM(b, file)
	raw, err := bgzftest.DecompressAll(file)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		bl := NewBuilder(f.nRef, f.maxLen)
		for _, r := range f.recs {
			if err := bl.Add(r.tid, r.beg, r.end, r.unmapped, r.vbeg, r.vend); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := bl.FinishRaw(f.final); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMergeErrors: Merge refuses what Add refuses outright (a builder
// whose reference is too long for any depth, a finished one) and a
// fragment of another scheme; a fragment whose records go back is
// refused whole, Add then giving the error.
func TestMergeErrors(t *testing.T) {
	frag := func(s bai.Scheme, begs ...int64) *bai.Fragment {
		f := bai.NewFragment(s)
		for i, beg := range begs {
			if err := f.Add(0, beg, beg+10, false, uint64(i*100), uint64(i*100+100)); err != nil {
				t.Fatal(err)
			}
		}
		return f
	}
	long := NewBuilder(3, 1<<45)
	if s := long.Scheme(); s != (bai.Scheme{}) {
		t.Fatalf("failed builder's scheme %+v, want the zero Scheme", s)
	}
	if ok, err := long.Merge(frag(bai.Scheme{NRef: 3, MinShift: MinShift, Depth: 2}, 5), 0); ok || !errors.Is(err, ErrInvalid) {
		t.Fatalf("Merge into a builder for a too long reference: %v, %v", ok, err)
	}

	b := NewBuilder(3, 1e6)
	if ok, err := b.Merge(frag(bai.Scheme{NRef: 3, MinShift: MinShift, Depth: b.Depth() + 1}, 5), 0); ok || !errors.Is(err, ErrInvalid) {
		t.Fatalf("Merge of another scheme's fragment: %v, %v", ok, err)
	}
	b = NewBuilder(3, 1e6)
	if ok, err := b.Merge(frag(b.Scheme(), 500, 600), 1<<16); !ok || err != nil {
		t.Fatalf("Merge of sorted records: %v, %v", ok, err)
	}
	if ok, err := b.Merge(frag(b.Scheme(), 100), 2<<16); ok || err != nil {
		t.Fatalf("Merge of records going back: %v, %v; want a refusal", ok, err)
	}
	if err := b.Add(0, 100, 110, false, 2<<16, 2<<16|100); !errors.Is(err, ErrUnsorted) {
		t.Fatalf("Add of the refused fragment's record: %v", err)
	}
	b = NewBuilder(3, 1e6)
	if _, err := b.Finish(1 << 16); err != nil {
		t.Fatal(err)
	}
	if ok, err := b.Merge(frag(b.Scheme(), 5), 0); ok || !errors.Is(err, ErrInvalid) {
		t.Fatalf("Merge after Finish: %v, %v", ok, err)
	}
}
