package rans4x8

import (
	"fmt"
	"sync"
)

// o1Tables holds the order-1 decode tables of RansDecode1 (CRAMcodecs
// section 2.4), one row per context l: sym[l<<12|m] is the symbol of
// frequency slot m, and fc[l<<8|s] holds the frequency of symbol s in
// bits 0-15 and its cumulative frequency in bits 16-31. A byte per slot
// keeps a context's table at 4 KiB (a packed 32-bit entry per slot would
// take 16 KiB), so the few contexts of a quality stream stay in L1/L2.
//
// Rows are indexed by the context itself, so no pointer is loaded per
// symbol. The tables come from a pool and are not cleared: a row is read
// only after readO1Row wrote all its slots and the frequencies of every
// symbol in them, except for contexts without a table, which the decoder
// rejects (see decodeO1); stale bytes there never reach a caller.
//
// For long outputs whose symbols and contexts are all below flatSyms (the
// Phred scores of quality data) the fast loop uses flat instead: one
// packed entry per slot of the first flatSyms contexts, offset into the
// symbol's range in bits 0-11, symbol in bits 12-17, frequency in bits
// 18-31 (packFlat). Decoding a symbol is then one load, and the index of
// the state's next slot is the entry's symbol bits plus the low bits of
// the new state, with no shift or separate context on the path from one
// symbol to the next.
type o1Tables struct {
	sym  [256 << tfShift]uint8
	fc   [256 * 256]uint32
	flat *[flatSyms << tfShift]uint32
}

// flatSyms bounds the symbols and contexts of a stream decoded with the
// flat table (1 MiB); flatMinOut is the output length from which filling
// it (16 KiB per context) pays.
const (
	flatSyms   = 64
	flatMinOut = 1 << 18
)

// packFlat packs a slot of the flat table (see o1Tables).
func packFlat(sym, off, freq uint32) uint32 { return off | sym<<tfShift | freq<<18 }

var o1Pool = sync.Pool{New: func() any { return new(o1Tables) }}

// readO1Row implements ReadFrequencies0 (CRAMcodecs section 2.4) for the
// table of context ctx, reading a zero frequency as 4096 as htscodecs
// does, and marks in syms every symbol the row can decode. As htscodecs
// accepts, the total may be 4095, in which case slot 4095 extends the
// last symbol.
//
// With flat set, it also fills the context's row of t.flat while every
// symbol and the context are below flatSyms, and clears *flat otherwise.
func readO1Row(r *reader, t *o1Tables, ctx int, syms *[256]bool, flat *bool) error {
	start := r.p
	c, err := r.u8()
	if err != nil {
		return err
	}
	row := t.sym[ctx<<tfShift : (ctx+1)<<tfShift]
	fc := t.fc[ctx<<8 : (ctx+1)<<8]
	sym := int(c)
	rle := 0
	x := uint32(0)
	for {
		f, err := r.freq()
		if err != nil {
			return err
		}
		if f == 0 {
			f = totFreq
		}
		if f > totFreq-x {
			return fmt.Errorf("%w: frequencies at offset %d exceed %d (symbol %d)", ErrCorrupt, start, totFreq, sym)
		}
		syms[sym] = true
		fill(row[x:x+f], byte(sym))
		fc[sym] = f | x<<16
		if *flat {
			if sym >= flatSyms || ctx >= flatSyms {
				*flat = false
			} else {
				slots := t.flat[ctx<<tfShift+int(x) : ctx<<tfShift+int(x+f)]
				for j := range slots {
					slots[j] = packFlat(uint32(sym), uint32(j), f)
				}
			}
		}
		x += f
		if done, err := r.nextSymbol(&sym, &rle, start); err != nil {
			return err
		} else if done {
			break
		}
	}
	switch x {
	case totFreq:
	case totFreq - 1:
		// The symbol of slot 4094 keeps its frequency and start, so
		// slot 4095 decodes as one more offset into its range.
		row[totFreq-1] = row[totFreq-2]
		if *flat {
			t.flat[ctx<<tfShift|(totFreq-1)] = t.flat[ctx<<tfShift|(totFreq-2)] + 1
		}
	default:
		return fmt.Errorf("%w: frequencies at offset %d sum to %d, want 4095 or 4096", ErrCorrupt, start, x)
	}
	return nil
}

