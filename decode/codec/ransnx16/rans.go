package ransnx16

import (
	"encoding/binary"
	"fmt"
)

// ransL is the lower bound of a normalised state (CRAMcodecs section 3.2);
// states stay below ransL<<16 = 1<<31.
const ransL = 1 << 15

// readStates reads N little-endian 32-bit initial states (CRAMcodecs
// section 3.2), each within [ransL, 1<<31).
func readStates(r *reader, st []uint32) error {
	if r.remaining() < 4*len(st) {
		return fmt.Errorf("%w: %d rANS states need %d bytes, %d left at offset %d", ErrCorrupt, len(st), 4*len(st), r.remaining(), r.p)
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

// renormSafe implements RansRenormNx16 (CRAMcodecs section 3.2) with a bounds
// check, for the slow tail of a stream.
func renormSafe(x uint32, r *reader) (uint32, error) {
	if x >= ransL {
		return x, nil
	}
	if r.p+2 > len(r.b) {
		return 0, fmt.Errorf("%w: rANS input exhausted at offset %d", ErrCorrupt, r.p)
	}
	x = x<<16 | uint32(r.b[r.p]) | uint32(r.b[r.p+1])<<8
	r.p += 2
	return x, nil
}

// decodeO0 implements RansDecodeNx16_0 (CRAMcodecs section 3.3) into out:
// symbol i from state i mod N. t is working memory for the table.
func decodeO0(out, src []byte, N int, t *o0Table) error {
	r := &reader{b: src}
	if err := readFreqO0(r, t); err != nil {
		return err
	}
	var st [32]uint32
	if err := readStates(r, st[:N]); err != nil {
		return err
	}
	var i int
	if N == 4 {
		var p int
		i, p = o0Fast4(t, &st, r.b, r.p, out)
		if i < len(out)-7 {
			// Fewer than 16 input bytes are left: run the fast loop
			// on a zero-padded copy, which can only overrun the input
			// by reading padding, then check that it did not.
			var pad [32]byte
			rem := copy(pad[:16], r.b[p:])
			d, q := o0Fast4(t, &st, pad[:rem+16], 0, out[i:])
			if q > rem {
				return fmt.Errorf("%w: rANS input exhausted at offset %d", ErrCorrupt, len(r.b))
			}
			i += d
			p += q
		}
		r.p = p
	} else {
		var p int
		i, p = o0Fast32(t, &st, r.b, r.p, out)
		if i < len(out)-31 {
			// As for N == 4, with a row's 64 bytes.
			var pad [128]byte
			rem := copy(pad[:64], r.b[p:])
			d, q := o0Fast32(t, &st, pad[:rem+64], 0, out[i:])
			if q > rem {
				return fmt.Errorf("%w: rANS input exhausted at offset %d", ErrCorrupt, len(r.b))
			}
			i += d
			p += q
		}
		r.p = p
	}
	// Slow tail: symbol i from state i mod N, with bounds checks.
	for ; i < len(out); i++ {
		j := i % N
		x := st[j]
		m := x & 0xfff
		out[i] = t.sym[m]
		x, err := renormSafe(uint32(t.freq[m])*(x>>12)+uint32(t.base[m]), r)
		if err != nil {
			return err
		}
		st[j] = x
	}
	return nil
}

// o0Fast4 decodes groups of 8 symbols (two rounds of the 4 states) into
// out while 16 input bytes remain at offset p of src (the most a group
// consumes); it returns how many symbols it decoded and the new input
// offset. The renormalisation is renormBr, whose load only runs when
// taken: on the packed quality-binned qualities of the benchmark data
// (1.9 bits per symbol) it decodes 13% faster than a select that always
// loads, and 10-20% faster on the corpus order-0 vectors.
func o0Fast4(t *o0Table, st *[32]uint32, src []byte, p int, out []byte) (int, int) {
	x0, x1, x2, x3 := st[0], st[1], st[2], st[3]
	i := 0
	for ; i <= len(out)-8 && p >= 0 && p <= len(src)-16; i += 8 {
		o := (*[8]byte)(out[i : i+8])
		w := (*[16]byte)(src[p : p+16])
		k := uint(0)
		m0, m1, m2, m3 := x0&0xfff, x1&0xfff, x2&0xfff, x3&0xfff
		o[0], o[1], o[2], o[3] = t.sym[m0], t.sym[m1], t.sym[m2], t.sym[m3]
		x0, k = renormBr(uint32(t.freq[m0])*(x0>>12)+uint32(t.base[m0]), w, k)
		x1, k = renormBr(uint32(t.freq[m1])*(x1>>12)+uint32(t.base[m1]), w, k)
		x2, k = renormBr(uint32(t.freq[m2])*(x2>>12)+uint32(t.base[m2]), w, k)
		x3, k = renormBr(uint32(t.freq[m3])*(x3>>12)+uint32(t.base[m3]), w, k)
		m0, m1, m2, m3 = x0&0xfff, x1&0xfff, x2&0xfff, x3&0xfff
		o[4], o[5], o[6], o[7] = t.sym[m0], t.sym[m1], t.sym[m2], t.sym[m3]
		x0, k = renormBr(uint32(t.freq[m0])*(x0>>12)+uint32(t.base[m0]), w, k)
		x1, k = renormBr(uint32(t.freq[m1])*(x1>>12)+uint32(t.base[m1]), w, k)
		x2, k = renormBr(uint32(t.freq[m2])*(x2>>12)+uint32(t.base[m2]), w, k)
		x3, k = renormBr(uint32(t.freq[m3])*(x3>>12)+uint32(t.base[m3]), w, k)
		p += int(k)
	}
	st[0], st[1], st[2], st[3] = x0, x1, x2, x3
	return i, p
}

// o0Fast32 is the order-0 main loop for 32 interleaved states: rows of
// 32 symbols (one per state, in output order) while 64 input bytes remain
// (the most a row consumes), the states loaded and stored in groups of 4.
// It returns how many symbols it decoded and the new input offset.
func o0Fast32(t *o0Table, st *[32]uint32, src []byte, p int, out []byte) (int, int) {
	i := 0
	for ; i <= len(out)-32 && p >= 0 && p <= len(src)-64; i += 32 {
		w := (*[64]byte)(src[p : p+64])
		o := (*[32]byte)(out[i : i+32])
		k := uint(0)
		for z := 0; z < 32; z += 4 {
			s4 := (*[4]uint32)(st[z : z+4])
			o4 := (*[4]byte)(o[z : z+4])
			x0, x1, x2, x3 := s4[0], s4[1], s4[2], s4[3]
			m0, m1, m2, m3 := x0&0xfff, x1&0xfff, x2&0xfff, x3&0xfff
			o4[0], o4[1], o4[2], o4[3] = t.sym[m0], t.sym[m1], t.sym[m2], t.sym[m3]
			x0 = uint32(t.freq[m0])*(x0>>12) + uint32(t.base[m0])
			x1 = uint32(t.freq[m1])*(x1>>12) + uint32(t.base[m1])
			x2 = uint32(t.freq[m2])*(x2>>12) + uint32(t.base[m2])
			x3 = uint32(t.freq[m3])*(x3>>12) + uint32(t.base[m3])
			x0, k = renormBr64(x0, w, k)
			x1, k = renormBr64(x1, w, k)
			x2, k = renormBr64(x2, w, k)
			x3, k = renormBr64(x3, w, k)
			s4[0], s4[1], s4[2], s4[3] = x0, x1, x2, x3
		}
		p += int(k)
	}
	return i, p
}

// renormMask is renormBr with the choice made by a mask (m is all ones
// exactly when x < ransL, computed in 64 bits so that it holds for any
// x). It lengthens each state's dependency chain, so the branch is usually
// faster; see o1Fast4x10Mask for where it is not.
func renormMask(x uint32, w *[16]byte, k uint) (uint32, uint) {
	m := uint32(int64(uint64(x)-ransL) >> 63)
	y := x<<16 | uint32(w[k&15]) | uint32(w[(k+1)&15])<<8
	x ^= (x ^ y) & m
	k += uint(m & 2)
	return x, k
}

// o1Kind selects an order-1 main loop.
type o1Kind int

const (
	fast4x10 o1Kind = iota
	fast4x10Mask
	fast4x12
	fast4x12Flat
	row10
	row10Mask
	row12
	row12Flat
)

// o1Run runs the main loop kind from row i (with direct calls, so that
// escape analysis keeps the caller's state on the stack) and returns the
// row reached.
func o1Run(kind o1Kind, t *o1Tables, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, i, q int) int {
	switch kind {
	case fast4x10:
		return o1Fast4x10(t, st, ctx, r, out, i, q)
	case fast4x10Mask:
		return o1Fast4x10Mask(t, st, ctx, r, out, i, q)
	case fast4x12:
		return o1Fast4x12(t, st, ctx, r, out, i, q)
	case fast4x12Flat:
		return o1Fast4x12Flat(t, st, ctx, r, out, i, q)
	case row10:
		return o1Row10(t, st, ctx, r, out, i, q)
	case row12Flat:
		return o1Row12Flat(t, st, ctx, r, out, i, q)
	case row10Mask:
		return o1Row10Mask(t, st, ctx, r, out, i, q)
	default:
		return o1Row12(t, st, ctx, r, out, i, q)
	}
}

// decodeO1 implements RansDecodeNx16_1 (CRAMcodecs section 3.4) into out:
// state j decodes the j-th of N equal segments with its previous symbol as
// context, and state N-1 also decodes the remainder. s is working memory.
func decodeO1(out, src []byte, N int, s *scratch) error {
	if s.o1 == nil {
		s.o1 = new(o1Tables)
	}
	t := s.o1
	r := &reader{b: src}
	if err := readFreqO1(r, t, s); err != nil {
		return err
	}
	var st [32]uint32
	if err := readStates(r, st[:N]); err != nil {
		return err
	}
	n := len(out)
	q := n / N
	var ctx [32]uint8
	// k counts the symbols decoded in row order: row k/N, state k%N.
	var k int
	if N == 4 || N == 32 && q > 0 {
		// Pick the main loop (see o1Fast4x10Mask and o1Row10Mask).
		var kind o1Kind
		highEntropy := 16*int64(r.remaining()) > 5*int64(n)
		switch {
		case N == 4 && t.tfBits == 12 && t.flat12:
			kind = fast4x12Flat
		case N == 4 && t.tfBits == 12:
			kind = fast4x12
		case N == 4 && highEntropy:
			kind = fast4x10Mask
		case N == 4:
			kind = fast4x10
		case t.tfBits == 12 && t.flat12:
			kind = row12Flat
		case t.tfBits == 12:
			kind = row12
		case highEntropy:
			kind = row10Mask
		default:
			kind = row10
		}
		i := o1Run(kind, t, &st, &ctx, r, out, 0, q)
		if i < q {
			// Fewer than 64 input bytes are left: run the loop on a
			// zero-padded copy, which can only overrun the input by
			// reading padding, then check that it did not.
			var pad [128]byte
			rem := copy(pad[:64], r.b[r.p:])
			pr := reader{b: pad[:rem+64]}
			i = o1Run(kind, t, &st, &ctx, &pr, out, i, q)
			if pr.p > rem {
				return fmt.Errorf("%w: rANS input exhausted at offset %d", ErrCorrupt, len(r.b))
			}
			r.p += pr.p
		}
		k = N * i
	}
	// The fast loops do not check contexts; when some context lacks a
	// table, check the ones they used: 0, then each segment's symbols
	// but its last.
	if !t.closed {
		for j := 0; j < N; j++ {
			rows := k / N
			if j < k%N {
				rows++
			}
			if rows == 0 {
				continue
			}
			used := t.absent[0]
			for _, c := range out[j*q : j*q+rows-1] {
				used |= t.absent[c]
			}
			if used != 0 {
				return fmt.Errorf("%w: order-1 data uses a context with no frequency table", ErrCorrupt)
			}
		}
	}
	// Slow path: finish the segments, then the remainder with state N-1.
	step := func(j, pos int) error {
		l := int(ctx[j])
		if t.absent[l] != 0 {
			return fmt.Errorf("%w: order-1 context %d has no frequency table (output offset %d)", ErrCorrupt, l, pos)
		}
		x := st[j]
		var c byte
		if t.tfBits == 10 {
			e := t.t10[l<<10|int(x&0x3ff)]
			c = byte(e >> 10)
			x = (e>>18)*(x>>10) + e&0x3ff
		} else if t.flat12 {
			e := t.rows12[l][x&0xfff]
			c = byte(e>>12) & (flat12Syms - 1)
			x = (e>>18)*(x>>12) + e&0xfff
		} else {
			e := t.rows12[l][x&0xfff]
			c = byte(e >> 12)
			x = (e>>20+1)*(x>>12) + e&0xfff
		}
		out[pos] = c
		ctx[j] = c
		x, err := renormSafe(x, r)
		st[j] = x
		return err
	}
	for ; k < N*q; k++ {
		j := k % N
		if err := step(j, j*q+k/N); err != nil {
			return err
		}
	}
	for pos := N * q; pos < n; pos++ {
		if err := step(N-1, pos); err != nil {
			return err
		}
	}
	return nil
}

// renormBr is RansRenormNx16 (CRAMcodecs section 3.2) reading at offset k
// (always even) of a 16-byte window, as a branch around the load, which
// predicts well on all but high-entropy data (see o1Fast4x10Mask).
func renormBr(x uint32, w *[16]byte, k uint) (uint32, uint) {
	if x < ransL {
		j := k & 14
		x = x<<16 | uint32(w[j]) | uint32(w[j+1])<<8
		k += 2
	}
	return x, k
}

// renormBr64 is renormBr over the 64-byte window of a row of 32 states.
func renormBr64(x uint32, w *[64]byte, k uint) (uint32, uint) {
	if x < ransL {
		j := k & 62
		x = x<<16 | uint32(w[j]) | uint32(w[j+1])<<8
		k += 2
	}
	return x, k
}

// o1Fast4x10 runs the order-1 main loop for 4 states and 10-bit tables
// over the 4 segments of q symbols, from position i of each, two rounds of
// 4 symbols at a time while 16 input bytes remain (the most two rounds
// consume); it returns the position reached in each segment and leaves
// the states, contexts and input offset for the tail. Contexts are not
// checked (see decodeO1).
//
// Each state keeps the entry it decoded last, whose symbol field is the
// next row of the flat table (see pack10): a symbol costs one load on its
// state's dependency chain, and the renormalisation load sits behind a
// branch.
func o1Fast4x10(t *o1Tables, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, i, q int) int {
	x0, x1, x2, x3 := st[0], st[1], st[2], st[3]
	e0, e1, e2, e3 := uint32(ctx[0])<<10, uint32(ctx[1])<<10, uint32(ctx[2])<<10, uint32(ctx[3])<<10
	s0 := out[0:q]
	s1 := out[q : 2*q][:len(s0)]
	s2 := out[2*q : 3*q][:len(s0)]
	s3 := out[3*q : 4*q][:len(s0)]
	src := r.b
	p := r.p
	tab := t.t10
	for ; i >= 0 && i < len(s0)-1 && p >= 0 && p <= len(src)-16; i += 2 {
		w := (*[16]byte)(src[p : p+16])
		k := uint(0)
		e0 = tab[e0&0x3fc00+x0&0x3ff]
		e1 = tab[e1&0x3fc00+x1&0x3ff]
		e2 = tab[e2&0x3fc00+x2&0x3ff]
		e3 = tab[e3&0x3fc00+x3&0x3ff]
		s0[i] = uint8(e0 >> 10)
		s1[i] = uint8(e1 >> 10)
		s2[i] = uint8(e2 >> 10)
		s3[i] = uint8(e3 >> 10)
		x0 = (e0>>18)*(x0>>10) + e0&0x3ff
		x1 = (e1>>18)*(x1>>10) + e1&0x3ff
		x2 = (e2>>18)*(x2>>10) + e2&0x3ff
		x3 = (e3>>18)*(x3>>10) + e3&0x3ff
		x0, k = renormBr(x0, w, k)
		x1, k = renormBr(x1, w, k)
		x2, k = renormBr(x2, w, k)
		x3, k = renormBr(x3, w, k)
		e0 = tab[e0&0x3fc00+x0&0x3ff]
		e1 = tab[e1&0x3fc00+x1&0x3ff]
		e2 = tab[e2&0x3fc00+x2&0x3ff]
		e3 = tab[e3&0x3fc00+x3&0x3ff]
		s0[i+1] = uint8(e0 >> 10)
		s1[i+1] = uint8(e1 >> 10)
		s2[i+1] = uint8(e2 >> 10)
		s3[i+1] = uint8(e3 >> 10)
		x0 = (e0>>18)*(x0>>10) + e0&0x3ff
		x1 = (e1>>18)*(x1>>10) + e1&0x3ff
		x2 = (e2>>18)*(x2>>10) + e2&0x3ff
		x3 = (e3>>18)*(x3>>10) + e3&0x3ff
		x0, k = renormBr(x0, w, k)
		x1, k = renormBr(x1, w, k)
		x2, k = renormBr(x2, w, k)
		x3, k = renormBr(x3, w, k)
		p += int(k)
	}
	st[0], st[1], st[2], st[3] = x0, x1, x2, x3
	ctx[0], ctx[1], ctx[2], ctx[3] = uint8(e0>>10), uint8(e1>>10), uint8(e2>>10), uint8(e3>>10)
	r.p = p
	return i
}

// o1Fast4x10Mask is o1Fast4x10 with renormMask, one round per iteration,
// for data above about 2.5 bits per symbol, where the branch mispredicts
// often enough for the mask to win: the RLE+PACK literals of the quality
// stream of htscodecs' default CRAM 3.1 profile (1.5 MB of qualities
// become 0.42 MB of literals), and the high-entropy corpus vectors when
// decoded in turn (6% over the branch; see o1Row10Mask on benchmarks that
// repeat one stream).
func o1Fast4x10Mask(t *o1Tables, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, i, q int) int {
	x0, x1, x2, x3 := st[0], st[1], st[2], st[3]
	e0, e1, e2, e3 := uint32(ctx[0])<<10, uint32(ctx[1])<<10, uint32(ctx[2])<<10, uint32(ctx[3])<<10
	s0 := out[0:q]
	s1 := out[q : 2*q][:len(s0)]
	s2 := out[2*q : 3*q][:len(s0)]
	s3 := out[3*q : 4*q][:len(s0)]
	src := r.b
	p := r.p
	tab := t.t10
	for ; i >= 0 && i < len(s0) && p >= 0 && p <= len(src)-16; i++ {
		w := (*[16]byte)(src[p : p+16])
		k := uint(0)
		e0 = tab[e0&0x3fc00+x0&0x3ff]
		e1 = tab[e1&0x3fc00+x1&0x3ff]
		e2 = tab[e2&0x3fc00+x2&0x3ff]
		e3 = tab[e3&0x3fc00+x3&0x3ff]
		s0[i] = uint8(e0 >> 10)
		s1[i] = uint8(e1 >> 10)
		s2[i] = uint8(e2 >> 10)
		s3[i] = uint8(e3 >> 10)
		x0, k = renormMask((e0>>18)*(x0>>10)+e0&0x3ff, w, k)
		x1, k = renormMask((e1>>18)*(x1>>10)+e1&0x3ff, w, k)
		x2, k = renormMask((e2>>18)*(x2>>10)+e2&0x3ff, w, k)
		x3, k = renormMask((e3>>18)*(x3>>10)+e3&0x3ff, w, k)
		p += int(k)
	}
	st[0], st[1], st[2], st[3] = x0, x1, x2, x3
	ctx[0], ctx[1], ctx[2], ctx[3] = uint8(e0>>10), uint8(e1>>10), uint8(e2>>10), uint8(e3>>10)
	r.p = p
	return i
}

// o1Fast4x12 is o1Fast4x10 for 12-bit tables, whose rows are reached
// through rows12.
func o1Fast4x12(t *o1Tables, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, i, q int) int {
	x0, x1, x2, x3 := st[0], st[1], st[2], st[3]
	l0, l1, l2, l3 := ctx[0], ctx[1], ctx[2], ctx[3]
	s0 := out[0:q]
	s1 := out[q : 2*q][:len(s0)]
	s2 := out[2*q : 3*q][:len(s0)]
	s3 := out[3*q : 4*q][:len(s0)]
	src := r.b
	p := r.p
	var e0, e1, e2, e3 uint32
	tabs := &t.rows12
	for ; i >= 0 && i < len(s0)-1 && p >= 0 && p <= len(src)-16; i += 2 {
		w := (*[16]byte)(src[p : p+16])
		k := uint(0)
		e0 = tabs[l0][x0&0xfff]
		e1 = tabs[l1][x1&0xfff]
		e2 = tabs[l2][x2&0xfff]
		e3 = tabs[l3][x3&0xfff]
		l0, l1, l2, l3 = uint8(e0>>12), uint8(e1>>12), uint8(e2>>12), uint8(e3>>12)
		s0[i], s1[i], s2[i], s3[i] = l0, l1, l2, l3
		x0, k = renormBr((e0>>20+1)*(x0>>12)+e0&0xfff, w, k)
		x1, k = renormBr((e1>>20+1)*(x1>>12)+e1&0xfff, w, k)
		x2, k = renormBr((e2>>20+1)*(x2>>12)+e2&0xfff, w, k)
		x3, k = renormBr((e3>>20+1)*(x3>>12)+e3&0xfff, w, k)
		e0 = tabs[l0][x0&0xfff]
		e1 = tabs[l1][x1&0xfff]
		e2 = tabs[l2][x2&0xfff]
		e3 = tabs[l3][x3&0xfff]
		l0, l1, l2, l3 = uint8(e0>>12), uint8(e1>>12), uint8(e2>>12), uint8(e3>>12)
		s0[i+1], s1[i+1], s2[i+1], s3[i+1] = l0, l1, l2, l3
		x0, k = renormBr((e0>>20+1)*(x0>>12)+e0&0xfff, w, k)
		x1, k = renormBr((e1>>20+1)*(x1>>12)+e1&0xfff, w, k)
		x2, k = renormBr((e2>>20+1)*(x2>>12)+e2&0xfff, w, k)
		x3, k = renormBr((e3>>20+1)*(x3>>12)+e3&0xfff, w, k)
		p += int(k)
	}
	st[0], st[1], st[2], st[3] = x0, x1, x2, x3
	ctx[0], ctx[1], ctx[2], ctx[3] = l0, l1, l2, l3
	r.p = p
	return i
}

// o1Row10 runs the order-1 main loop for 32 states and 10-bit tables,
// one row (a symbol of each of the 32 segments of q symbols) at a time
// from row i, while 64 input bytes remain (the most a row consumes); it
// returns the row reached and leaves the states, contexts and input
// offset for the tail. Contexts are not checked (see decodeO1). As in
// o1Fast4x10, each state keeps its last entry, which locates its next row
// of the flat table.
func o1Row10(t *o1Tables, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, i, q int) int {
	var last [32]uint32
	for j := range last {
		last[j] = uint32(ctx[j]) << 10
	}
	src := r.b
	p := r.p
	tab := t.t10
	for ; i >= 0 && i < q && p >= 0 && p <= len(src)-64; i++ {
		w := (*[64]byte)(src[p : p+64])
		k := uint(0)
		o := out[i:]
		for z := 0; z < 32; z += 4 {
			s4 := (*[4]uint32)(st[z : z+4])
			l4 := (*[4]uint32)(last[z : z+4])
			x0, x1, x2, x3 := s4[0], s4[1], s4[2], s4[3]
			e0 := tab[l4[0]&0x3fc00+x0&0x3ff]
			e1 := tab[l4[1]&0x3fc00+x1&0x3ff]
			e2 := tab[l4[2]&0x3fc00+x2&0x3ff]
			e3 := tab[l4[3]&0x3fc00+x3&0x3ff]
			l4[0], l4[1], l4[2], l4[3] = e0, e1, e2, e3
			o[z*q] = uint8(e0 >> 10)
			o[(z+1)*q] = uint8(e1 >> 10)
			o[(z+2)*q] = uint8(e2 >> 10)
			o[(z+3)*q] = uint8(e3 >> 10)
			x0, k = renormBr64((e0>>18)*(x0>>10)+e0&0x3ff, w, k)
			x1, k = renormBr64((e1>>18)*(x1>>10)+e1&0x3ff, w, k)
			x2, k = renormBr64((e2>>18)*(x2>>10)+e2&0x3ff, w, k)
			x3, k = renormBr64((e3>>18)*(x3>>10)+e3&0x3ff, w, k)
			s4[0], s4[1], s4[2], s4[3] = x0, x1, x2, x3
		}
		p += int(k)
	}
	for j := range last {
		ctx[j] = uint8(last[j] >> 10)
	}
	r.p = p
	return i
}

// o1Row10Mask is o1Row10 with renormMask64, for data above about 2.5
// bits per symbol. Measured decoding the corpus X32 vectors in turn (as a
// reader decodes blocks: each once), this choice gave 371 MB/s, the mask
// alone 324 and the branch alone 319. A benchmark that repeats one stream
// of some 100,000 symbols misleads here: the branch predictor learns that
// stream's renormalisations, and the branch then looks up to 1.8 times
// faster on high-entropy data.
func o1Row10Mask(t *o1Tables, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, i, q int) int {
	var last [32]uint32
	for j := range last {
		last[j] = uint32(ctx[j]) << 10
	}
	src := r.b
	p := r.p
	tab := t.t10
	for ; i >= 0 && i < q && p >= 0 && p <= len(src)-64; i++ {
		w := (*[64]byte)(src[p : p+64])
		k := uint(0)
		o := out[i:]
		for z := 0; z < 32; z += 4 {
			s4 := (*[4]uint32)(st[z : z+4])
			l4 := (*[4]uint32)(last[z : z+4])
			x0, x1, x2, x3 := s4[0], s4[1], s4[2], s4[3]
			e0 := tab[l4[0]&0x3fc00+x0&0x3ff]
			e1 := tab[l4[1]&0x3fc00+x1&0x3ff]
			e2 := tab[l4[2]&0x3fc00+x2&0x3ff]
			e3 := tab[l4[3]&0x3fc00+x3&0x3ff]
			l4[0], l4[1], l4[2], l4[3] = e0, e1, e2, e3
			o[z*q] = uint8(e0 >> 10)
			o[(z+1)*q] = uint8(e1 >> 10)
			o[(z+2)*q] = uint8(e2 >> 10)
			o[(z+3)*q] = uint8(e3 >> 10)
			x0, k = renormMask64((e0>>18)*(x0>>10)+e0&0x3ff, w, k)
			x1, k = renormMask64((e1>>18)*(x1>>10)+e1&0x3ff, w, k)
			x2, k = renormMask64((e2>>18)*(x2>>10)+e2&0x3ff, w, k)
			x3, k = renormMask64((e3>>18)*(x3>>10)+e3&0x3ff, w, k)
			s4[0], s4[1], s4[2], s4[3] = x0, x1, x2, x3
		}
		p += int(k)
	}
	for j := range last {
		ctx[j] = uint8(last[j] >> 10)
	}
	r.p = p
	return i
}

// renormMask64 is renormMask over the 64-byte window of a row of 32
// states.
func renormMask64(x uint32, w *[64]byte, k uint) (uint32, uint) {
	m := uint32(int64(uint64(x)-ransL) >> 63)
	y := x<<16 | uint32(w[k&63]) | uint32(w[(k+1)&63])<<8
	x ^= (x ^ y) & m
	k += uint(m & 2)
	return x, k
}

// o1Row12 is o1Row10 for 12-bit tables, whose rows are reached through
// rows12.
func o1Row12(t *o1Tables, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, i, q int) int {
	src := r.b
	p := r.p
	tabs := &t.rows12
	for ; i >= 0 && i < q && p >= 0 && p <= len(src)-64; i++ {
		w := (*[64]byte)(src[p : p+64])
		k := uint(0)
		o := out[i:]
		for z := 0; z < 32; z += 4 {
			s4 := (*[4]uint32)(st[z : z+4])
			c4 := (*[4]uint8)(ctx[z : z+4])
			x0, x1, x2, x3 := s4[0], s4[1], s4[2], s4[3]
			e0 := tabs[c4[0]][x0&0xfff]
			e1 := tabs[c4[1]][x1&0xfff]
			e2 := tabs[c4[2]][x2&0xfff]
			e3 := tabs[c4[3]][x3&0xfff]
			c4[0], c4[1], c4[2], c4[3] = uint8(e0>>12), uint8(e1>>12), uint8(e2>>12), uint8(e3>>12)
			o[z*q] = uint8(e0 >> 12)
			o[(z+1)*q] = uint8(e1 >> 12)
			o[(z+2)*q] = uint8(e2 >> 12)
			o[(z+3)*q] = uint8(e3 >> 12)
			x0, k = renormBr64((e0>>20+1)*(x0>>12)+e0&0xfff, w, k)
			x1, k = renormBr64((e1>>20+1)*(x1>>12)+e1&0xfff, w, k)
			x2, k = renormBr64((e2>>20+1)*(x2>>12)+e2&0xfff, w, k)
			x3, k = renormBr64((e3>>20+1)*(x3>>12)+e3&0xfff, w, k)
			s4[0], s4[1], s4[2], s4[3] = x0, x1, x2, x3
		}
		p += int(k)
	}
	r.p = p
	return i
}

// o1Fast4x12Flat is o1Fast4x10 for 12-bit tables in t12 (see flat12).
func o1Fast4x12Flat(t *o1Tables, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, i, q int) int {
	x0, x1, x2, x3 := st[0], st[1], st[2], st[3]
	e0, e1, e2, e3 := uint32(ctx[0])<<12, uint32(ctx[1])<<12, uint32(ctx[2])<<12, uint32(ctx[3])<<12
	s0 := out[0:q]
	s1 := out[q : 2*q][:len(s0)]
	s2 := out[2*q : 3*q][:len(s0)]
	s3 := out[3*q : 4*q][:len(s0)]
	src := r.b
	p := r.p
	tab := t.t12
	for ; i >= 0 && i < len(s0)-1 && p >= 0 && p <= len(src)-16; i += 2 {
		w := (*[16]byte)(src[p : p+16])
		k := uint(0)
		e0 = tab[e0&0x3f000+x0&0xfff]
		e1 = tab[e1&0x3f000+x1&0xfff]
		e2 = tab[e2&0x3f000+x2&0xfff]
		e3 = tab[e3&0x3f000+x3&0xfff]
		s0[i] = uint8(e0>>12) & (flat12Syms - 1)
		s1[i] = uint8(e1>>12) & (flat12Syms - 1)
		s2[i] = uint8(e2>>12) & (flat12Syms - 1)
		s3[i] = uint8(e3>>12) & (flat12Syms - 1)
		x0, k = renormBr((e0>>18)*(x0>>12)+e0&0xfff, w, k)
		x1, k = renormBr((e1>>18)*(x1>>12)+e1&0xfff, w, k)
		x2, k = renormBr((e2>>18)*(x2>>12)+e2&0xfff, w, k)
		x3, k = renormBr((e3>>18)*(x3>>12)+e3&0xfff, w, k)
		e0 = tab[e0&0x3f000+x0&0xfff]
		e1 = tab[e1&0x3f000+x1&0xfff]
		e2 = tab[e2&0x3f000+x2&0xfff]
		e3 = tab[e3&0x3f000+x3&0xfff]
		s0[i+1] = uint8(e0>>12) & (flat12Syms - 1)
		s1[i+1] = uint8(e1>>12) & (flat12Syms - 1)
		s2[i+1] = uint8(e2>>12) & (flat12Syms - 1)
		s3[i+1] = uint8(e3>>12) & (flat12Syms - 1)
		x0, k = renormBr((e0>>18)*(x0>>12)+e0&0xfff, w, k)
		x1, k = renormBr((e1>>18)*(x1>>12)+e1&0xfff, w, k)
		x2, k = renormBr((e2>>18)*(x2>>12)+e2&0xfff, w, k)
		x3, k = renormBr((e3>>18)*(x3>>12)+e3&0xfff, w, k)
		p += int(k)
	}
	st[0], st[1], st[2], st[3] = x0, x1, x2, x3
	ctx[0], ctx[1], ctx[2], ctx[3] = uint8(e0>>12)&(flat12Syms-1), uint8(e1>>12)&(flat12Syms-1), uint8(e2>>12)&(flat12Syms-1), uint8(e3>>12)&(flat12Syms-1)
	r.p = p
	return i
}

// o1Row12Flat is o1Row10 for 12-bit tables in t12 (see flat12).
func o1Row12Flat(t *o1Tables, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, i, q int) int {
	var last [32]uint32
	for j := range last {
		last[j] = uint32(ctx[j]) << 12
	}
	src := r.b
	p := r.p
	tab := t.t12
	for ; i >= 0 && i < q && p >= 0 && p <= len(src)-64; i++ {
		w := (*[64]byte)(src[p : p+64])
		k := uint(0)
		o := out[i:]
		for z := 0; z < 32; z += 4 {
			s4 := (*[4]uint32)(st[z : z+4])
			l4 := (*[4]uint32)(last[z : z+4])
			x0, x1, x2, x3 := s4[0], s4[1], s4[2], s4[3]
			e0 := tab[l4[0]&0x3f000+x0&0xfff]
			e1 := tab[l4[1]&0x3f000+x1&0xfff]
			e2 := tab[l4[2]&0x3f000+x2&0xfff]
			e3 := tab[l4[3]&0x3f000+x3&0xfff]
			l4[0], l4[1], l4[2], l4[3] = e0, e1, e2, e3
			o[z*q] = uint8(e0>>12) & (flat12Syms - 1)
			o[(z+1)*q] = uint8(e1>>12) & (flat12Syms - 1)
			o[(z+2)*q] = uint8(e2>>12) & (flat12Syms - 1)
			o[(z+3)*q] = uint8(e3>>12) & (flat12Syms - 1)
			x0, k = renormBr64((e0>>18)*(x0>>12)+e0&0xfff, w, k)
			x1, k = renormBr64((e1>>18)*(x1>>12)+e1&0xfff, w, k)
			x2, k = renormBr64((e2>>18)*(x2>>12)+e2&0xfff, w, k)
			x3, k = renormBr64((e3>>18)*(x3>>12)+e3&0xfff, w, k)
			s4[0], s4[1], s4[2], s4[3] = x0, x1, x2, x3
		}
		p += int(k)
	}
	for j := range last {
		ctx[j] = uint8(last[j]>>12) & (flat12Syms - 1)
	}
	r.p = p
	return i
}
