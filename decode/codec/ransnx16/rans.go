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
	for ; i+4 <= len(out) && p+8 <= len(src); i += 4 {
		o := (*[4]byte)(out[i : i+4])
		w := (*[8]byte)(src[p : p+8])
		e0 := tab[x0&0xfff]
		e1 := tab[x1&0xfff]
		e2 := tab[x2&0xfff]
		e3 := tab[x3&0xfff]
		o[0] = byte(e0)
		o[1] = byte(e1)
		o[2] = byte(e2)
		o[3] = byte(e3)
		x0 = (e0>>20+1)*(x0>>12) + (e0>>8)&0xfff
		x1 = (e1>>20+1)*(x1>>12) + (e1>>8)&0xfff
		x2 = (e2>>20+1)*(x2>>12) + (e2>>8)&0xfff
		x3 = (e3>>20+1)*(x3>>12) + (e3>>8)&0xfff
		k := uint(0)
		x0, k = renorm8(x0, w, k)
		x1, k = renorm8(x1, w, k)
		x2, k = renorm8(x2, w, k)
		x3, k = renorm8(x3, w, k)
		p += int(k)
	}
	st[0], st[1], st[2], st[3] = x0, x1, x2, x3
	r.p = p
	return i
}

// renorm8 is the RansRenormNx16 step reading at offset k of an 8-byte
// window, written so the compiler can use conditional moves.
func renorm8(x uint32, w *[8]byte, k uint) (uint32, uint) {
	y := x<<16 | uint32(w[k&7]) | uint32(w[(k+1)&7])<<8
	k2 := k + 2
	if x < ransL {
		x, k = y, k2
	}
	return x, k
}

// renorm64 is renorm8 over a 64-byte window (32 states).
func renorm64(x uint32, w *[64]byte, k uint) (uint32, uint) {
	y := x<<16 | uint32(w[k&63]) | uint32(w[(k+1)&63])<<8
	k2 := k + 2
	if x < ransL {
		x, k = y, k2
	}
	return x, k
}

