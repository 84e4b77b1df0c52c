package bzip2

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"sync"
)

// Block layout constants (bzip2 1.0.8's format, as libbz2 decodes it).
const (
	blockMagic = 0x314159265359 // start of a block: BCD digits of pi
	eosMagic   = 0x177245385090 // end of stream: BCD digits of sqrt(pi)
	minGroups  = 2
	maxGroups  = 6
	groupSize  = 50 // symbols coded with one selector
	// maxSelectors is the number of selectors kept. A stream may declare
	// up to 32767; like libbz2 1.0.8, the decoder reads them all and
	// ignores those past this count, which no block of 900,000 symbols
	// (plus an end-of-block symbol) can reach.
	maxSelectors = 18002
)

// scratch is the working memory of one decode, recycled through
// scratchPool. Each block overwrites what it later reads, so nothing
// carries over between blocks or calls.
type scratch struct {
	// tt holds the block's symbols in its low byte during entropy
	// decoding and the inverse BWT links above them afterwards
	// (inverseBWT). It grows to the largest block decoded so far.
	tt []uint32
	// pre receives the block's bytes in text order before the RLE1 stage
	// is undone (unRLE1).
	pre []byte
	// lf holds the links of inverseBWT's backward walk.
	lf   []uint32
	sel  [maxSelectors]uint8
	tabs [maxGroups]huffTable
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// decoder is the state of one stream decode.
type decoder struct {
	br       bitReader
	s        *scratch
	blockMax int // level × 100,000: the most symbols a block may hold
	start    int // len(dst) when the decode began
	// irregular is set when the stream relies on behaviour where libbz2
	// and compress/bzip2 disagree (see huffTable and unRLE1), for the
	// differential tests.
	irregular bool
}

// blockHeader is what a block declares before its Huffman-coded symbols.
type blockHeader struct {
	origPtr uint32
	nInUse  int       // number of distinct byte values in the block
	inUse   [256]byte // those values in increasing order (the MTF start)
	nSel    int       // selectors kept in scratch.sel
	nGroups int
}

// corrupt returns an ErrCorrupt error carrying the current bit offset, or
// a truncation error if the reader already ran past the input, since
// garbage read from the zero padding explains any inconsistency then.
func (d *decoder) corrupt(format string, args ...any) error {
	if d.br.overrun() {
		return d.truncated()
	}
	return fmt.Errorf("%w: %s at bit %d", ErrCorrupt, fmt.Sprintf(format, args...), d.br.bitPos())
}

// truncated returns the error for a stream that ends too early.
func (d *decoder) truncated() error {
	return fmt.Errorf("%w: stream truncated after %d bytes", ErrCorrupt, len(d.br.src))
}

// readBlock decodes the block whose magic and CRC have been read and
// leaves its pre-RLE1 bytes in d.s.pre. room is how many more bytes the
// caller accepts; a block too large to fit is rejected before it is
// decoded in full.
func (d *decoder) readBlock(room int) ([]byte, error) {
	var h blockHeader
	if err := d.readHeader(&h); err != nil {
		return nil, err
	}
	// Undoing RLE1 turns every 5 bytes into at least 4, so a block of
	// more than room×5/4 (+1 for rounding) symbols cannot fit; refusing
	// it early bounds tt by the expected output as well as by the level.
	limit := d.blockMax
	if room < limit {
		limit = min(limit, room+room/4+1)
	}
	var counts [256]uint32
	n, err := d.decodeSymbols(&h, limit, &counts)
	if err != nil {
		return nil, err
	}
	if int(h.origPtr) >= n {
		return nil, d.corrupt("origPtr %d outside block of %d bytes", h.origPtr, n)
	}
	tt := d.s.tt[:n]
	if cap(d.s.pre) < n {
		d.s.pre = make([]byte, n, cap(d.s.tt))
	}
	if cap(d.s.lf) < n {
		d.s.lf = make([]uint32, n, cap(d.s.tt))
	}
	pre := d.s.pre[:n]
	inverseBWT(tt, d.s.lf[:n], pre, h.origPtr, &counts)
	return pre, nil
}

// readHeader reads everything between a block's CRC and its first
// Huffman-coded symbol, and builds the block's Huffman tables.
func (d *decoder) readHeader(h *blockHeader) error {
	br := &d.br
	if br.bit() != 0 {
		// libbz2 still de-randomises such blocks, but bzip2 has not
		// written them since 0.9.5 and no CRAM writer does.
		return fmt.Errorf("%w: randomised block at bit %d is not supported", ErrCorrupt, br.bitPos()-1)
	}
	h.origPtr = uint32(br.bitsN(24))

	// The symbol map: 16 bits saying which ranges of 16 byte values are
	// present, then 16 bits for each range present.
	ranges := uint32(br.bitsN(16))
	for i := range 16 {
		if ranges&(0x8000>>i) == 0 {
			continue
		}
		m := uint32(br.bitsN(16))
		for j := range 16 {
			if m&(0x8000>>j) != 0 {
				h.inUse[h.nInUse] = byte(i<<4 | j)
				h.nInUse++
			}
		}
	}
	if h.nInUse == 0 {
		return d.corrupt("block uses no byte values")
	}

	h.nGroups = int(br.bitsN(3))
	if h.nGroups < minGroups || h.nGroups > maxGroups {
		return d.corrupt("%d Huffman tables, want %d to %d", h.nGroups, minGroups, maxGroups)
	}
	nSel := int(br.bitsN(15))
	if nSel == 0 {
		return d.corrupt("no selectors")
	}
	// Selectors are move-to-front coded table numbers, each written in
	// unary.
	mtf := [maxGroups]uint8{0, 1, 2, 3, 4, 5}
	sel := &d.s.sel
	for i := range nSel {
		j := br.ones(uint(h.nGroups - 1))
		if j >= uint(h.nGroups) {
			return d.corrupt("selector %d refers to table %d of %d", i, j, h.nGroups)
		}
		v := mtf[j]
		copy(mtf[1:j+1], mtf[:j])
		mtf[0] = v
		if i < maxSelectors {
			sel[i] = v
		}
	}
	h.nSel = min(nSel, maxSelectors)

	// Code lengths: per table, a 5-bit start, then per symbol a delta
	// coded as pairs of bits (1,0 = +1, 1,1 = -1) ended by a 0 bit. The
	// length must stay within 1..20 at every step.
	alphaSize := h.nInUse + 2
	var lengths [maxAlpha]uint8
	for g := range h.nGroups {
		l := int(br.bitsN(5))
		for i := range alphaSize {
			for {
				if l < 1 || l > maxCodeLen {
					return d.corrupt("table %d: code length %d for symbol %d, want 1 to %d", g, l, i, maxCodeLen)
				}
				if br.nb < 2 {
					br.refill()
				}
				if br.bits&(1<<63) == 0 {
					br.bits <<= 1
					br.nb--
					break
				}
				l += 1 - int(br.bits>>61&2) // 10: +1, 11: -1
				br.bits <<= 2
				br.nb -= 2
			}
			lengths[i] = uint8(l)
		}
		t := &d.s.tabs[g]
		t.build(lengths[:alphaSize])
		if t.irregular {
			d.irregular = true
		}
	}
	if br.overrun() {
		return d.truncated()
	}
	return nil
}

// decodeSymbols decodes the block's Huffman-coded symbols, undoing the
// RUNA/RUNB zero-run coding and the move-to-front transform, into the low
// bytes of d.s.tt, and counts each byte value in counts. It returns the
// number of bytes, at most limit.
func (d *decoder) decodeSymbols(h *blockHeader, limit int, counts *[256]uint32) (int, error) {
	s := d.s
	// len(tt) <= limit, so that a full tt stops literals at the limit.
	tt := s.tt[:min(cap(s.tt), limit)]
	// The MTF list: positions 0-7 in the bytes of front, least
	// significant first, where most symbols find their byte; position
	// p >= 8 in rest[p-8].
	front := binary.LittleEndian.Uint64(h.inUse[:8])
	var rest [256 - 8]byte
	copy(rest[:], h.inUse[8:])
	eob := uint32(h.nInUse + 1)
	// The bit reader lives in locals here, written back before any
	// method of d runs.
	src := d.br.src
	bits, nb, pos := d.br.bits, d.br.nb, d.br.pos

	n := 0
	run, weight := 0, 1 // pending zero run and the weight of its next digit
	var t *huffTable
	left := 0 // symbols left in the current group
	group := 0
	var err error
	for {
		if left == 0 {
			if group >= h.nSel {
				d.br.bits, d.br.nb, d.br.pos = bits, nb, pos
				err = d.corrupt("block needs more than its %d selectors", h.nSel)
				break
			}
			if pos*8-int(nb) > 8*len(src) {
				err = d.truncated()
				break
			}
			t = &s.tabs[s.sel[group]]
			group++
			left = groupSize
		}
		left--

		if nb < maxCodeLen {
			if pos+8 <= len(src) {
				bits |= binary.BigEndian.Uint64(src[pos:]) >> nb
				pos += int(63-nb) >> 3
				nb |= 56
			} else {
				d.br.bits, d.br.nb, d.br.pos = bits, nb, pos
				d.br.refillTail()
				bits, nb, pos = d.br.bits, d.br.nb, d.br.pos
			}
		}
		e := t.fast[bits>>(64-fastBits)]
		sym, l := uint32(e&symMask), uint(e>>symBits)
		if l == 0 {
			var ok bool
			if sym, l, ok = t.decodeSlow(bits); !ok {
				d.br.bits, d.br.nb, d.br.pos = bits, nb, pos
				err = d.corrupt("invalid Huffman code")
				break
			}
		}
		bits <<= l
		nb -= l

		if sym < 2 {
			// RUNA (0) and RUNB (1) are the digits 1 and 2 of a
			// bijective base-2 run length, least significant first.
			run += weight << sym
			weight <<= 1
			if run > limit-n {
				d.br.bits, d.br.nb, d.br.pos = bits, nb, pos
				err = d.tooLong(n+run, limit)
				break
			}
			continue
		}
		if run > 0 {
			if n+run > len(tt) {
				tt = d.growTT(n+run, limit)
			}
			b := byte(front)
			counts[b] += uint32(run)
			fill := tt[n : n+run]
			for i := range fill {
				fill[i] = uint32(b)
			}
			n += run
			run, weight = 0, 1
		}
		if sym == eob {
			break
		}
		// Symbol k+1 (k >= 1) stands for MTF position k: take that
		// byte out and put it in front, shifting positions 0..k-1 up.
		k := uint(sym - 1)
		var b byte
		if k < 8 {
			o := k * 8
			b = byte(front >> o)
			front = front&^(uint64(1)<<(o+8)-1) | (front&(uint64(1)<<o-1))<<8 | uint64(b)
		} else {
			j := k - 8
			b = rest[j]
			copy(rest[1:j+1], rest[:j])
			rest[0] = byte(front >> 56)
			front = front<<8 | uint64(b)
		}
		if n >= len(tt) {
			if n >= limit {
				d.br.bits, d.br.nb, d.br.pos = bits, nb, pos
				err = d.tooLong(n+1, limit)
				break
			}
			tt = d.growTT(n+1, limit)
		}
		tt[n] = uint32(b)
		counts[b]++
		n++
	}
	d.br.bits, d.br.nb, d.br.pos = bits, nb, pos
	if err != nil {
		return 0, err
	}
	if d.br.overrun() {
		return 0, d.truncated()
	}
	return n, nil
}

// tooLong reports a block of at least n symbols where limit is allowed.
func (d *decoder) tooLong(n, limit int) error {
	if limit == d.blockMax {
		return d.corrupt("block holds more than %d symbols", limit)
	}
	return d.corrupt("block of at least %d symbols expands past the expected size", n)
}

// growTT enlarges d.s.tt, keeping its contents, to at least need and at
// most limit entries, and returns it at full capacity (at most limit).
func (d *decoder) growTT(need, limit int) []uint32 {
	old := d.s.tt[:cap(d.s.tt)]
	c := min(limit, max(need, 2*len(old), 1<<12))
	tt := make([]uint32, c)
	copy(tt, old)
	d.s.tt = tt
	return tt
}

// inverseBWT undoes the Burrows-Wheeler transform of the block whose last
// column is in the low bytes of tt and whose original row is origPtr
// (origPtr < len(tt)), writing the block's bytes in text order to pre.
// counts holds the number of each byte value in the block; lf is scratch.
// tt, lf and pre have the same length.
//
// Sorted row j starting with the k-th occurrence of byte b in the first
// column is the rotation one position later than the row ending with the
// k-th occurrence of b in the last column, row i say. Storing i above
// tt[j]'s byte makes tt a list through the text in forward order: from a
// row, the next row and the byte it ends with, which is the next byte of
// the text. Storing j above lf[i]'s byte (the last-column byte of row i)
// makes lf the same list backwards. Row origPtr is the text itself, so
// the first byte is that of tt's successor of origPtr, and the last byte
// that of row origPtr. Each step of a walk is a dependent load from a
// random place in an array too large for the nearest caches, so the walk
// fills the first half of pre forwards and the second half backwards at
// the same time, to have two loads in flight instead of one.
func inverseBWT(tt, lf []uint32, pre []byte, origPtr uint32, counts *[256]uint32) {
	var next [256]uint32
	sum := uint32(0)
	for b, c := range counts {
		next[b] = sum
		sum += c
	}
	lf = lf[:len(tt)]
	for i, e := range tt {
		b := byte(e)
		j := next[b]
		next[b] = j + 1
		tt[j] |= uint32(i) << 8
		lf[i] = j<<8 | uint32(b)
	}
	p := tt[origPtr] >> 8
	q := origPtr
	lo, hi := 0, len(pre)-1
	for lo < hi {
		e, f := tt[p], lf[q]
		pre[lo], pre[hi] = byte(e), byte(f)
		p, q = e>>8, f>>8
		lo++
		hi--
	}
	if lo == hi {
		pre[lo] = byte(tt[p])
	}
	// A valid transform is one cycle through all rows, and then the two
	// walks meet: where the forward walk stopped is where the backward
	// one did (odd length) or just after it (even length). A damaged
	// block can make several cycles; libbz2 walks forwards only, going
	// round its cycle again, so do the same and let the block CRC judge.
	if meet := q; len(pre)%2 == 0 {
		if len(pre) > 0 && tt[meet]>>8 != p {
			forwardBWT(tt, pre, origPtr)
		}
	} else if meet != p {
		forwardBWT(tt, pre, origPtr)
	}
}

// forwardBWT fills pre by walking tt forwards only from origPtr, as libbz2
// does: the text for a valid transform, libbz2's bytes for a damaged one.
func forwardBWT(tt []uint32, pre []byte, origPtr uint32) {
	p := tt[origPtr] >> 8
	for k := range pre {
		e := tt[p]
		pre[k] = byte(e)
		p = e >> 8
	}
}

// unRLE1 undoes the first stage of bzip2, the run-length coding of its
// input, appending the bytes of pre to dst: four equal bytes are followed
// by a count of 0 to 255 further copies. A run cut short by the end of
// the block has no count, and the coding never carries over to the next
// block. dst may grow to limit bytes at most; past that, it fails.
func (d *decoder) unRLE1(dst, pre []byte, limit int) ([]byte, error) {
	// room is where writing must stop: the end of dst's capacity or the
	// limit, whichever comes first.
	room := min(cap(dst), limit)
	i, n := 0, len(pre)
	for i < n {
		// The first position from i that starts four equal bytes is where
		// the decoder meets a run: no earlier byte can belong to it.
		j := findRun(pre, i)
		if j > i {
			lit := pre[i:j]
			if len(dst)+len(lit) > room {
				var err error
				if dst, err = d.grow(dst, len(lit), limit); err != nil {
					return dst, err
				}
				room = min(cap(dst), limit)
			}
			dst = append(dst, lit...)
		}
		if j == n {
			break
		}
		b := pre[j]
		run := 4
		i = j + 4
		if i < n {
			run += int(pre[i])
			i++
			if pre[i-1] == 0 && i < n && pre[i] == b {
				// Go's compress/bzip2 continues this run where
				// libbz2 starts a new one; bzip2 never writes it.
				d.irregular = true
			}
		}
		if len(dst)+run > room {
			var err error
			if dst, err = d.grow(dst, run, limit); err != nil {
				return dst, err
			}
			room = min(cap(dst), limit)
		}
		k := len(dst)
		dst = dst[:k+run]
		fill := dst[k:]
		for x := range fill {
			fill[x] = b
		}
	}
	return dst, nil
}

// findRun returns the first position from i that starts four equal bytes
// of p, or len(p) if there is none.
func findRun(p []byte, i int) int {
	const (
		lo7 = 0x7f7f7f7f7f7f7f7f
		hi  = 0x0080808080808080 // the top bits of bytes 0..6
	)
	// Eight bytes at a time: byte t of x is zero when p[i+t] ==
	// p[i+t+1] (t <= 6), and z marks those bytes; three marks in a row
	// starting at byte t <= 4 mean four equal bytes at i+t. A miss rules
	// out starts i..i+4.
	for ; i+8 <= len(p); i += 5 {
		w := binary.LittleEndian.Uint64(p[i:])
		x := w ^ w>>8
		z := ^((x&lo7 + lo7) | x | lo7) & hi
		if r := z & (z >> 8) & (z >> 16); r != 0 {
			return i + bits.TrailingZeros64(r)>>3
		}
	}
	for ; i+3 < len(p); i++ {
		if b := p[i]; p[i+1] == b && p[i+2] == b && p[i+3] == b {
			return i
		}
	}
	return len(p)
}

// grow returns dst with room for n more bytes, or an error if that would
// take it past limit bytes (nothing is written then, so the capacity of
// dst past limit is never touched). The new capacity is the largest of
// what is needed, twice the old capacity and the current length plus 16
// times the input size (bzip2 typically compresses 3 to 10 times), capped
// at limit: a typical stream needs one allocation, any stream amortised
// linear time.
func (d *decoder) grow(dst []byte, n, limit int) ([]byte, error) {
	need := len(dst) + n
	if need > limit {
		return dst, fmt.Errorf("%w: output exceeds the expected %d bytes (block ending at bit %d)", ErrCorrupt, limit-d.start, d.br.bitPos())
	}
	c := min(limit, max(need, 2*cap(dst), len(dst)+16*len(d.br.src)))
	b := make([]byte, len(dst), c)
	copy(b, dst)
	return b, nil
}
