// Package rans4x8 decodes rANS 4x8 streams (CRAM block compression method
// 4, "rANS"), as specified in CRAMcodecs section 2 "rANS 4x8": order-0 and
// order-1 static-frequency rANS with 4 interleaved states, 12-bit
// frequencies and byte-wise renormalisation.
//
// The package is pure: no goroutines, no logging and no global mutable
// state. It never panics on malformed input and bounds every allocation by
// the caller's expected size or MaxSize.
package rans4x8

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MaxSize is the largest decoded length accepted, whatever the stream
// declares (CRAMcodecs section 2.4, n_out).
const MaxSize = 1 << 30

// ErrCorrupt is returned (wrapped, with context) for every malformed,
// truncated or inconsistent stream.
var ErrCorrupt = errors.New("rans4x8: corrupt stream")

const (
	headerLen = 9       // order byte, compressed size, uncompressed size
	ransL     = 1 << 23 // lower bound of a normalised state (section 2.3)
	tfShift   = 12
	totFreq   = 1 << tfShift
	tfMask    = totFreq - 1
)

// Decode decodes one rANS 4x8 stream (CRAM block method 4, CRAMcodecs
// section 2.4). rawSize is the expected decoded length (from the CRAM block
// header), or -1 when unknown; the stored length must agree with it when
// given and never exceeds MaxSize.
func Decode(src []byte, rawSize int) ([]byte, error) {
	if rawSize < -1 || rawSize > MaxSize {
		return nil, fmt.Errorf("%w: invalid expected size %d", ErrCorrupt, rawSize)
	}
	if len(src) < headerLen {
		return nil, fmt.Errorf("%w: %d bytes, need a %d-byte header", ErrCorrupt, len(src), headerLen)
	}
	order := src[0]
	inSz := binary.LittleEndian.Uint32(src[1:])
	outSz := binary.LittleEndian.Uint32(src[5:])
	if uint64(inSz) != uint64(len(src)-headerLen) {
		return nil, fmt.Errorf("%w: header says %d compressed bytes, stream has %d", ErrCorrupt, inSz, len(src)-headerLen)
	}
	if outSz > MaxSize {
		return nil, fmt.Errorf("%w: stored size %d exceeds maximum %d", ErrCorrupt, outSz, MaxSize)
	}
	n := int(outSz)
	if rawSize >= 0 && n != rawSize {
		return nil, fmt.Errorf("%w: stored size %d, expected %d", ErrCorrupt, n, rawSize)
	}
	r := &reader{b: src, p: headerLen}
	switch order {
	case 0:
		return decodeO0(r, n)
	case 1:
		return decodeO1(r, n)
	}
	return nil, fmt.Errorf("%w: order byte %d, want 0 or 1", ErrCorrupt, order)
}

// reader is a bounds-checked cursor over a byte slice.
type reader struct {
	b []byte
	p int
}

func (r *reader) u8() (byte, error) {
	if r.p >= len(r.b) {
		return 0, fmt.Errorf("%w: truncated at offset %d", ErrCorrupt, r.p)
	}
	c := r.b[r.p]
	r.p++
	return c, nil
}

// freq reads a frequency: one byte, or two when the first has its top bit
// set (the ITF8 form of CRAMcodecs section 2.2, values below 32768).
func (r *reader) freq() (uint32, error) {
	c, err := r.u8()
	if err != nil {
		return 0, err
	}
	if c < 0x80 {
		return uint32(c), nil
	}
	d, err := r.u8()
	if err != nil {
		return 0, err
	}
	return uint32(c&0x7f)<<8 | uint32(d), nil
}

// packEntry packs a decode-table slot: symbol in bits 0-7, offset within
// the symbol's range in bits 8-19, frequency minus one in bits 20-31, so
// that x' = f*(x>>12) + offset.
func packEntry(sym, off, freq uint32) uint32 { return sym | off<<8 | (freq-1)<<20 }