// o0Fast32 is o0Fast4 for 32 interleaved states.
func o0Fast32(tab *[4096]uint32, st *[32]uint32, r *reader, out []byte) int {
	src := r.b
	p := r.p
	i := 0
	for ; i+32 <= len(out) && p+64 <= len(src); i += 32 {
		o := (*[32]byte)(out[i : i+32])
		w := (*[64]byte)(src[p : p+64])
		k := uint(0)
		for j := 0; j < 32; j++ {
			x := st[j]
			e := tab[x&0xfff]
			o[j] = byte(e)
			x = (e>>20+1)*(x>>12) + (e>>8)&0xfff
			st[j], k = renorm64(x, w, k)
		}
		p += int(k)
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
	var bad uint8
	var i int
	switch {
	case N == 4 && t.tfBits == 12:
		i, bad = o1Fast4x12(t, &st, &ctx, r, out, q)
	case N == 4:
		i, bad = o1Fast4x10(t, &st, &ctx, r, out, q)
	default:
		i, bad = o1FastN(t, &st, &ctx, r, out, q, N)
	}
	if bad != 0 {
		return nil, fmt.Errorf("%w: order-1 data uses a context with no frequency table", ErrCorrupt)
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
	for ; i < q; i++ {
		for j := 0; j < N; j++ {
			if err := step(j, j*q+i); err != nil {
				return nil, err
			}
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
// segment and a non-zero value if a context without a table was used.
func o1Fast4x12(t *o1Tables, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, q int) (int, uint8) {
	x0, x1, x2, x3 := st[0], st[1], st[2], st[3]
	l0, l1, l2, l3 := ctx[0], ctx[1], ctx[2], ctx[3]
	s0 := out[0:q]
	s1 := out[q : 2*q][:len(s0)]
	s2 := out[2*q : 3*q][:len(s0)]
	s3 := out[3*q : 4*q][:len(s0)]
	src := r.b
	p := r.p
	var bad uint8
	i := 0
	for ; i < len(s0) && p+8 <= len(src); i++ {
		w := (*[8]byte)(src[p : p+8])
		bad |= t.absent[l0] | t.absent[l1] | t.absent[l2] | t.absent[l3]
		e0 := t.t12[l0][x0&0xfff]
		e1 := t.t12[l1][x1&0xfff]
		e2 := t.t12[l2][x2&0xfff]
		e3 := t.t12[l3][x3&0xfff]
		l0, l1, l2, l3 = uint8(e0), uint8(e1), uint8(e2), uint8(e3)
		s0[i], s1[i], s2[i], s3[i] = l0, l1, l2, l3
		x0 = (e0>>20+1)*(x0>>12) + (e0>>8)&0xfff
		x1 = (e1>>20+1)*(x1>>12) + (e1>>8)&0xfff
		x2 = (e2>>20+1)*(x2>>12) + (e2>>8)&0xfff
		x3 = (e3>>20+1)*(x3>>12) + (e3>>8)&0xfff
		k := uint(0)
		x0, k = renorm8(x0, w, k)
		x1, k = renorm8(x1, w, k)
		x2, k = renorm8(x2, w, k)
		x3, k = renorm8(x3, w, k)
		p += int(k)
	}
	st[0], st[1], st[2], st[3] = x0, x1, x2, x3
	ctx[0], ctx[1], ctx[2], ctx[3] = l0, l1, l2, l3
	r.p = p
	return i, bad
}

// o1Fast4x10 is o1Fast4x12 for 10-bit tables.
func o1Fast4x10(t *o1Tables, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, q int) (int, uint8) {
	x0, x1, x2, x3 := st[0], st[1], st[2], st[3]
	l0, l1, l2, l3 := ctx[0], ctx[1], ctx[2], ctx[3]
	s0 := out[0:q]
	s1 := out[q : 2*q][:len(s0)]
	s2 := out[2*q : 3*q][:len(s0)]
	s3 := out[3*q : 4*q][:len(s0)]
	src := r.b
	p := r.p
	var bad uint8
	i := 0
	for ; i < len(s0) && p+8 <= len(src); i++ {
		w := (*[8]byte)(src[p : p+8])
		bad |= t.absent[l0] | t.absent[l1] | t.absent[l2] | t.absent[l3]
		e0 := t.t10[l0][x0&0x3ff]
		e1 := t.t10[l1][x1&0x3ff]
		e2 := t.t10[l2][x2&0x3ff]
		e3 := t.t10[l3][x3&0x3ff]
		l0, l1, l2, l3 = uint8(e0), uint8(e1), uint8(e2), uint8(e3)
		s0[i], s1[i], s2[i], s3[i] = l0, l1, l2, l3
		x0 = (e0>>20+1)*(x0>>10) + (e0>>8)&0x3ff
		x1 = (e1>>20+1)*(x1>>10) + (e1>>8)&0x3ff
		x2 = (e2>>20+1)*(x2>>10) + (e2>>8)&0x3ff
		x3 = (e3>>20+1)*(x3>>10) + (e3>>8)&0x3ff
		k := uint(0)
		x0, k = renorm8(x0, w, k)
		x1, k = renorm8(x1, w, k)
		x2, k = renorm8(x2, w, k)
		x3, k = renorm8(x3, w, k)
		p += int(k)
	}
	st[0], st[1], st[2], st[3] = x0, x1, x2, x3
	ctx[0], ctx[1], ctx[2], ctx[3] = l0, l1, l2, l3
	r.p = p
	return i, bad
}

// o1FastN is the main order-1 loop for N (32) states, either table width.
func o1FastN(t *o1Tables, st *[32]uint32, ctx *[32]uint8, r *reader, out []byte, q, N int) (int, uint8) {
	src := r.b
	p := r.p
	var bad uint8
	var pos [32]int
	for j := 0; j < N; j++ {
		pos[j] = j * q
	}
	tfBits := t.tfBits & 31
	mask := uint32(1)<<tfBits - 1
	i := 0
	for ; i < q && p+64 <= len(src); i++ {
		w := (*[64]byte)(src[p : p+64])
		k := uint(0)
		for j := 0; j < N && j < 32; j++ {
			l := ctx[j]
			bad |= t.absent[l]
			x := st[j]
			var e uint32
			if tfBits == 12 {
				e = t.t12[l][x&0xfff]
			} else {
				e = t.t10[l][x&0x3ff]
			}
			ctx[j] = uint8(e)
			out[pos[j]+i] = uint8(e)
			x = (e>>20+1)*(x>>tfBits) + (e>>8)&mask
			st[j], k = renorm64(x, w, k)
		}
		p += int(k)
	}
	r.p = p
	return i, bad
}
