package bzip2

import (
	"bytes"
	"math/bits"
	"slices"
	"testing"
)

// This file holds a small bzip2 encoder for tests: it writes blocks whose
// every field the test chooses, including ones no real encoder writes
// (irregular Huffman codes, extra selectors, runs at block ends, and
// malformed fields), so that the decoder's handling of them can be
// checked against libbz2's rules. It favours clarity over speed and
// compression: the BWT sorts rotations naively.

// bitWriter writes bits most significant first.
type bitWriter struct {
	buf []byte
	acc byte
	n   uint
}

func (w *bitWriter) put(v uint64, k uint) {
	for i := k; i > 0; i-- {
		w.acc = w.acc<<1 | byte(v>>(i-1)&1)
		w.n++
		if w.n == 8 {
			w.buf = append(w.buf, w.acc)
			w.acc, w.n = 0, 0
		}
	}
}

func (w *bitWriter) bytes() []byte {
	if w.n > 0 {
		w.buf = append(w.buf, w.acc<<(8-w.n))
		w.acc, w.n = 0, 0
	}
	return w.buf
}

// refUnRLE1 undoes bzip2's first stage the way libbz2 does, byte by byte:
// after four equal bytes the next is a count of further copies, and a new
// run starts after the count. It is the tests' reference for unRLE1.
func refUnRLE1(pre []byte) []byte {
	out := []byte{}
	for i := 0; i < len(pre); {
		b := pre[i]
		j := i
		for j < len(pre) && j-i < 4 && pre[j] == b {
			j++
		}
		out = append(out, pre[i:j]...)
		if j-i == 4 && j < len(pre) {
			out = append(out, bytes.Repeat([]byte{b}, int(pre[j]))...)
			j++
		}
		i = j
	}
	return out
}

// rle1 applies bzip2's first stage as bzip2 does: runs of 4 to 255 equal
// bytes become four bytes and a count; longer runs are split into runs of
// 255 first.
func rle1(data []byte) []byte {
	var out []byte
	for i := 0; i < len(data); {
		b := data[i]
		j := i
		for j < len(data) && data[j] == b && j-i < 255 {
			j++
		}
		if n := j - i; n >= 4 {
			out = append(out, b, b, b, b, byte(n-4))
		} else {
			out = append(out, data[i:j]...)
		}
		i = j
	}
	return out
}

// bwt returns the last column of the sorted rotations of s and the row of
// s itself.
func bwt(s []byte) (last []byte, origPtr int) {
	n := len(s)
	rows := make([]int, n)
	for i := range rows {
		rows[i] = i
	}
	slices.SortFunc(rows, func(a, b int) int {
		for k := 0; k < n; k++ {
			x, y := s[(a+k)%n], s[(b+k)%n]
			if x != y {
				return int(x) - int(y)
			}
		}
		return 0
	})
	last = make([]byte, n)
	for r, start := range rows {
		last[r] = s[(start+n-1)%n]
		if start == 0 {
			origPtr = r
		}
	}
	return last, origPtr
}

// testBlock describes a block for encodeStream. Only pre is required.
type testBlock struct {
	pre []byte // the block's bytes before RLE1 is undone

	// last and origPtr, when last is set, replace the BWT of pre (which
	// is then only used for the CRC), to write malformed blocks.
	last    []byte
	origPtr int

	inUse   []byte    // symbol map, default the byte values in pre
	nGroups int       // Huffman tables, default 2
	lengths [][]uint8 // code lengths per table, default a complete code
	// writeLengths, if set, are the lengths whose canonical codes the
	// symbols are written with, instead of lengths.
	writeLengths [][]uint8
	selectors    []int // table per group of 50 symbols, default all 0
	randomised   bool
	badCRC       bool // store a wrong block CRC
}

// encodeStream writes a bzip2 stream of the given level ('1'..'9')
// holding blocks, and returns it with the bytes it decodes to.
func encodeStream(tb testing.TB, level byte, blocks ...testBlock) (stream, want []byte) {
	tb.Helper()
	w := &bitWriter{}
	w.put('B', 8)
	w.put('Z', 8)
	w.put('h', 8)
	w.put(uint64(level), 8)
	want = []byte{}
	combined := uint32(0)
	for _, blk := range blocks {
		out := refUnRLE1(blk.pre)
		want = append(want, out...)
		crc := blockCRC(out)
		combined = bits.RotateLeft32(combined, 1) ^ crc
		if blk.badCRC {
			crc ^= 1
		}
		w.put(blockMagic, 48)
		w.put(uint64(crc), 32)
		encodeBlock(tb, w, blk)
	}
	w.put(eosMagic, 48)
	w.put(uint64(combined), 32)
	return w.bytes(), want
}

