package bai

import (
	"errors"
	"testing"
)

// synthRecords turns fuzz bytes into coordinate-sorted records with
// chained virtual offsets (4 bytes a record: reference step, position
// step, span, flags and record size).
func synthRecords(data []byte, nRef int) ([]bamRecord, uint64) {
	var recs []bamRecord
	tid := int32(0)
	pos := int64(0)
	coff, uoff := uint64(0), uint64(0)
	for i := 0; i+4 <= len(data) && len(recs) < 5000; i += 4 {
		a, b, c, d := data[i], data[i+1], data[i+2], data[i+3]
		if a&0x80 != 0 {
			tid++
			pos = 0
		}
		unplaced := tid >= int32(nRef)
		pos += int64(b) << (a & 0x1f % 20)
		if pos >= maxPos-int64(1<<20) {
			pos = maxPos - int64(1<<20)
		}
		span := int64(c) << (d & 0xf)
		size := 32 + uint64(d)*40
		if uoff+size > 0xff00 {
			coff += 1000 + uint64(c)*50
			uoff = 0
		}
		vbeg := coff<<16 | uoff
		uoff += size
		vend := coff<<16 | uoff
		// A span reaching past the BAI limit is an error Add must give
		// (the "beyond 2^29" case below); the records here stay within it.
		end := min(pos+max(span, 1), maxPos)
		r := bamRecord{tid: tid, beg: pos, end: end, flags: uint16(a&0x40) >> 4, vbeg: vbeg, vend: vend}
		if unplaced {
			r.tid, r.beg, r.end, r.flags = -1, -1, 0, 4
		}
		recs = append(recs, r)
	}
	return recs, coff<<16 | uoff
}

// FuzzRoundTrip builds an index from synthetic sorted records, parses it
// back and checks that it describes them: pseudo-bin counts and offsets,
// n_no_coor, every record findable through its bin ancestry, linear index
// lower bounds.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0x80, 4, 5, 6, 0x41, 200, 255, 15})
	f.Add([]byte{0x1f, 0xff, 0xff, 0xff, 0x9f, 0xff, 0xff, 0xff, 0x80, 0, 0, 0, 0x80, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		const nRef = 3
		recs, final := synthRecords(data, nRef)
		b := NewBuilder(nRef)
		for _, r := range recs {
			if err := b.Add(r.tid, r.beg, r.end, r.flags&4 != 0, r.vbeg, r.vend); err != nil {
				t.Fatalf("Add %+v: %v", r, err)
			}
		}
		out, err := b.Finish(final)
		if err != nil {
			t.Fatal(err)
		}
		idx, err := parseBAI(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(idx.refs) != nRef {
			t.Fatalf("n_ref %d, want %d", len(idx.refs), nRef)
		}
		var noCoor uint64
		type stat struct {
			first, last    uint64
			mapped, unmapd uint64
			n              int
		}
		stats := make([]stat, nRef)
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
			s.last = r.vend
			if i+1 == len(recs) {
				s.last = final
			}
			if r.flags&4 != 0 {
				s.unmapd++
			} else {
				s.mapped++
			}
			ref := idx.refs[r.tid]
			found := false
			for bin := reg2bin(r.beg, r.end); ; bin = binParent(bin) {
				for _, pb := range ref.bins {
					if pb.bin != bin {
						continue
					}
					for _, c := range pb.chunks {
						if c.Beg <= r.vbeg && r.vbeg < c.End {
							found = true
						}
					}
				}
				if found || bin == 0 {
					break
				}
			}
			if !found {
				t.Fatalf("record %d %+v not covered by any chunk of its bins", i, r)
			}
			if w := r.beg >> minShift; w >= int64(len(ref.linear)) || ref.linear[w] > r.vbeg {
				t.Fatalf("record %d %+v: linear index %v", i, r, ref.linear)
			}
		}
		if idx.noCoor != noCoor {
			t.Fatalf("n_no_coor %d, want %d", idx.noCoor, noCoor)
		}
		for tid, s := range stats {
			var meta *parsedBin
			for i := range idx.refs[tid].bins {
				if idx.refs[tid].bins[i].bin == metaBin {
					meta = &idx.refs[tid].bins[i]
				}
			}
			if s.n == 0 {
				if len(idx.refs[tid].bins) != 0 {
					t.Fatalf("reference %d has no records but %d bins", tid, len(idx.refs[tid].bins))
				}
				continue
			}
			if meta == nil || len(meta.chunks) != 2 {
				t.Fatalf("reference %d: pseudo-bin %+v", tid, meta)
			}
			if meta.chunks[0].Beg != s.first || meta.chunks[1] != (Chunk{s.mapped, s.unmapd}) {
				t.Fatalf("reference %d: pseudo-bin %+v, want start %#x counts %d/%d", tid, meta.chunks, s.first, s.mapped, s.unmapd)
			}
		}
	})
}

