package bai

import (
	"bytes"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"testing"
)

// pieceShift is the virtual offset a piece of records starts at: the
// start of the block holding its lowest start, as a CRAM container's
// segment starts at a block.
func pieceShift(recs []bamRecord) uint64 {
	lo := ^uint64(0)
	for _, r := range recs {
		lo = min(lo, r.vbeg, r.vend)
	}
	return lo &^ 0xffff
}

// indexInPieces builds an index of the scheme (minShift, depth) from recs
// cut at cuts (ascending record numbers): each piece a Fragment of
// offsets relative to pieceShift, merged in order, its records pushed one
// by one when Merge refuses it, as the layout scan does.
func indexInPieces(nRef, minShift, depth int, recs []bamRecord, cuts []int, final uint64) ([]byte, error) {
	x, err := NewIndex(nRef, minShift, depth)
	if err != nil {
		return nil, err
	}
	bounds := append(append([]int{0}, cuts...), len(recs))
	for k := 1; k < len(bounds); k++ {
		piece := recs[bounds[k-1]:bounds[k]]
		shift := pieceShift(piece)
		f := NewFragment(x.Scheme())
		for _, r := range piece {
			if f.Add(r.tid, r.beg, r.end, r.flags&4 != 0, r.vbeg-shift, r.vend-shift) != nil {
				break
			}
		}
		ok, err := x.Merge(f, shift)
		if err != nil {
			return nil, err
		}
		if ok {
			continue
		}
		for _, r := range piece {
			if err := x.Push(r.tid, r.beg, r.end, r.flags&4 != 0, r.vbeg, r.vend); err != nil {
				return nil, err
			}
		}
	}
	if err := x.Finish(final); err != nil {
		return nil, err
	}
	return encode(x), nil
}

// indexByRecord builds the same index with Push record by record.
func indexByRecord(nRef, minShift, depth int, recs []bamRecord, final uint64) ([]byte, error) {
	x, err := NewIndex(nRef, minShift, depth)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if err := x.Push(r.tid, r.beg, r.end, r.flags&4 != 0, r.vbeg, r.vend); err != nil {
			return nil, err
		}
	}
	if err := x.Finish(final); err != nil {
		return nil, err
	}
	return encode(x), nil
}

// randomCuts cuts n records into pieces at random record numbers, some of
// them empty, about n/per records a piece.
func randomCuts(rng *rand.Rand, n, per int) []int {
	var cuts []int
	for range rng.IntN(2*n/max(per, 1) + 2) {
		cuts = append(cuts, rng.IntN(n+1))
	}
	slices.Sort(cuts)
	return cuts
}

// perturb breaks the order of recs in one of the ways Push refuses, or
// leaves it (kind 0).
func perturb(rng *rand.Rand, recs []bamRecord, kind int) {
	if len(recs) < 3 {
		return
	}
	i := 1 + rng.IntN(len(recs)-2)
	switch kind {
	case 1: // a position going backwards
		recs[i].beg, recs[i-1].beg = recs[i-1].beg, recs[i].beg
		recs[i].end = max(recs[i].end, recs[i].beg)
		recs[i-1].end = max(recs[i-1].end, recs[i-1].beg)
	case 2: // back to the first reference
		recs[i].tid = recs[0].tid
	case 3: // an unplaced read in the middle
		recs[i].tid, recs[i].beg, recs[i].end, recs[i].flags = -1, -1, 0, 4
	case 4: // an end before the begin
		recs[i].end = recs[i].beg - 1
	case 5: // a record starting before the previous one ended
		recs[i].vbeg = recs[i-1].vbeg
	}
}