// decodeO1 implements RansDecode1 (CRAMcodecs section 2.4) into out:
// state j decodes the j-th quarter with its previous symbol as context;
// state 3 also decodes the remainder.
func decodeO1(r *reader, out []byte, flatMin int) error {
	t := o1Pool.Get().(*o1Tables)
	defer o1Pool.Put(t)
	var absent [256]uint8
	var syms [256]bool // symbols some table can decode
	for i := range absent {
		absent[i] = 1
	}
	flat := len(out) >= flatMin
	if flat && t.flat == nil {
		t.flat = new([flatSyms << tfShift]uint32)
	}
	start := r.p
	c, err := r.u8()
	if err != nil {
		return err
	}
	ctx := int(c)
	rle := 0
	for {
		if absent[ctx] == 0 {
			return fmt.Errorf("%w: context %d defined twice (table at offset %d)", ErrCorrupt, ctx, start)
		}
		if err := readO1Row(r, t, ctx, &syms, &flat); err != nil {
			return fmt.Errorf("order-1 context %d: %w", ctx, err)
		}
		absent[ctx] = 0
		if rle > 0 {
			rle--
			ctx++
			if ctx > 255 {
				return fmt.Errorf("%w: context run at offset %d passes 255", ErrCorrupt, start)
			}
		} else {
			c, err := r.u8()
			if err != nil {
				return err
			}
			if int(c) == ctx+1 {
				n, err := r.u8()
				if err != nil {
					return err
				}
				rle = int(n)
			}
			ctx = int(c)
		}
		if ctx == 0 {
			break
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
		return err
	}
	n := len(out)
	q := n >> 2
	var l [4]uint8
	fast := o1Fast
	if flat {
		fast = o1FastFlat
	}
	i, p := fast(t, &st, &l, r.b, r.p, out, 0, q)
	if i < q {
		// Fewer than 16 input bytes are left: run the fast loop on a
		// zero-padded copy, which can only overrun the input by reading
		// padding, then check that it did not.
		var pad [32]byte
		rem := copy(pad[:16], r.b[p:])
		var q2 int
		i, q2 = fast(t, &st, &l, pad[:rem+16], 0, out, i, q)
		if q2 > rem {
			return fmt.Errorf("%w: rANS input exhausted at offset %d", ErrCorrupt, len(r.b))
		}
		p += q2
	}
	r.p = p
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
			return fmt.Errorf("%w: order-1 data uses a context with no frequency table", ErrCorrupt)
		}
	}
	step := func(j, pos int) error {
		lj := int(l[j])
		if absent[lj] != 0 {
			return fmt.Errorf("%w: order-1 context %d has no frequency table (output offset %d)", ErrCorrupt, lj, pos)
		}
		x := st[j]
		m := x & tfMask
		s := t.sym[lj<<tfShift|int(m)]
		f := t.fc[lj<<8|int(s)]
		out[pos] = s
		l[j] = s
		x, err := renormSafe((f&0xffff)*(x>>tfShift)+m-f>>16, r)
		st[j] = x
		return err
	}
	for ; i < q; i++ {
		for j := 0; j < 4; j++ {
			if err := step(j, j*q+i); err != nil {
				return err
			}
		}
	}
	for pos := 4 * q; pos < n; pos++ {
		if err := step(3, pos); err != nil {
			return err
		}
	}
	return nil
}

// o1Fast runs the order-1 main loop over the 4 segments of q symbols,
// from position i of each, while 16 input bytes remain at offset p of src
// (a round of 4 symbols consumes at most 8); it returns the position
// reached in each segment and the new input offset, and leaves the states
// and contexts for the tail. Contexts are not checked (see decodeO1).
func o1Fast(t *o1Tables, st *[4]uint32, l *[4]uint8, src []byte, p int, out []byte, i, q int) (int, int) {
	x0, x1, x2, x3 := st[0], st[1], st[2], st[3]
	l0, l1, l2, l3 := uint(l[0]), uint(l[1]), uint(l[2]), uint(l[3])
	s0 := out[0:q]
	s1 := out[q : 2*q][:len(s0)]
	s2 := out[2*q : 3*q][:len(s0)]
	s3 := out[3*q : 4*q][:len(s0)]
	sym := &t.sym
	fc := &t.fc
	for ; i >= 0 && i < len(s0) && p >= 0 && p <= len(src)-16; i++ {
		w := (*[16]byte)(src[p : p+16])
		k := uint(0)
		m := x0 & tfMask
		c := sym[(l0<<tfShift|uint(m))&(256<<tfShift-1)]
		f := fc[(l0<<8|uint(c))&0xffff]
		s0[i] = c
		l0 = uint(c)
		x0, k = renorm((f&0xffff)*(x0>>tfShift)+m-f>>16, w, k)
		m = x1 & tfMask
		c = sym[(l1<<tfShift|uint(m))&(256<<tfShift-1)]
		f = fc[(l1<<8|uint(c))&0xffff]
		s1[i] = c
		l1 = uint(c)
		x1, k = renorm((f&0xffff)*(x1>>tfShift)+m-f>>16, w, k)
		m = x2 & tfMask
		c = sym[(l2<<tfShift|uint(m))&(256<<tfShift-1)]
		f = fc[(l2<<8|uint(c))&0xffff]
		s2[i] = c
		l2 = uint(c)
		x2, k = renorm((f&0xffff)*(x2>>tfShift)+m-f>>16, w, k)
		m = x3 & tfMask
		c = sym[(l3<<tfShift|uint(m))&(256<<tfShift-1)]
		f = fc[(l3<<8|uint(c))&0xffff]
		s3[i] = c
		l3 = uint(c)
		x3, k = renorm((f&0xffff)*(x3>>tfShift)+m-f>>16, w, k)
		p += int(k)
	}
	st[0], st[1], st[2], st[3] = x0, x1, x2, x3
	l[0], l[1], l[2], l[3] = uint8(l0), uint8(l1), uint8(l2), uint8(l3)
	return i, p
}