// readTable implements ReadFrequencies0 (CRAMcodecs section 2.4) into a
// decode table, marking in syms (when not nil) every symbol it can decode.
// zeroIs4096 applies htscodecs's order-1 reading of a zero
// frequency as 4096. As htscodecs accepts, the total may be 4095, in which
// case slot 4095 extends the last symbol.
func readTable(r *reader, tab *[totFreq]uint32, syms *[256]bool, zeroIs4096 bool) error {
	start := r.p
	c, err := r.u8()
	if err != nil {
		return err
	}
	sym := int(c)
	rle := 0
	x := uint32(0)
	for {
		f, err := r.freq()
		if err != nil {
			return err
		}
		if f == 0 && zeroIs4096 {
			f = totFreq
		}
		if f > totFreq-x {
			return fmt.Errorf("%w: frequencies at offset %d exceed %d (symbol %d)", ErrCorrupt, start, totFreq, sym)
		}
		if f > 0 {
			if syms != nil {
				syms[sym] = true
			}
			v := packEntry(uint32(sym), 0, f)
			slots := tab[x : x+f]
			for len(slots) >= 4 {
				slots[0] = v
				slots[1] = v + 1<<8
				slots[2] = v + 2<<8
				slots[3] = v + 3<<8
				v += 4 << 8
				slots = slots[4:]
			}
			for y := range slots {
				slots[y] = v + uint32(y)<<8
			}
			x += f
		}
		if rle > 0 {
			rle--
			sym++
			if sym > 255 {
				return fmt.Errorf("%w: symbol run at offset %d passes 255", ErrCorrupt, start)
			}
		} else {
			c, err := r.u8()
			if err != nil {
				return err
			}
			if int(c) == sym+1 {
				n, err := r.u8()
				if err != nil {
					return err
				}
				rle = int(n)
			}
			sym = int(c)
		}
		if sym == 0 {
			break
		}
	}
	switch x {
	case totFreq:
	case totFreq - 1:
		tab[totFreq-1] = tab[totFreq-2] + 1<<8
	default:
		return fmt.Errorf("%w: frequencies at offset %d sum to %d, want 4095 or 4096", ErrCorrupt, start, x)
	}
	return nil
}

// readStates reads the 4 little-endian initial states, each within
// [ransL, 1<<31) as an encoder leaves them.
func readStates(r *reader, st *[4]uint32) error {
	if len(r.b)-r.p < 16 {
		return fmt.Errorf("%w: 4 rANS states need 16 bytes, %d left at offset %d", ErrCorrupt, len(r.b)-r.p, r.p)
	}
	for j := range st {
		x := binary.LittleEndian.Uint32(r.b[r.p:])
		if x < ransL || x >= 1<<31 {
			return fmt.Errorf("%w: rANS state %d is %#x at offset %d, outside [%#x, 1<<31)", ErrCorrupt, j, x, r.p, ransL)
		}
		st[j] = x
		r.p += 4
	}
	return nil
}

// renormSafe implements RansRenorm (CRAMcodecs section 2.4) with bounds
// checks, for the tail of a stream.
func renormSafe(x uint32, r *reader) (uint32, error) {
	for x < ransL {
		if r.p >= len(r.b) {
			return 0, fmt.Errorf("%w: rANS input exhausted at offset %d", ErrCorrupt, r.p)
		}
		x = x<<8 | uint32(r.b[r.p])
		r.p++
	}
	return x, nil
}

// renorm8 is RansRenorm (CRAMcodecs section 2.4) over an 8-byte window at
// offset k. A decoded state lies in [1<<11, 1<<31), so two bytes always
// suffice. The first, frequent and hard to predict, is selected with a mask
// (c is 1 exactly when x < ransL), because Go will not emit a conditional
// move for a value that feeds a table index; the second, needed only below
// 1<<15, is a rarely taken branch.
func renorm8(x uint32, w *[8]byte, k uint) (uint32, uint) {
	c := (x - ransL) >> 31
	x ^= (x ^ (x<<8 | uint32(w[k&7]))) & -c
	k += uint(c)
	if x < ransL {
		x = x<<8 | uint32(w[k&7])
		k++
	}
	return x, k
}

