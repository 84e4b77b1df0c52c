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

// unpack implements DecodePack (CRAMcodecs section 3.8): n symbols from
// data, low bits first.
func unpack(data []byte, pm *packMeta, n int) ([]byte, error) {
	switch pm.perByte {
	case 1:
		return data, nil
	case 0:
		out := make([]byte, n)
		if v := pm.sym[0]; v != 0 {
			for i := range out {
				out[i] = v
			}
		}
		return out, nil
	}
	per := pm.perByte
	need := (n + per - 1) / per
	if len(data) < need {
		return nil, fmt.Errorf("%w: PACK needs %d bytes for %d symbols, have %d", ErrCorrupt, need, n, len(data))
	}
	out := make([]byte, n)
	full := n / per
	switch per {
	case 8:
		var lut [256]uint64
		for v := range lut {
			var w uint64
			for b := 0; b < 8; b++ {
				w |= uint64(pm.sym[v>>b&1]) << (8 * b)
			}
			lut[v] = w
		}
		for i, v := range data[:full] {
			binary.LittleEndian.PutUint64(out[8*i:], lut[v])
		}
	case 4:
		var lut [256]uint32
		for v := range lut {
			var w uint32
			for b := 0; b < 4; b++ {
				w |= uint32(pm.sym[v>>(2*b)&3]) << (8 * b)
			}
			lut[v] = w
		}
		for i, v := range data[:full] {
			binary.LittleEndian.PutUint32(out[4*i:], lut[v])
		}
	case 2:
		var lut [256]uint16
		for v := range lut {
			lut[v] = uint16(pm.sym[v&15]) | uint16(pm.sym[v>>4])<<8
		}
		for i, v := range data[:full] {
			binary.LittleEndian.PutUint16(out[2*i:], lut[v])
		}
	}
	if full*per < n {
		bitsPer := uint(8 / per)
		m := byte(1)<<bitsPer - 1
		v := data[full]
		for i := full * per; i < n; i++ {
			out[i] = pm.sym[v&m&15]
			v >>= bitsPer
		}
	}
	return out, nil
}

// rleMeta is the run-length metadata of CRAMcodecs section 3.7
// (DecodeRLEMeta).
type rleMeta struct {
	isRun  [256]bool // symbols followed by a run length
	runs   []byte    // uint7 run lengths
	litLen int       // length of the literal (entropy-coded) data
}

// readRLEMeta implements DecodeRLEMeta (CRAMcodecs section 3.7). n is the
// length after run expansion; nstates selects 4 or 32 states for the
// order-0 compressed metadata.
func readRLEMeta(r *reader, n int, nstates int) (rleMeta, error) {
	var rm rleMeta
	start := r.p
	metaLen, err := r.uint7()
	if err != nil {
		return rm, err
	}
	litLen, err := r.uint7()
	if err != nil {
		return rm, err
	}
	if int64(litLen) > int64(n) {
		return rm, fmt.Errorf("%w: RLE literal length %d exceeds expanded length %d (metadata at offset %d)", ErrCorrupt, litLen, n, start)
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
			return rm, err
		}
		// At most 256 symbols plus a count byte plus a 5-byte run per literal.
		limit := int64(1+256) + 5*int64(litLen)
		if int64(metaLen/2) > limit {
			return rm, fmt.Errorf("%w: RLE metadata claims %d bytes for %d literals", ErrCorrupt, metaLen/2, litLen)
		}
		if int64(clen) > int64(r.remaining()) {
			return rm, fmt.Errorf("%w: compressed RLE metadata of %d bytes, %d left at offset %d", ErrCorrupt, clen, r.remaining(), r.p)
		}
		meta, err = decodeO0(r.b[r.p:r.p+int(clen)], int(metaLen/2), nstates)
		if err != nil {
			return rm, fmt.Errorf("RLE metadata: %w", err)
		}
		r.p += int(clen)
	}
	if len(meta) == 0 {
		return rm, fmt.Errorf("%w: empty RLE metadata at offset %d", ErrCorrupt, start)
	}
	nsym := int(meta[0])
	if nsym == 0 {
		nsym = 256
	}
	if len(meta) < 1+nsym {
		return rm, fmt.Errorf("%w: RLE metadata of %d bytes lists %d symbols", ErrCorrupt, len(meta), nsym)
	}
	for _, s := range meta[1 : 1+nsym] {
		rm.isRun[s] = true
	}
	rm.runs = meta[1+nsym:]
	return rm, nil
}

// unRLE implements DecodeRLE (CRAMcodecs section 3.7), producing at most
// limit bytes.
func unRLE(lit []byte, rm *rleMeta, limit int) ([]byte, error) {
	out := make([]byte, limit)
	rr := reader{b: rm.runs}
	j := 0
	for i, b := range lit {
		if j >= limit {
			return nil, fmt.Errorf("%w: RLE output exceeds %d bytes at literal %d", ErrCorrupt, limit, i)
		}
		if !rm.isRun[b] {
			out[j] = b
			j++
			continue
		}
		run, err := rr.uint7()
		if err != nil {
			return nil, fmt.Errorf("RLE run of literal %d: %w", i, err)
		}
		if int64(run) >= int64(limit-j) {
			return nil, fmt.Errorf("%w: RLE run of %d at output offset %d exceeds %d bytes", ErrCorrupt, run+1, j, limit)
		}
		seg := out[j : j+int(run)+1]
		for k := range seg {
			seg[k] = b
		}
		j += len(seg)
	}
	return out[:j], nil
}