// FuzzMergeEqualsPush: an index merged from fragments (random sorted
// record streams cut at random container boundaries, some streams made
// unsorted) equals the one pushed record by record, byte for byte, or
// fails with the same error, for the BAI scheme and deeper CSI ones.
func FuzzMergeEqualsPush(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0x80, 4, 5, 6, 0x41, 200, 255, 15}, uint8(0))
	f.Add([]byte{0x1f, 0xff, 0xff, 0xff, 0x9f, 0xff, 0xff, 0xff, 0x80, 0, 0, 0, 0x80, 0, 0, 0}, uint8(0x10))
	f.Add(bytes.Repeat([]byte{3, 40, 9, 2, 2, 1, 200, 7, 0x85, 3, 3, 3}, 50), uint8(0x21))
	f.Add(bytes.Repeat([]byte{0x0e, 0xff, 0x7f, 0x05, 0x40, 0x01, 0x10, 0x30}, 80), uint8(0x32))
	for kind := range uint8(6) { // each perturbation, in pieces of about 1 and 41 records
		f.Add(bytes.Repeat([]byte{3, 40, 9, 2, 2, 1, 200, 7, 0x85, 3, 3, 3}, 30), kind)
		f.Add(bytes.Repeat([]byte{3, 40, 9, 2, 2, 1, 200, 7, 0x85, 3, 3, 3}, 30), kind|0x40)
	}
	f.Fuzz(func(t *testing.T, data []byte, mode uint8) {
		const nRef = 3
		recs, final := synthRecords(data, nRef)
		h := fnv.New64a()
		h.Write(data)
		rng := rand.New(rand.NewPCG(h.Sum64(), uint64(mode)))
		perturb(rng, recs, int(mode&0xf)%6)
		depth := []int{5, 5, 6, 8}[mode>>4&3]
		cuts := randomCuts(rng, len(recs), 1+int(mode>>6)*40)
		want, wantErr := indexByRecord(nRef, minShift, depth, recs, final)
		got, gotErr := indexInPieces(nRef, minShift, depth, recs, cuts, final)
		if (wantErr != nil) != (gotErr != nil) || wantErr != nil && wantErr.Error() != gotErr.Error() {
			t.Fatalf("cut at %v: merged error %v, record by record %v", cuts, gotErr, wantErr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("cut at %v: merged index differs from the one pushed record by record at byte %d", cuts, firstDiff(got, want))
		}
	})
}

// TestMergeRefusesWithoutChange: a fragment that does not follow the
// index is refused with the index left as it was, so pushing its records
// gives Push's error.
func TestMergeRefusesWithoutChange(t *testing.T) {
	tests := []struct {
		name  string
		first []bamRecord // pushed
		frag  []bamRecord // merged
		want  error       // from pushing frag after a refusal
	}{
		{"position backwards", []bamRecord{{tid: 0, beg: 500, end: 600, vbeg: 1 << 16, vend: 1<<16 | 50}},
			[]bamRecord{{tid: 0, beg: 400, end: 450, vbeg: 2 << 16, vend: 2<<16 | 50}}, ErrUnsorted},
		{"reference revisited", []bamRecord{{tid: 0, beg: 5, end: 6, vbeg: 1 << 16, vend: 1<<16 | 50}, {tid: 1, beg: 5, end: 6, vbeg: 1<<16 | 50, vend: 1<<16 | 90}},
			[]bamRecord{{tid: 1, beg: 7, end: 8, vbeg: 2 << 16, vend: 2<<16 | 50}, {tid: 0, beg: 9, end: 10, vbeg: 2<<16 | 50, vend: 2<<16 | 90}}, ErrUnsorted},
		{"placed after unplaced", []bamRecord{{tid: -1, beg: -1, end: 0, flags: 4, vbeg: 1 << 16, vend: 1<<16 | 50}},
			[]bamRecord{{tid: 2, beg: 9, end: 10, vbeg: 2 << 16, vend: 2<<16 | 50}}, ErrUnsorted},
		{"overlapping offsets", []bamRecord{{tid: 0, beg: 5, end: 6, vbeg: 1 << 16, vend: 2<<16 | 10}},
			[]bamRecord{{tid: 0, beg: 7, end: 8, vbeg: 2 << 16, vend: 2<<16 | 50}}, ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x, err := NewIndex(3, minShift, nLevels)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.first {
				if err := x.Push(r.tid, r.beg, r.end, r.flags&4 != 0, r.vbeg, r.vend); err != nil {
					t.Fatal(err)
				}
			}
			f := NewFragment(x.Scheme())
			for _, r := range tc.frag {
				if err := f.Add(r.tid, r.beg, r.end, r.flags&4 != 0, r.vbeg-2<<16, r.vend-2<<16); err != nil {
					t.Fatalf("fragment refused its own sorted records: %v", err)
				}
			}
			if ok, err := x.Merge(f, 2<<16); ok || err != nil {
				t.Fatalf("Merge = %v, %v; want a refusal", ok, err)
			}
			for _, r := range tc.frag {
				if err = x.Push(r.tid, r.beg, r.end, r.flags&4 != 0, r.vbeg, r.vend); err != nil {
					break
				}
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("pushing the refused fragment's records: %v, want %v", err, tc.want)
			}
		})
	}
}

// TestMergeFolds: a long sorted run merges as a few bin runs, not one
// entry per record (what makes the merge cheaper than Push per record).
func TestMergeFolds(t *testing.T) {
	f := NewFragment(Scheme{NRef: 1, MinShift: minShift, Depth: nLevels})
	for i := range int64(10000) {
		beg := 1000 + i // 10,000 reads of 100 bases in 1 window and its neighbour
		if err := f.Add(0, beg, beg+100, false, uint64(i*300), uint64(i*300+300)); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.runs) > 4 || len(f.lin) > 2 {
		t.Fatalf("%d bin runs and %d linear entries for 10,000 reads in two windows", len(f.runs), len(f.lin))
	}
}
