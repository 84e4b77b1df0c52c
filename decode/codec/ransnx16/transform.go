package ransnx16

import (
	"encoding/binary"
	"fmt"
)

// packMeta is the bit-packing metadata of CRAMcodecs section 3.8
// (DecodePackMeta).
type packMeta struct {
	perByte   int       // symbols per byte: 0 (constant), 2, 4, 8, or 1 (not packed)
	sym       [16]uint8 // code to symbol; unused codes map to 0 as in htscodecs
	packedLen int       // length of the packed data
}

// readPackMeta implements DecodePackMeta (CRAMcodecs section 3.8). n is the
// unpacked length. As htscodecs does, more than 16 symbols (a count of 0
// meaning 256) means the data is stored unpacked, with no symbol map.
func readPackMeta(r *reader, n int) (packMeta, error) {
	var pm packMeta
	start := r.p
	c, err := r.u8()
	if err != nil {
		return pm, err
	}
	nsym := int(c)
	if nsym == 0 {
		nsym = 256
	}
	switch {
	case nsym <= 1:
		pm.perByte = 0
	case nsym <= 2:
		pm.perByte = 8
	case nsym <= 4:
		pm.perByte = 4
	case nsym <= 16:
		pm.perByte = 2
	default:
		pm.perByte = 1
	}
	if pm.perByte != 1 {
		for i := 0; i < nsym; i++ {
			if pm.sym[i], err = r.u8(); err != nil {
				return pm, err
			}
		}
	}
	l, err := r.uint7()
	if err != nil {
		return pm, err
	}
	if int64(l) > int64(n) {
		return pm, fmt.Errorf("%w: packed length %d exceeds unpacked length %d (PACK metadata at offset %d)", ErrCorrupt, l, n, start)
	}
	pm.packedLen = int(l)
	return pm, nil
}

// unpack implements DecodePack (CRAMcodecs section 3.8) for 0, 2, 4 or 8
// symbols per byte: len(out) symbols from data, low bits first. runs tells
// that data is RLE output (see unpack8).
func unpack(out, data []byte, pm *packMeta, runs bool) error {
	n := len(out)
	if pm.perByte == 0 {
		fill(out, pm.sym[0])
		return nil
	}
	per := pm.perByte
	need := (n + per - 1) / per
	if len(data) < need {
		return fmt.Errorf("%w: PACK needs %d bytes for %d symbols, have %d", ErrCorrupt, need, n, len(data))
	}
	bitsPer := uint(8 / per)
	m := byte(1)<<bitsPer - 1
	full := n / per
	if full < 256 {
		// Too short to repay building a lookup table.
		for i := range out {
			out[i] = pm.sym[data[i/per]>>(bitsPer*uint(i%per))&m&15]
		}
		return nil
	}
	o := out[:per*full]
	in := data[:full]
	switch per {
	case 8:
		// lut[v] is the 8 symbols of byte v, built from nibbles.
		var nib [16]uint64
		for v := range nib {
			for b := 0; b < 4; b++ {
				nib[v] |= uint64(pm.sym[v>>b&1]) << (8 * b)
			}
		}
		var lut [256]uint64
		for v := range lut {
			lut[v] = nib[v&15] | nib[v>>4]<<32
		}
		unpack8(o, in, &lut, runs)
	case 4:
		var nib [16]uint32
		for v := range nib {
			nib[v] = uint32(pm.sym[v&3]) | uint32(pm.sym[v>>2])<<8
		}
		var lut [256]uint32
		for v := range lut {
			lut[v] = nib[v&15] | nib[v>>4]<<16
		}
		unpack4(o, in, &lut, runs)
	case 2:
		var lut [256]uint16
		for v := range lut {
			lut[v] = uint16(pm.sym[v&15]) | uint16(pm.sym[v>>4])<<8
		}
		unpack2(o, in, &lut, runs)
	}
	if full*per < n {
		v := data[full]
		for i := full * per; i < n; i++ {
			out[i] = pm.sym[v&m&15]
			v >>= bitsPer
		}
	}
	return nil
}

// runLen returns the length, a multiple of 8, of the run of equal bytes
// at the start of in when it is 8 or more, else 0.
func runLen(in []byte) int {
	w := binary.LittleEndian.Uint64(in)
	if w != uint64(in[0])*0x0101010101010101 {
		return 0
	}
	r := 8
	for r <= len(in)-8 && binary.LittleEndian.Uint64(in[r:]) == w {
		r += 8
	}
	return r
}

// fillRun writes the pattern v over o, whose length is a multiple of 8.
func fillRun(o []byte, v uint64) {
	if len(o) >= 512 {
		fillPattern(o, v)
		return
	}
	for len(o) >= 8 {
		binary.LittleEndian.PutUint64(o, v)
		o = o[8:]
	}
}

