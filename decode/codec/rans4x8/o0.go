package rans4x8

import (
	"fmt"
	"sync"
)

// o0Table is the order-0 decode table of RansDecode0 (CRAMcodecs section
// 2.4), split by field as the decode step uses them: for frequency slot
// m, sym[m] is the symbol, freq[m] its frequency and base[m] the slot's
// offset within the symbol's range, so x' = freq[m]*(x>>12) + base[m].
// Three independent loads measured faster than one packed 32-bit entry
// whose fields then need shifting and masking.
type o0Table struct {
	sym  [totFreq]uint8
	freq [totFreq]uint16
	base [totFreq]uint16
}

// o0Pool recycles order-0 tables; readO0Table writes every slot before a
// decode reads it, so a recycled table needs no clearing.
var o0Pool = sync.Pool{New: func() any { return new(o0Table) }}

// readO0Table implements ReadFrequencies0 (CRAMcodecs section 2.4) into
// an order-0 decode table. As htscodecs accepts, the total may be 4095,
// in which case slot 4095 extends the last symbol.
func readO0Table(r *reader, t *o0Table) error {
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
		if f > totFreq-x {
			return fmt.Errorf("%w: frequencies at offset %d exceed %d (symbol %d)", ErrCorrupt, start, totFreq, sym)
		}
		if f > 0 {
			fill(t.sym[x:x+f], byte(sym))
			freq := t.freq[x : x+f]
			base := t.base[x : x+f][:len(freq)]
			for y := range freq {
				freq[y] = uint16(f)
				base[y] = uint16(y)
			}
			x += f
		}
		if done, err := r.nextSymbol(&sym, &rle, start); err != nil {
			return err
		} else if done {
			break
		}
	}
	switch x {
	case totFreq:
	case totFreq - 1:
		const m = totFreq - 1
		t.sym[m], t.freq[m], t.base[m] = t.sym[m-1], t.freq[m-1], t.base[m-1]+1
	default:
		return fmt.Errorf("%w: frequencies at offset %d sum to %d, want 4095 or 4096", ErrCorrupt, start, x)
	}
	return nil
}

// decodeO0 implements RansDecode0 (CRAMcodecs section 2.4) into out:
// symbol i from state i mod 4.
func decodeO0(r *reader, out []byte) error {
	t := o0Pool.Get().(*o0Table)
	defer o0Pool.Put(t)
	if err := readO0Table(r, t); err != nil {
		return err
	}
	var st [4]uint32
	if err := readStates(r, &st); err != nil {
		return err
	}
	n := len(out)
	end := n &^ 3
	i, p := o0Fast(t, &st, r.b, r.p, out[:end])
	if i < end-7 {
		// Fewer than 16 input bytes are left: run the fast loop on a
		// zero-padded copy, which can only overrun the input by reading
		// padding, then check that it did not.
		var pad [32]byte
		rem := copy(pad[:16], r.b[p:])
		d, q := o0Fast(t, &st, pad[:rem+16], 0, out[i:end])
		if q > rem {
			return fmt.Errorf("%w: rANS input exhausted at offset %d", ErrCorrupt, len(r.b))
		}
		i += d
		p += q
	}
	r.p = p
	for ; i < end; i++ {
		j := i & 3
		x := st[j]
		m := x & tfMask
		out[i] = t.sym[m]
		x, err := renormSafe(uint32(t.freq[m])*(x>>tfShift)+uint32(t.base[m]), r)
		if err != nil {
			return err
		}
		st[j] = x
	}
	// The last n mod 4 symbols need no state update (as in htscodecs).
	for j := 0; i < n; i, j = i+1, j+1 {
		out[i] = t.sym[st[j&3]&tfMask]
	}
	return nil
}

// o0Fast decodes groups of 8 symbols into out while 16 input bytes
// remain at offset p of src (the most a group consumes); it returns how
// many symbols it decoded and the new input offset.
func o0Fast(t *o0Table, st *[4]uint32, src []byte, p int, out []byte) (int, int) {
	x0, x1, x2, x3 := st[0], st[1], st[2], st[3]
	i := 0
	for ; i <= len(out)-8 && p >= 0 && p <= len(src)-16; i += 8 {
		o := (*[8]byte)(out[i : i+8])
		w := (*[16]byte)(src[p : p+16])
		k := uint(0)
		m := x0 & tfMask
		o[0] = t.sym[m]
		x0, k = renorm(uint32(t.freq[m])*(x0>>tfShift)+uint32(t.base[m]), w, k)
		m = x1 & tfMask
		o[1] = t.sym[m]
		x1, k = renorm(uint32(t.freq[m])*(x1>>tfShift)+uint32(t.base[m]), w, k)
		m = x2 & tfMask
		o[2] = t.sym[m]
		x2, k = renorm(uint32(t.freq[m])*(x2>>tfShift)+uint32(t.base[m]), w, k)
		m = x3 & tfMask
		o[3] = t.sym[m]
		x3, k = renorm(uint32(t.freq[m])*(x3>>tfShift)+uint32(t.base[m]), w, k)
		m = x0 & tfMask
		o[4] = t.sym[m]
		x0, k = renorm(uint32(t.freq[m])*(x0>>tfShift)+uint32(t.base[m]), w, k)
		m = x1 & tfMask
		o[5] = t.sym[m]
		x1, k = renorm(uint32(t.freq[m])*(x1>>tfShift)+uint32(t.base[m]), w, k)
		m = x2 & tfMask
		o[6] = t.sym[m]
		x2, k = renorm(uint32(t.freq[m])*(x2>>tfShift)+uint32(t.base[m]), w, k)
		m = x3 & tfMask
		o[7] = t.sym[m]
		x3, k = renorm(uint32(t.freq[m])*(x3>>tfShift)+uint32(t.base[m]), w, k)
		p += int(k)
	}
	st[0], st[1], st[2], st[3] = x0, x1, x2, x3
	return i, p
}