func encodeBlock(tb testing.TB, w *bitWriter, blk testBlock) {
	tb.Helper()
	last, origPtr := blk.last, blk.origPtr
	if last == nil {
		last, origPtr = bwt(blk.pre)
	}
	inUse := blk.inUse
	if inUse == nil {
		var seen [256]bool
		for _, b := range last {
			seen[b] = true
		}
		for v, ok := range seen {
			if ok {
				inUse = append(inUse, byte(v))
			}
		}
	}

	// Move-to-front and zero-run coding: symbol 0 RUNA, 1 RUNB, k+1 MTF
	// position k, len(inUse)+1 end of block.
	mtf := slices.Clone(inUse)
	var syms []int
	zeros := 0
	flush := func() {
		for zeros > 0 {
			if zeros&1 == 1 {
				syms = append(syms, 0)
				zeros = (zeros - 1) / 2
			} else {
				syms = append(syms, 1)
				zeros = (zeros - 2) / 2
			}
		}
	}
	for _, b := range last {
		k := bytes.IndexByte(mtf, b)
		if k < 0 {
			tb.Fatalf("byte %d not in the symbol map", b)
		}
		if k == 0 {
			zeros++
			continue
		}
		flush()
		syms = append(syms, k+1)
		copy(mtf[1:k+1], mtf[:k])
		mtf[0] = b
	}
	flush()
	alpha := len(inUse) + 2
	syms = append(syms, alpha-1)

	nGroups := blk.nGroups
	if nGroups == 0 {
		nGroups = 2
	}
	lengths := blk.lengths
	if lengths == nil {
		for range nGroups {
			lengths = append(lengths, completeLengths(alpha))
		}
	}
	selectors := blk.selectors
	if selectors == nil {
		selectors = make([]int, (len(syms)+groupSize-1)/groupSize)
	}

	w.put(b2u(blk.randomised), 1)
	w.put(uint64(origPtr), 24)
	var used [16]uint16
	for _, v := range inUse {
		used[v>>4] |= 0x8000 >> (v & 15)
	}
	ranges := uint64(0)
	for i, u := range used {
		if u != 0 {
			ranges |= 0x8000 >> i
		}
	}
	w.put(ranges, 16)
	for _, u := range used {
		if u != 0 {
			w.put(uint64(u), 16)
		}
	}
	w.put(uint64(nGroups), 3)
	w.put(uint64(len(selectors)), 15)
	gmtf := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for _, s := range selectors {
		k := slices.Index(gmtf, s)
		w.put(1<<(k+1)-2, uint(k+1)) // k ones, then a zero
		copy(gmtf[1:k+1], gmtf[:k])
		gmtf[0] = s
	}
	for _, ls := range lengths {
		cur := int(ls[0])
		w.put(uint64(cur), 5)
		for _, l := range ls {
			for ; cur < int(l); cur++ {
				w.put(2, 2)
			}
			for ; cur > int(l); cur-- {
				w.put(3, 2)
			}
			w.put(0, 1)
		}
	}
	if blk.writeLengths != nil {
		lengths = blk.writeLengths
	}
	codes := make([][]int64, len(lengths))
	for g, ls := range lengths {
		codes[g] = canonicalCodes(ls)
	}
	for i, s := range syms {
		g := 0 // past the selectors, for streams that lack some
		if i/groupSize < len(selectors) {
			g = selectors[i/groupSize]
		}
		c := codes[g][s]
		if c < 0 {
			tb.Fatalf("symbol %d has no reachable code in table %d", s, g)
		}
		w.put(uint64(c), uint(lengths[g][s]))
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// completeLengths returns code lengths forming a complete prefix code
// over n >= 2 symbols.
func completeLengths(n int) []uint8 {
	k := bits.Len(uint(n - 1)) // 2^(k-1) < n <= 2^k
	short := 1<<k - n          // symbols of length k-1
	ls := make([]uint8, n)
	for i := range ls {
		ls[i] = uint8(k)
		if i < short {
			ls[i] = uint8(k - 1)
		}
	}
	return ls
}

// canonicalCodes assigns codes as libbz2 does: by length, then symbol,
// each length starting at twice the code after the previous length's
// last. A code that does not fit in its length is unreachable: -1.
func canonicalCodes(lengths []uint8) []int64 {
	codes := make([]int64, len(lengths))
	code := int64(0)
	for l := uint8(1); l <= maxCodeLen; l++ {
		for s, ls := range lengths {
			if ls == l {
				codes[s] = code
				if code >= 1<<l {
					codes[s] = -1
				}
				code++
			}
		}
		code <<= 1
	}
	return codes
}

// TestEncoder checks the test encoder against compress/bzip2, so that
// the tests built on it rest on an independent decoder.
func TestEncoder(t *testing.T) {
	data := []byte("banana bandana, a man a plan a canal panama aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")
	src, want := encodeStream(t, '9', testBlock{pre: rle1(data)})
	if !bytes.Equal(want, data) {
		t.Fatalf("rle1/refUnRLE1 round trip: %q", want)
	}
	got, err := stdDecode(src, len(data))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("compress/bzip2: %q, %v", got, err)
	}
}