// unpack8 expands each byte of in into the 8 bytes lut[byte] of out
// (len(out) == 8*len(in)). With runs (in is RLE output), runs of 8 or more
// equal bytes become pattern fills; elsewhere the check mispredicts too
// often to pay.
func unpack8(out, in []byte, lut *[256]uint64, runs bool) {
	for len(in) >= 8 && len(out) >= 64 {
		if runs {
			if r := runLen(in); r > 0 && 8*r <= len(out) {
				fillRun(out[:8*r], lut[in[0]])
				in, out = in[r:], out[8*r:]
				continue
			}
		}
		o := (*[64]byte)(out)
		for k := range 8 {
			binary.LittleEndian.PutUint64(o[8*k:], lut[in[k]])
		}
		in, out = in[8:], out[64:]
	}
	for len(in) > 0 && len(out) >= 8 {
		binary.LittleEndian.PutUint64(out, lut[in[0]])
		in, out = in[1:], out[8:]
	}
}

// unpack4 is unpack8 for 4 bytes per input byte.
func unpack4(out, in []byte, lut *[256]uint32, runs bool) {
	for len(in) >= 8 && len(out) >= 32 {
		if runs {
			if r := runLen(in); r > 0 && 4*r <= len(out) {
				fillRun(out[:4*r], uint64(lut[in[0]])*(1|1<<32))
				in, out = in[r:], out[4*r:]
				continue
			}
		}
		o := (*[32]byte)(out)
		binary.LittleEndian.PutUint64(o[0:], uint64(lut[in[0]])|uint64(lut[in[1]])<<32)
		binary.LittleEndian.PutUint64(o[8:], uint64(lut[in[2]])|uint64(lut[in[3]])<<32)
		binary.LittleEndian.PutUint64(o[16:], uint64(lut[in[4]])|uint64(lut[in[5]])<<32)
		binary.LittleEndian.PutUint64(o[24:], uint64(lut[in[6]])|uint64(lut[in[7]])<<32)
		in, out = in[8:], out[32:]
	}
	for len(in) > 0 && len(out) >= 4 {
		binary.LittleEndian.PutUint32(out, lut[in[0]])
		in, out = in[1:], out[4:]
	}
}

// unpack2 is unpack8 for 2 bytes per input byte.
func unpack2(out, in []byte, lut *[256]uint16, runs bool) {
	for len(in) >= 8 && len(out) >= 16 {
		if runs {
			if r := runLen(in); r > 0 && 2*r <= len(out) {
				fillRun(out[:2*r], uint64(lut[in[0]])*(1|1<<16|1<<32|1<<48))
				in, out = in[r:], out[2*r:]
				continue
			}
		}
		o := (*[16]byte)(out)
		binary.LittleEndian.PutUint64(o[0:], uint64(lut[in[0]])|uint64(lut[in[1]])<<16|uint64(lut[in[2]])<<32|uint64(lut[in[3]])<<48)
		binary.LittleEndian.PutUint64(o[8:], uint64(lut[in[4]])|uint64(lut[in[5]])<<16|uint64(lut[in[6]])<<32|uint64(lut[in[7]])<<48)
		in, out = in[8:], out[16:]
	}
	for len(in) > 0 && len(out) >= 2 {
		binary.LittleEndian.PutUint16(out, lut[in[0]])
		in, out = in[1:], out[2:]
	}
}

// rleMeta is the run-length metadata of CRAMcodecs section 3.7
// (DecodeRLEMeta).
type rleMeta struct {
	isRun  [256]uint8 // 1 for symbols followed by a run length, else 0
	runs   []byte     // uint7 run lengths
	litLen int        // length of the literal (entropy-coded) data
}

