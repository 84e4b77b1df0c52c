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

// decodeO0 implements RansDecodeNx16_0 (CRAMcodecs section 3.3): n bytes,
// symbol i from state i mod N.
func decodeO0(src []byte, n, N int) ([]byte, error) {
	if n < 0 || n > MaxSize {
		return nil, fmt.Errorf("%w: order-0 size %d out of range", ErrCorrupt, n)
	}
	r := &reader{b: src}
	var tab [4096]uint32
	if err := readFreqO0(r, &tab); err != nil {
		return nil, err
	}
	var st [32]uint32
	if err := readStates(r, st[:N]); err != nil {
		return nil, err
	}
	out := make([]byte, n)
	var i int
	if N == 4 {
		i = o0Fast4(&tab, &st, r, out)
	} else {
		i = o0Fast32(&tab, &st, r, out)
	}
	// Slow tail: symbol i from state i mod N, with bounds checks.
	for ; i < n; i++ {
		j := i % N
		x := st[j]
		e := tab[x&0xfff]
		out[i] = byte(e)
		x = (e>>20+1)*(x>>12) + (e>>8)&0xfff
		x, err := renormSafe(x, r)
		if err != nil {
			return nil, err
		}
		st[j] = x
	}
	return out, nil
}

// o0Fast4 decodes whole groups of 4 symbols while at least 8 input bytes
// remain (the most one group can consume); it returns how many bytes of out
// it wrote and advances r.
func o0Fast4(tab *[4096]uint32, st *[32]uint32, r *reader, out []byte) int {
	x0, x1, x2, x3 := st[0], st[1], st[2], st[3]
	src := r.b
	p := r.p
	i := 0
	for ; i <= len(out)-4 && p >= 0 && p <= len(src)-8; i += 4 {
		o := (*[4]byte)(out[i : i+4])
		w := (*[8]byte)(src[p : p+8])
		k := uint(0)
		e := tab[x0&0xfff]
		o[0] = byte(e)
		x0, k = renorm8((e>>20+1)*(x0>>12)+(e>>8)&0xfff, w, k)
		e = tab[x1&0xfff]
		o[1] = byte(e)
		x1, k = renorm8((e>>20+1)*(x1>>12)+(e>>8)&0xfff, w, k)
		e = tab[x2&0xfff]
		o[2] = byte(e)
		x2, k = renorm8((e>>20+1)*(x2>>12)+(e>>8)&0xfff, w, k)
		e = tab[x3&0xfff]
		o[3] = byte(e)
		x3, k = renorm8((e>>20+1)*(x3>>12)+(e>>8)&0xfff, w, k)
		p += int(k)
	}
	st[0], st[1], st[2], st[3] = x0, x1, x2, x3
	r.p = p
	return i
}

// renorm8 is the RansRenormNx16 step (CRAMcodecs section 3.2) reading at
// offset k of an 8-byte window. Go compiles the condition to a branch (it
// emits no conditional move for a value that feeds a table index); a
// branch-free mask select measured slower here, unlike in rans4x8.
func renorm8(x uint32, w *[8]byte, k uint) (uint32, uint) {
	y := x<<16 | uint32(w[k&7]) | uint32(w[(k+1)&7])<<8
	k2 := k + 2
	if x < ransL {
		x, k = y, k2
	}
	return x, k
}

// o0Fast32 is o0Fast4 for 32 interleaved states: one flat loop over the
// symbols with the states in memory, each renormalisation checking for two
// input bytes. It stops at the first state that needs bytes beyond the
// input, leaving the error to the caller's tail loop.
func o0Fast32(tab *[4096]uint32, st *[32]uint32, r *reader, out []byte) int {
	src := r.b
	p := r.p
	i := 0
	for ; i < len(out); i++ {
		j := i & 31
		x := st[j]
		e := tab[x&0xfff]
		x = (e>>20+1)*(x>>12) + (e>>8)&0xfff
		if x < ransL {
			if p < 0 || p >= len(src)-1 {
				break
			}
			x = x<<16 | uint32(src[p]) | uint32(src[p+1])<<8
			p += 2
		}
		out[i] = byte(e)
		st[j] = x
	}
	r.p = p
	return i
}