// o1FastFlat is o1Fast with the flat table (see o1Tables), for streams
// whose symbols and contexts are all below flatSyms.
func o1FastFlat(t *o1Tables, st *[4]uint32, l *[4]uint8, src []byte, p int, out []byte, i, q int) (int, int) {
	x0, x1, x2, x3 := st[0], st[1], st[2], st[3]
	// e holds the previous entry; only its symbol bits (the context's
	// row) are used before the first load.
	e0, e1, e2, e3 := uint32(l[0])<<tfShift, uint32(l[1])<<tfShift, uint32(l[2])<<tfShift, uint32(l[3])<<tfShift
	s0 := out[0:q]
	s1 := out[q : 2*q][:len(s0)]
	s2 := out[2*q : 3*q][:len(s0)]
	s3 := out[3*q : 4*q][:len(s0)]
	tab := t.flat
	const rowMask = (flatSyms - 1) << tfShift
	// Two rounds of 4 symbols per 16-byte window: a round consumes at
	// most 8 bytes.
	for ; i >= 0 && i < len(s0)-1 && p >= 0 && p <= len(src)-16; i += 2 {
		w := (*[16]byte)(src[p : p+16])
		k := uint(0)
		e0 = tab[e0&rowMask+x0&tfMask]
		e1 = tab[e1&rowMask+x1&tfMask]
		e2 = tab[e2&rowMask+x2&tfMask]
		e3 = tab[e3&rowMask+x3&tfMask]
		s0[i] = uint8(e0>>tfShift) & (flatSyms - 1)
		s1[i] = uint8(e1>>tfShift) & (flatSyms - 1)
		s2[i] = uint8(e2>>tfShift) & (flatSyms - 1)
		s3[i] = uint8(e3>>tfShift) & (flatSyms - 1)
		x0, k = renorm((e0>>18)*(x0>>tfShift)+e0&tfMask, w, k)
		x1, k = renorm((e1>>18)*(x1>>tfShift)+e1&tfMask, w, k)
		x2, k = renorm((e2>>18)*(x2>>tfShift)+e2&tfMask, w, k)
		x3, k = renorm((e3>>18)*(x3>>tfShift)+e3&tfMask, w, k)
		e0 = tab[e0&rowMask+x0&tfMask]
		e1 = tab[e1&rowMask+x1&tfMask]
		e2 = tab[e2&rowMask+x2&tfMask]
		e3 = tab[e3&rowMask+x3&tfMask]
		s0[i+1] = uint8(e0>>tfShift) & (flatSyms - 1)
		s1[i+1] = uint8(e1>>tfShift) & (flatSyms - 1)
		s2[i+1] = uint8(e2>>tfShift) & (flatSyms - 1)
		s3[i+1] = uint8(e3>>tfShift) & (flatSyms - 1)
		x0, k = renorm((e0>>18)*(x0>>tfShift)+e0&tfMask, w, k)
		x1, k = renorm((e1>>18)*(x1>>tfShift)+e1&tfMask, w, k)
		x2, k = renorm((e2>>18)*(x2>>tfShift)+e2&tfMask, w, k)
		x3, k = renorm((e3>>18)*(x3>>tfShift)+e3&tfMask, w, k)
		p += int(k)
	}
	st[0], st[1], st[2], st[3] = x0, x1, x2, x3
	l[0] = uint8(e0>>tfShift) & (flatSyms - 1)
	l[1] = uint8(e1>>tfShift) & (flatSyms - 1)
	l[2] = uint8(e2>>tfShift) & (flatSyms - 1)
	l[3] = uint8(e3>>tfShift) & (flatSyms - 1)
	return i, p
}