func TestAddErrors(t *testing.T) {
	type add struct {
		tid      int32
		beg, end int64
	}
	tests := []struct {
		name string
		adds []add
		want error
	}{
		{"unsorted", []add{{0, 100, 110}, {0, 50, 60}}, ErrUnsorted},
		{"reference revisited", []add{{0, 1, 2}, {1, 1, 2}, {0, 5, 6}}, ErrUnsorted},
		{"placed after unplaced", []add{{-1, -1, 0}, {0, 1, 2}}, ErrUnsorted},
		{"refID out of range", []add{{3, 1, 2}}, ErrInvalid},
		{"refID below -1", []add{{-2, 1, 2}}, ErrInvalid},
		{"end before begin", []add{{0, 10, 5}}, ErrInvalid},
		{"beyond 2^29", []add{{0, 1 << 29, 1<<29 + 1}}, ErrInvalid},
		{"ending beyond 2^29", []add{{0, 1<<29 - 100, 1<<29 + 1}}, ErrInvalid},
		{"ok", []add{{0, 1, 2}, {0, 1, 2}, {2, 0, 0}, {-1, -1, 0}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBuilder(3)
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
			if _, err := parseBAI(out); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestChainedOffsets(t *testing.T) {
	b := NewBuilder(1)
	if err := b.Add(0, 1, 2, false, 1<<16, 1<<16|50); err != nil {
		t.Fatal(err)
	}
	if err := b.Add(0, 3, 4, false, 1<<16|40, 1<<16|90); !errors.Is(err, ErrInvalid) {
		t.Fatalf("overlapping records: got %v, want ErrInvalid", err)
	}
}

// TestBlockChangeForms checks that a record ending a block gives the same
// index whether its end is given as the block's end or the next block's
// start.
func TestBlockChangeForms(t *testing.T) {
	build := func(firstEnd uint64) []byte {
		b := NewBuilder(1)
		if err := b.Add(0, 1, 2, false, 1<<16, firstEnd); err != nil {
			t.Fatal(err)
		}
		if err := b.Add(0, 20000, 20010, false, 500<<16, 500<<16|80); err != nil {
			t.Fatal(err)
		}
		out, err := b.Finish(900 << 16)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	a, c := build(1<<16|0xff00), build(500<<16)
	if string(a) != string(c) {
		t.Fatal("indexes differ")
	}
	idx, err := parseBAI(a)
	if err != nil {
		t.Fatal(err)
	}
	if got := idx.refs[0].linear; len(got) != 2 || got[0] != 1<<16 || got[1] != 500<<16 {
		t.Fatalf("linear index %#x", got)
	}
}

func TestReg2Bin(t *testing.T) {
	tests := []struct {
		beg, end int64
		want     uint32
	}{
		{-1, 0, 4680}, {0, 1, 4681}, {0, 16384, 4681}, {0, 16385, 585},
		{16384, 16385, 4682}, {0, 1 << 29, 0}, {(1 << 29) - 1, 1 << 29, 37448},
	}
	for _, tc := range tests {
		if got := reg2bin(tc.beg, tc.end); got != tc.want {
			t.Errorf("reg2bin(%d, %d) = %d, want %d", tc.beg, tc.end, got, tc.want)
		}
	}
}