// readRLEMeta implements DecodeRLEMeta (CRAMcodecs section 3.7) into rm,
// whose isRun must be all zero. n is the length after run expansion;
// nstates selects 4 or 32 states for the order-0 compressed metadata,
// which is decoded into the scratch of sr (stored metadata is used in
// place, without one).
func readRLEMeta(r *reader, n int, nstates int, sr *scratchRef, rm *rleMeta) error {
	start := r.p
	metaLen, err := r.uint7()
	if err != nil {
		return err
	}
	litLen, err := r.uint7()
	if err != nil {
		return err
	}
	if int64(litLen) > int64(n) {
		return fmt.Errorf("%w: RLE literal length %d exceeds expanded length %d (metadata at offset %d)", ErrCorrupt, litLen, n, start)
	}
	rm.litLen = int(litLen)
	var meta []byte
	if metaLen&1 != 0 {
		// Stored uncompressed; htscodecs clamps the length to the input.
		m := int(metaLen / 2)
		if m > r.remaining() {
			m = r.remaining()
		}
		meta = r.b[r.p : r.p+m]
		r.p += m
	} else {
		clen, err := r.uint7()
		if err != nil {
			return err
		}
		// At most 256 symbols plus a count byte plus a 5-byte run per literal.
		limit := int64(1+256) + 5*int64(litLen)
		if int64(metaLen/2) > limit {
			return fmt.Errorf("%w: RLE metadata claims %d bytes for %d literals", ErrCorrupt, metaLen/2, litLen)
		}
		if int64(clen) > int64(r.remaining()) {
			return fmt.Errorf("%w: compressed RLE metadata of %d bytes, %d left at offset %d", ErrCorrupt, clen, r.remaining(), r.p)
		}
		s := sr.get()
		meta = sized(&s.rleMeta, int(metaLen/2))
		if err := decodeO0(meta, r.b[r.p:r.p+int(clen)], nstates, &s.o0); err != nil {
			return fmt.Errorf("RLE metadata: %w", err)
		}
		r.p += int(clen)
	}
	if len(meta) == 0 {
		return fmt.Errorf("%w: empty RLE metadata at offset %d", ErrCorrupt, start)
	}
	nsym := int(meta[0])
	if nsym == 0 {
		nsym = 256
	}
	if len(meta) < 1+nsym {
		return fmt.Errorf("%w: RLE metadata of %d bytes lists %d symbols", ErrCorrupt, len(meta), nsym)
	}
	for _, s := range meta[1 : 1+nsym] {
		rm.isRun[s] = 1
	}
	rm.runs = meta[1+nsym:]
	return nil
}

// unRLE implements DecodeRLE (CRAMcodecs section 3.7): it expands lit
// into out, producing at most len(out) bytes, and returns how many.
//
// The common step has no branch on whether a literal is a run symbol,
// which mispredicts on quality data: it stores 8 copies of the literal
// (bytes past the run are overwritten later or lie beyond the output),
// reads the next run length whatever the literal and advances by it
// masked to 0 for a literal that is not a run symbol. Runs of 8 or more,
// lengths of more than one byte, and the last 16 bytes of output take
// the careful step.
func unRLE(out, lit []byte, rm *rleMeta) (int, error) {
	isRun := &rm.isRun
	runs := rm.runs
	rp := 0
	j := 0
	for i, b := range lit {
		r := uint32(isRun[b])
		if j >= 0 && j <= len(out)-16 {
			// With the run lengths exhausted, a run symbol takes the
			// careful step, which reports the error.
			rv := uint32(0x80)
			if rp < len(runs) {
				rv = uint32(runs[rp])
			}
			if run := rv & -r; run < 8 {
				binary.LittleEndian.PutUint64(out[j:], uint64(b)*0x0101010101010101)
				rp += int(r)
				j += int(run) + 1
				continue
			}
		}
		if j >= len(out) {
			return 0, fmt.Errorf("%w: RLE output exceeds %d bytes at literal %d", ErrCorrupt, len(out), i)
		}
		if r == 0 {
			out[j] = b
			j++
			continue
		}
		var run uint32
		if rp < len(runs) && runs[rp] < 0x80 {
			run = uint32(runs[rp])
			rp++
		} else if rp >= 0 && rp < len(runs)-1 && runs[rp+1] < 0x80 {
			// A two-byte uint7 (runs of 129 to 16384).
			run = uint32(runs[rp]&0x7f)<<7 | uint32(runs[rp+1])
			rp += 2
		} else {
			rr := reader{b: runs, p: rp}
			var err error
			if run, err = rr.uint7(); err != nil {
				return 0, fmt.Errorf("RLE run of literal %d: %w", i, err)
			}
			rp = rr.p
		}
		if int64(run) >= int64(len(out)-j) {
			return 0, fmt.Errorf("%w: RLE run of %d at output offset %d exceeds %d bytes", ErrCorrupt, run+1, j, len(out))
		}
		end := j + int(run) + 1
		if run < 64 && j >= 0 && j <= len(out)-64 {
			// A fixed 64 bytes, without a loop exit to mispredict;
			// the bytes past the run are rewritten or lie beyond
			// the output.
			v := uint64(b) * 0x0101010101010101
			o := (*[64]byte)(out[j:])
			for k := 0; k < 64; k += 8 {
				binary.LittleEndian.PutUint64(o[k:], v)
			}
		} else {
			fill(out[j:end], b)
		}
		j = end
	}
	return j, nil
}