// decodeO1 implements RansDecodeNx16_1 (CRAMcodecs section 3.4): state j
// decodes the j-th of N equal segments with its previous symbol as context,
// and state N-1 also decodes the remainder.
func decodeO1(src []byte, n, N int) ([]byte, error) {
	if n < 0 || n > MaxSize {
		return nil, fmt.Errorf("%w: order-1 size %d out of range", ErrCorrupt, n)
	}
	r := &reader{b: src}
	t := new(o1Tables)
	if err := readFreqO1(r, t); err != nil {
		return nil, err
	}
	var st [32]uint32
	if err := readStates(r, st[:N]); err != nil {
		return nil, err
	}
	out := make([]byte, n)
	q := n / N
	var ctx [32]uint8
	// k counts the symbols decoded in row order: row k/N, state k%N.
	var k int
	switch {
	case N == 4 && t.tfBits == 12:
		k = 4 * o1Fast4x12(t, &st, &ctx, r, out, q)
	case N == 4:
		k = 4 * o1Fast4x10(t, &st, &ctx, r, out, q)
	default:
		k = o1FastN(t, &st, &ctx, r, out, q, N)
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
				return nil, fmt.Errorf("%w: order-1 data uses a context with no frequency table", ErrCorrupt)
			}
		}
	}
	// Slow path: finish the segments, then the remainder with state N-1.
	mask := uint32(1)<<t.tfBits - 1
	step := func(j, pos int) error {
		l := ctx[j]
		if t.absent[l] != 0 {
			return fmt.Errorf("%w: order-1 context %d has no frequency table (output offset %d)", ErrCorrupt, l, pos)
		}
		x := st[j]
		var e uint32
		if t.tfBits == 12 {
			e = t.t12[l][x&mask]
		} else {
			e = t.t10[l][x&mask]
		}
		out[pos] = byte(e)
		ctx[j] = byte(e)
		x = (e>>20+1)*(x>>t.tfBits) + (e>>8)&mask
		x, err := renormSafe(x, r)
		st[j] = x
		return err
	}
	for ; k < N*q; k++ {
		j := k % N
		if err := step(j, j*q+k/N); err != nil {
			return nil, err
		}
	}
	for pos := N * q; pos < n; pos++ {
		if err := step(N-1, pos); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// o1Fast4x12 runs the main order-1 loop for 4 states and 12-bit tables
// while 8 input bytes remain; it returns the number of symbols decoded per
// segment. Contexts are not checked (see decodeO1).
func o1Fast4x12(t *o1Tables, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, q int) int {
	x0, x1, x2, x3 := st[0], st[1], st[2], st[3]
	l0, l1, l2, l3 := ctx[0], ctx[1], ctx[2], ctx[3]
	s0 := out[0:q]
	s1 := out[q : 2*q][:len(s0)]
	s2 := out[2*q : 3*q][:len(s0)]
	s3 := out[3*q : 4*q][:len(s0)]
	src := r.b
	p := r.p
	i := 0
	var e uint32
	tabs := &t.t12
	for ; i < len(s0) && p >= 0 && p <= len(src)-8; i++ {
		w := (*[8]byte)(src[p : p+8])
		k := uint(0)
		e = tabs[l0][x0&0xfff]
		l0 = uint8(e)
		s0[i] = l0
		x0, k = renorm8((e>>20+1)*(x0>>12)+(e>>8)&0xfff, w, k)
		e = tabs[l1][x1&0xfff]
		l1 = uint8(e)
		s1[i] = l1
		x1, k = renorm8((e>>20+1)*(x1>>12)+(e>>8)&0xfff, w, k)
		e = tabs[l2][x2&0xfff]
		l2 = uint8(e)
		s2[i] = l2
		x2, k = renorm8((e>>20+1)*(x2>>12)+(e>>8)&0xfff, w, k)
		e = tabs[l3][x3&0xfff]
		l3 = uint8(e)
		s3[i] = l3
		x3, k = renorm8((e>>20+1)*(x3>>12)+(e>>8)&0xfff, w, k)
		p += int(k)
	}
	st[0], st[1], st[2], st[3] = x0, x1, x2, x3
	ctx[0], ctx[1], ctx[2], ctx[3] = l0, l1, l2, l3
	r.p = p
	return i
}

// o1Fast4x10 is o1Fast4x12 for 10-bit tables.
func o1Fast4x10(t *o1Tables, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, q int) int {
	x0, x1, x2, x3 := st[0], st[1], st[2], st[3]
	l0, l1, l2, l3 := ctx[0], ctx[1], ctx[2], ctx[3]
	s0 := out[0:q]
	s1 := out[q : 2*q][:len(s0)]
	s2 := out[2*q : 3*q][:len(s0)]
	s3 := out[3*q : 4*q][:len(s0)]
	src := r.b
	p := r.p
	i := 0
	var e uint32
	tabs := &t.t10
	for ; i < len(s0) && p >= 0 && p <= len(src)-8; i++ {
		w := (*[8]byte)(src[p : p+8])
		k := uint(0)
		e = tabs[l0][x0&0x3ff]
		l0 = uint8(e)
		s0[i] = l0
		x0, k = renorm8((e>>20+1)*(x0>>10)+(e>>8)&0x3ff, w, k)
		e = tabs[l1][x1&0x3ff]
		l1 = uint8(e)
		s1[i] = l1
		x1, k = renorm8((e>>20+1)*(x1>>10)+(e>>8)&0x3ff, w, k)
		e = tabs[l2][x2&0x3ff]
		l2 = uint8(e)
		s2[i] = l2
		x2, k = renorm8((e>>20+1)*(x2>>10)+(e>>8)&0x3ff, w, k)
		e = tabs[l3][x3&0x3ff]
		l3 = uint8(e)
		s3[i] = l3
		x3, k = renorm8((e>>20+1)*(x3>>10)+(e>>8)&0x3ff, w, k)
		p += int(k)
	}
	st[0], st[1], st[2], st[3] = x0, x1, x2, x3
	ctx[0], ctx[1], ctx[2], ctx[3] = l0, l1, l2, l3
	r.p = p
	return i
}

// o1FastN is the main order-1 loop for N (32) states: one flat loop over
// the symbols in row order (row k/32 of the segments, state k%32) with the
// states in memory, each renormalisation checking for two input bytes. It
// returns the number of symbols decoded, stopping before the first one
// that would read past the input. Contexts are not checked (see decodeO1).
func o1FastN(t *o1Tables, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, q, N int) int {
	if N != 32 || q <= 0 || len(out) < N*q {
		return 0
	}
	if t.tfBits == 12 {
		return o1Flat12(&t.t12, st, ctx, r, out, q)
	}
	return o1Flat10(&t.t10, st, ctx, r, out, q)
}

// o1Flat12 is o1FastN for 12-bit tables.
func o1Flat12(tabs *[256]*[4096]uint32, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, q int) int {
	src := r.b
	p := r.p
	k := 0
	for ; k < 32*q; k++ {
		j := k & 31
		l := ctx[j]
		x := st[j]
		e := tabs[l][x&0xfff]
		x = (e>>20+1)*(x>>12) + (e>>8)&0xfff
		if x < ransL {
			if p < 0 || p >= len(src)-1 {
				break
			}
			x = x<<16 | uint32(src[p]) | uint32(src[p+1])<<8
			p += 2
		}
		st[j] = x
		ctx[j] = uint8(e)
		out[j*q+k>>5] = uint8(e)
	}
	r.p = p
	return k
}

// o1Flat10 is o1FastN for 10-bit tables.
func o1Flat10(tabs *[256]*[1024]uint32, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, q int) int {
	src := r.b
	p := r.p
	k := 0
	for ; k < 32*q; k++ {
		j := k & 31
		l := ctx[j]
		x := st[j]
		e := tabs[l][x&0x3ff]
		x = (e>>20+1)*(x>>10) + (e>>8)&0x3ff
		if x < ransL {
			if p < 0 || p >= len(src)-1 {
				break
			}
			x = x<<16 | uint32(src[p]) | uint32(src[p+1])<<8
			p += 2
		}
		st[j] = x
		ctx[j] = uint8(e)
		out[j*q+k>>5] = uint8(e)
	}
	r.p = p
	return k
}