// decodeO0 implements RansDecode0 (CRAMcodecs section 2.4): symbol i from
// state i mod 4.
func decodeO0(r *reader, n int) ([]byte, error) {
	tab := new([totFreq]uint32)
	if err := readTable(r, tab, nil, false); err != nil {
		return nil, err
	}
	var st [4]uint32
	if err := readStates(r, &st); err != nil {
		return nil, err
	}
	out := make([]byte, n)
	end := n &^ 3
	i := o0Fast(tab, &st, r, out[:end])
	for ; i < end; i++ {
		j := i & 3
		e := tab[st[j]&tfMask]
		out[i] = byte(e)
		x := (e>>20+1)*(st[j]>>tfShift) + (e>>8)&tfMask
		x, err := renormSafe(x, r)
		if err != nil {
			return nil, err
		}
		st[j] = x
	}
	// The last n mod 4 symbols need no state update (as in htscodecs).
	for j := 0; i < n; i, j = i+1, j+1 {
		out[i] = byte(tab[st[j&3]&tfMask])
	}
	return out, nil
}

// o0Fast decodes groups of 4 symbols into out while 8 input bytes remain
// (the most a group consumes); it returns how many symbols it decoded and
// advances r.
func o0Fast(tab *[totFreq]uint32, st *[4]uint32, r *reader, out []byte) int {
	x0, x1, x2, x3 := st[0], st[1], st[2], st[3]
	src := r.b
	p := r.p
	i := 0
	for ; i <= len(out)-4 && p >= 0 && p <= len(src)-8; i += 4 {
		o := (*[4]byte)(out[i : i+4])
		w := (*[8]byte)(src[p : p+8])
		k := uint(0)
		e := tab[x0&tfMask]
		o[0] = byte(e)
		x0, k = renorm8((e>>20+1)*(x0>>tfShift)+(e>>8)&tfMask, w, k)
		e = tab[x1&tfMask]
		o[1] = byte(e)
		x1, k = renorm8((e>>20+1)*(x1>>tfShift)+(e>>8)&tfMask, w, k)
		e = tab[x2&tfMask]
		o[2] = byte(e)
		x2, k = renorm8((e>>20+1)*(x2>>tfShift)+(e>>8)&tfMask, w, k)
		e = tab[x3&tfMask]
		o[3] = byte(e)
		x3, k = renorm8((e>>20+1)*(x3>>tfShift)+(e>>8)&tfMask, w, k)
		p += int(k)
	}
	st[0], st[1], st[2], st[3] = x0, x1, x2, x3
	r.p = p
	return i
}

