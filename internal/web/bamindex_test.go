package web

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
)

// TestReg2Bins checks the bins of a few regions against SAMv1 §5.3's
// reg2bins (BAI: min_shift 14, depth 5).
func TestReg2Bins(t *testing.T) {
	if got := reg2bins(0, 1, 14, 5); !slices.Equal(got, []uint32{0, 1, 9, 73, 585, 4681}) {
		t.Errorf("reg2bins(0,1) = %v", got)
	}
	got := reg2bins(16384, 32768, 14, 5) // exactly the second 16 kb window
	if !slices.Equal(got, []uint32{0, 1, 9, 73, 585, 4682}) {
		t.Errorf("reg2bins(16384,32768) = %v", got)
	}
	if n := len(reg2bins(0, 1<<29, 14, 5)); n != 1+8+64+512+4096+32768 {
		t.Errorf("reg2bins of the whole range: %d bins", n)
	}
}

// bai builds a BAI of one reference with the chunks by bin and a linear
// index.
func bai(bins map[uint32][]chunk, linear []uint64) []byte {
	var b bytes.Buffer
	w := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("BAI\x01")
	w(uint32(1))
	w(uint32(len(bins)))
	for _, bin := range slices.Sorted(func(yield func(uint32) bool) {
		for k := range bins {
			if !yield(k) {
				return
			}
		}
	}) {
		w(bin)
		w(uint32(len(bins[bin])))
		for _, c := range bins[bin] {
			w(c.beg)
			w(c.end)
		}
	}
	w(uint32(len(linear)))
	for _, o := range linear {
		w(o)
	}
	return b.Bytes()
}

// TestIndexQuery: the chunks of the bins overlapping a region, without
// those ending before the linear index's offset, merged.
func TestIndexQuery(t *testing.T) {
	idx := bai(map[uint32][]chunk{
		4681:  {{100 << 16, 200 << 16}},
		4682:  {{200 << 16, 300<<16 | 5}},
		4700:  {{900 << 16, 950 << 16}},
		37450: {{1, 2}, {3, 4}}, // the pseudo-bin: metadata, never a chunk
	}, []uint64{100 << 16, 200 << 16})
	got, err := indexQuery(idx, 0, 16384, 20000)
	if err != nil {
		t.Fatal(err)
	}
	if want := []chunk{{200 << 16, 300<<16 | 5}}; !slices.Equal(got, want) {
		t.Errorf("indexQuery second window: %v, want %v", got, want)
	}
	got, _ = indexQuery(idx, 0, 0, 20000)
	if want := []chunk{{100 << 16, 300<<16 | 5}}; !slices.Equal(got, want) {
		t.Errorf("indexQuery first two windows: %v, want %v (merged)", got, want)
	}
	if got, _ := indexQuery(idx, 1, 0, 10); got != nil {
		t.Errorf("a reference the index lacks: %v", got)
	}
	all, _ := allChunks(idx)
	if want := []chunk{{100 << 16, 300<<16 | 5}, {900 << 16, 950 << 16}}; !slices.Equal(all, want) {
		t.Errorf("allChunks: %v, want %v", all, want)
	}
}

// TestParseBAMHeader: the references of a header, and an incomplete one
// asks for more.
func TestParseBAMHeader(t *testing.T) {
	var b bytes.Buffer
	w := func(v any) { binary.Write(&b, binary.LittleEndian, v) }
	b.WriteString("BAM\x01")
	w(uint32(3))
	b.WriteString("@H\n")
	w(uint32(2))
	for _, n := range []string{"chr1", "chrM"} {
		w(uint32(len(n) + 1))
		b.WriteString(n + "\x00")
		w(uint32(1000))
	}
	raw := b.Bytes()
	h, ok, err := parseBAMHeader(raw)
	if err != nil || !ok || !slices.Equal(h.refs, []string{"chr1", "chrM"}) {
		t.Errorf("parseBAMHeader: %v %v %v", h.refs, ok, err)
	}
	for n := range len(raw) {
		if _, ok, err := parseBAMHeader(raw[:n]); ok || err != nil {
			t.Errorf("parseBAMHeader of the first %d bytes: ok %v, %v; want more wanted", n, ok, err)
		}
	}
	if _, _, err := parseBAMHeader(append(slices.Clone(raw), 0)); err == nil {
		t.Error("a byte after the references: no error")
	}
}

// FuzzParseIndex: any bytes parse or fail cleanly, and a query returns
// sorted, disjoint chunks.
func FuzzParseIndex(f *testing.F) {
	f.Add(bai(map[uint32][]chunk{4681: {{100 << 16, 200 << 16}}, 0: {{5, 9}}}, []uint64{100 << 16}), int64(0), int64(100))
	f.Add([]byte("CSI\x01\x0e\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00"), int64(5), int64(1))
	f.Add([]byte("BAI\x01\xff\xff\xff\xff"), int64(0), int64(1<<29))
	f.Fuzz(func(t *testing.T, b []byte, beg, end int64) {
		if beg < 0 || beg > 1<<32 || end < 0 || end > 1<<32 {
			return
		}
		cs, err := indexQuery(b, 0, beg, end)
		if err != nil {
			return
		}
		for i := 1; i < len(cs); i++ {
			if cs[i].beg <= cs[i-1].end {
				t.Fatalf("chunks not sorted and merged: %v", cs)
			}
		}
		if _, err := allChunks(b); err != nil {
			t.Fatalf("indexQuery parsed what allChunks refuses: %v", err)
		}
	})
}

// FuzzParseBAMHeader: any bytes parse, ask for more, or fail cleanly.
func FuzzParseBAMHeader(f *testing.F) {
	f.Add([]byte("BAM\x01\x00\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00a\x00\x10\x00\x00\x00"))
	f.Add([]byte("BAM\x01\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, ok, err := parseBAMHeader(b)
		if ok && err != nil || !ok && len(h.refs) > 0 {
			t.Fatalf("ok %v, err %v, %d refs", ok, err, len(h.refs))
		}
	})
}
