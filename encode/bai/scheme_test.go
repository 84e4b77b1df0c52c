package bai

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// encodeFromIndex writes a BAI (SAMv1 §5.2) from an Index of the BAI
// scheme (min_shift 14, depth 5): bins in All order, the dense linear
// index from Linear.At. It lets the tests check that the shared Index
// reproduces Builder exactly.
func encodeFromIndex(x *Index) []byte {
	le := binary.LittleEndian
	out := []byte{'B', 'A', 'I', 1}
	out = le.AppendUint32(out, uint32(x.NRef()))
	for i := range x.NRef() {
		if bins := x.Bins(i); bins == nil {
			out = le.AppendUint32(out, 0)
		} else {
			out = le.AppendUint32(out, uint32(bins.Len()))
			for bin, chunks := range bins.All() {
				out = le.AppendUint32(out, bin)
				out = le.AppendUint32(out, uint32(len(chunks)))
				for _, c := range chunks {
					out = le.AppendUint64(out, c.Beg)
					out = le.AppendUint64(out, c.End)
				}
			}
		}
		lin := x.Linear(i)
		out = le.AppendUint32(out, uint32(lin.Len()))
		for w := range lin.Len() {
			off, _ := lin.At(w)
			out = le.AppendUint64(out, off)
		}
	}
	return le.AppendUint64(out, x.NoCoor())
}

// TestIndexMatchesBuilder feeds the same records to Builder and to the
// shared Index at depth 5 and requires the same BAI, on samtools-made BAMs
// and synthetic record streams.
func TestIndexMatchesBuilder(t *testing.T) {
	st := samtools(t)
	dir := t.TempDir()
	sam := filepath.Join(dir, "synth.sam")
	if err := synthSAM(sam, 20000, 3); err != nil {
		t.Fatal(err)
	}
	bamPath := filepath.Join(dir, "synth.bam")
	run(t, st, "sort", "--no-PG", "-o", bamPath, sam)
	file, err := os.ReadFile(bamPath)
	if err != nil {
		t.Fatal(err)
	}
	nRef, recs, final := walkBAM(t, file)
	type stream struct {
		name  string
		recs  []bamRecord
		final uint64
	}
	streams := []stream{{"samtools", recs, final}}
	for i, seed := range [][]byte{
		{0, 1, 2, 3, 0x80, 4, 5, 6, 0x41, 200, 255, 15},
		{0x1f, 0xff, 0xff, 0xff, 0x9f, 0xff, 0xff, 0xff, 0x80, 0, 0, 0, 0x80, 0, 0, 0},
	} {
		r, f := synthRecords(seed, 3)
		streams = append(streams, stream{name: string(rune('a' + i)), recs: r, final: f})
	}
	for _, s := range streams {
		t.Run(s.name, func(t *testing.T) {
			n := nRef
			if s.name != "samtools" {
				n = 3
			}
			want := buildFrom(t, n, s.recs, s.final)
			x, err := NewIndex(n, 14, 5)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range s.recs {
				if err := x.Push(r.tid, r.beg, r.end, r.flags&4 != 0, r.vbeg, r.vend); err != nil {
					t.Fatal(err)
				}
			}
			if err := x.Finish(s.final); err != nil {
				t.Fatal(err)
			}
			if got := encodeFromIndex(x); string(got) != string(want) {
				t.Fatalf("Index gives a different BAI: first difference at byte %d of %d", firstDiff(got, want), len(want))
			}
		})
	}
}

func buildFrom(tb testing.TB, nRef int, recs []bamRecord, final uint64) []byte {
	tb.Helper()
	b := NewBuilder(nRef)
	for _, r := range recs {
		if err := b.Add(r.tid, r.beg, r.end, r.flags&4 != 0, r.vbeg, r.vend); err != nil {
			tb.Fatal(err)
		}
	}
	out, err := b.Finish(final)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestReg2BinGeneral(t *testing.T) {
	for _, r := range [][2]int64{{-1, 0}, {0, 1}, {0, 16384}, {0, 16385}, {16384, 16385}, {0, 1 << 29}, {1<<29 - 1, 1 << 29}, {123456, 9876543}, {5 << 20, 5<<20 + 100}} {
		if got, want := Reg2Bin(r[0], r[1], 14, 5), reg2bin(r[0], r[1]); got != want {
			t.Errorf("Reg2Bin(%d, %d, 14, 5) = %d, reg2bin gives %d", r[0], r[1], got, want)
		}
	}
	tests := []struct {
		beg, end        int64
		minShift, depth int
		want            uint32
	}{
		{0, 1, 14, 0, 0}, {100000, 100001, 14, 0, 0},
		{1 << 29, 1<<29 + 1, 14, 6, BinFirst(6) + 1<<15},
		{1 << 29, 1<<29 + 1<<20, 14, 6, BinFirst(4) + 512},
		{0, 1 << 32, 14, 6, 0},
	}
	for _, tc := range tests {
		if got := Reg2Bin(tc.beg, tc.end, tc.minShift, tc.depth); got != tc.want {
			t.Errorf("Reg2Bin(%d, %d, %d, %d) = %d, want %d", tc.beg, tc.end, tc.minShift, tc.depth, got, tc.want)
		}
	}
	for _, bin := range []uint32{0, 1, 8, 9, 72, 73, 584, 585, 4680, 4681, 37448, 37449} {
		l := BinLevel(bin)
		if bin < BinFirst(l) || bin >= BinFirst(l+1) {
			t.Errorf("BinLevel(%d) = %d, outside [%d, %d)", bin, l, BinFirst(l), BinFirst(l+1))
		}
	}
}

func TestLinear(t *testing.T) {
	var li Linear
	li.set(2, 3, 100)
	li.set(3, 3, 200) // already set
	li.set(3, 6, 300) // sets 4..6
	li.set(9, 9, 400) // 7, 8 back-filled from 9
	want := []uint64{100, 100, 100, 100, 300, 300, 300, 400, 400, 400}
	if li.Len() != int64(len(want)) {
		t.Fatalf("Len %d, want %d", li.Len(), len(want))
	}
	for w, x := range want {
		if got, ok := li.At(int64(w)); !ok || got != x {
			t.Errorf("At(%d) = %d, %v; want %d", w, got, ok, x)
		}
	}
	if _, ok := li.At(10); ok {
		t.Error("At(10) beyond Len reported present")
	}
	if _, ok := li.At(-1); ok {
		t.Error("At(-1) reported present")
	}
}

// FuzzIndexMatchesBuilder requires the shared Index at depth 5 to give
// Builder's BAI for any synthetic sorted record stream.
func FuzzIndexMatchesBuilder(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0x80, 4, 5, 6, 0x41, 200, 255, 15})
	f.Add([]byte{0x1f, 0xff, 0xff, 0xff, 0x9f, 0xff, 0xff, 0xff, 0x80, 0, 0, 0, 0x80, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		recs, final := synthRecords(data, 3)
		want := buildFrom(t, 3, recs, final)
		x, err := NewIndex(3, 14, 5)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if err := x.Push(r.tid, r.beg, r.end, r.flags&4 != 0, r.vbeg, r.vend); err != nil {
				t.Fatal(err)
			}
		}
		if err := x.Finish(final); err != nil {
			t.Fatal(err)
		}
		if got := encodeFromIndex(x); string(got) != string(want) {
			t.Fatalf("Index gives a different BAI: first difference at byte %d of %d", firstDiff(got, want), len(want))
		}
	})
}