// decodeO1 implements RansDecode1 (CRAMcodecs section 2.4): state j decodes
// the j-th quarter with its previous symbol as context; state 3 also
// decodes the remainder.
func decodeO1(r *reader, n int) ([]byte, error) {
	var tabs [256]*[totFreq]uint32
	var absent [256]uint8
	var syms [256]bool // symbols some table can decode
	for i := range absent {
		absent[i] = 1
	}
	start := r.p
	c, err := r.u8()
	if err != nil {
		return nil, err
	}
	ctx := int(c)
	rle := 0
	first := -1
	for {
		if absent[ctx] == 0 {
			return nil, fmt.Errorf("%w: context %d defined twice (table at offset %d)", ErrCorrupt, ctx, start)
		}
		tab := new([totFreq]uint32)
		if err := readTable(r, tab, &syms, true); err != nil {
			return nil, fmt.Errorf("order-1 context %d: %w", ctx, err)
		}
		tabs[ctx] = tab
		absent[ctx] = 0
		if first < 0 {
			first = ctx
		}
		if rle > 0 {
			rle--
			ctx++
			if ctx > 255 {
				return nil, fmt.Errorf("%w: context run at offset %d passes 255", ErrCorrupt, start)
			}
		} else {
			c, err := r.u8()
			if err != nil {
				return nil, err
			}
			if int(c) == ctx+1 {
				n, err := r.u8()
				if err != nil {
					return nil, err
				}
				rle = int(n)
			}
			ctx = int(c)
		}
		if ctx == 0 {
			break
		}
	}
	for i := range tabs {
		if tabs[i] == nil {
			tabs[i] = tabs[first]
		}
	}
	// When every decodable symbol and the initial context 0 have a table,
	// no context can lack one and the main loop needs no check.
	closed := absent[0] == 0
	for s, ok := range syms {
		if ok && absent[s] != 0 {
			closed = false
		}
	}
	var st [4]uint32
	if err := readStates(r, &st); err != nil {
		return nil, err
	}
	out := make([]byte, n)
	q := n >> 2
	x0, x1, x2, x3 := st[0], st[1], st[2], st[3]
	var l0, l1, l2, l3 uint8
	s0 := out[0:q]
	s1 := out[q : 2*q][:len(s0)]
	s2 := out[2*q : 3*q][:len(s0)]
	s3 := out[3*q : 4*q][:len(s0)]
	src := r.b
	p := r.p
	i := 0
	for ; i < len(s0) && p+8 <= len(src); i++ {
		w := (*[8]byte)(src[p : p+8])
		e0 := tabs[l0][x0&tfMask]
		e1 := tabs[l1][x1&tfMask]
		e2 := tabs[l2][x2&tfMask]
		e3 := tabs[l3][x3&tfMask]
		l0, l1, l2, l3 = uint8(e0), uint8(e1), uint8(e2), uint8(e3)
		s0[i], s1[i], s2[i], s3[i] = l0, l1, l2, l3
		x0 = (e0>>20+1)*(x0>>tfShift) + (e0>>8)&tfMask
		x1 = (e1>>20+1)*(x1>>tfShift) + (e1>>8)&tfMask
		x2 = (e2>>20+1)*(x2>>tfShift) + (e2>>8)&tfMask
		x3 = (e3>>20+1)*(x3>>tfShift) + (e3>>8)&tfMask
		k := uint(0)
		x0, k = renorm8(x0, w, k)
		x1, k = renorm8(x1, w, k)
		x2, k = renorm8(x2, w, k)
		x3, k = renorm8(x3, w, k)
		p += int(k)
	}
	if !closed {
		// Contexts used so far: 0, then each segment's decoded symbols
		// but the last.
		var used uint8
		if i > 0 {
			used = absent[0]
		}
		for j := 0; j < 4 && i > 0; j++ {
			for _, c := range out[j*q : j*q+i-1] {
				used |= absent[c]
			}
		}
		if used != 0 {
			return nil, fmt.Errorf("%w: order-1 data uses a context with no frequency table", ErrCorrupt)
		}
	}
	st = [4]uint32{x0, x1, x2, x3}
	l := [4]uint8{l0, l1, l2, l3}
	r.p = p
	step := func(j, pos int) error {
		if absent[l[j]] != 0 {
			return fmt.Errorf("%w: order-1 context %d has no frequency table (output offset %d)", ErrCorrupt, l[j], pos)
		}
		e := tabs[l[j]][st[j]&tfMask]
		out[pos] = byte(e)
		l[j] = byte(e)
		x := (e>>20+1)*(st[j]>>tfShift) + (e>>8)&tfMask
		x, err := renormSafe(x, r)
		st[j] = x
		return err
	}
	for ; i < q; i++ {
		for j := 0; j < 4; j++ {
			if err := step(j, j*q+i); err != nil {
				return nil, err
			}
		}
	}
	for pos := 4 * q; pos < n; pos++ {
		if err := step(3, pos); err != nil {
			return nil, err
		}
	}
	return out, nil
}
