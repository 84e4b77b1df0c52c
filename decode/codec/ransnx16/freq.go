package ransnx16

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// readAlphabet implements ReadAlphabet (CRAMcodecs section 3.1): a list of
// symbols in ascending order with run-length compression of consecutive
// values, terminated by a zero byte.
func readAlphabet(r *reader, present *[256]bool) error {
	start := r.p
	c, err := r.u8()
	if err != nil {
		return err
	}
	sym := int(c)
	rle := 0
	for {
		present[sym] = true
		if rle > 0 {
			rle--
			sym++
			if sym > 255 {
				return fmt.Errorf("%w: alphabet run at offset %d passes symbol 255", ErrCorrupt, start)
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
			return nil
		}
	}
}

// normShift returns the left shift that scales a frequency total to
// 1<<tfBits (NormaliseFrequenciesNx16_0, CRAMcodecs section 3.1); the total
// must be a power of two no larger than 1<<tfBits.
func normShift(total uint64, tfBits uint) (uint, bool) {
	if total == 0 || total > 1<<tfBits || total&(total-1) != 0 {
		return 0, false
	}
	return tfBits - uint(bits.TrailingZeros64(total)), true
}

// fill sets every byte of b to c: 8-byte stores over up to the first 256
// bytes (32 at a time, the last ones ending at the end of that prefix, so
// that there is one loop exit to mispredict), then doubling copies
// (memmove), few enough calls for their cost not to dominate runs of a
// few KB.
func fill(b []byte, c byte) {
	if len(b) < 8 {
		for i := range b {
			b[i] = c
		}
		return
	}
	v := uint64(c) * 0x0101010101010101
	n := min(len(b), 256)
	h := b[:n]
	if len(h) < 32 {
		for len(h) > 8 {
			binary.LittleEndian.PutUint64(h, v)
			h = h[8:]
		}
		binary.LittleEndian.PutUint64(b[n-8:], v)
		return
	}
	for len(h) > 32 {
		binary.LittleEndian.PutUint64(h, v)
		binary.LittleEndian.PutUint64(h[8:], v)
		binary.LittleEndian.PutUint64(h[16:], v)
		binary.LittleEndian.PutUint64(h[24:], v)
		h = h[32:]
	}
	t := (*[32]byte)(b[n-32 : n])
	binary.LittleEndian.PutUint64(t[0:], v)
	binary.LittleEndian.PutUint64(t[8:], v)
	binary.LittleEndian.PutUint64(t[16:], v)
	binary.LittleEndian.PutUint64(t[24:], v)
	for n < len(b) {
		n += copy(b[n:], b[:n])
	}
}

// fillPattern sets b[i] to byte i%8 of v (little-endian) as fill does,
// keeping the stores and copies aligned to the pattern; the last len(b)%8
// bytes are set one at a time.
func fillPattern(b []byte, v uint64) {
	end := len(b) &^ 7
	n := min(end, 256)
	h := b[:n]
	for len(h) >= 32 {
		binary.LittleEndian.PutUint64(h, v)
		binary.LittleEndian.PutUint64(h[8:], v)
		binary.LittleEndian.PutUint64(h[16:], v)
		binary.LittleEndian.PutUint64(h[24:], v)
		h = h[32:]
	}
	for len(h) >= 8 {
		binary.LittleEndian.PutUint64(h, v)
		h = h[8:]
	}
	for n < end {
		n += copy(b[n:end], b[:n])
	}
	for i := end; i < len(b); i++ {
		b[i] = byte(v >> (8 * (i & 7)))
	}
}

// o0Table is the order-0 decode table of RansDecodeNx16_0 (CRAMcodecs
// section 3.3), split by field as the decode step uses them: for
// frequency slot m, sym[m] is the symbol, freq[m] its frequency and
// base[m] the slot's offset within the symbol's range, so that
// x' = freq[m]*(x>>12) + base[m]. Three independent loads measured faster
// than one packed entry whose fields need shifting and masking. A table
// is recycled without clearing: readFreqO0 writes all 4096 slots or
// fails.
type o0Table struct {
	sym  [4096]uint8
	freq [4096]uint16
	base [4096]uint16
}

// readFreqO0 implements ReadFrequenciesNx16_0 (CRAMcodecs section 3.1) and
// builds the 12-bit decode table.
func readFreqO0(r *reader, t *o0Table) error {
	start := r.p
	var present [256]bool
	if err := readAlphabet(r, &present); err != nil {
		return err
	}
	var freq [256]uint32
	total := uint64(0)
	for s := 0; s < 256; s++ {
		if !present[s] {
			continue
		}
		f, err := r.uint7()
		if err != nil {
			return err
		}
		freq[s] = f
		total += uint64(f)
	}
	sh, ok := normShift(total, 12)
	if !ok {
		return fmt.Errorf("%w: order-0 frequencies at offset %d sum to %d, not a power of two up to 4096", ErrCorrupt, start, total)
	}
	c := uint32(0)
	for s, f := range freq {
		if f == 0 {
			continue
		}
		f <<= sh
		fill(t.sym[c:c+f], byte(s))
		fr := t.freq[c : c+f]
		ba := t.base[c : c+f][:len(fr)]
		// Four slots per step, as 64-bit stores (the compiler merges
		// the 16-bit stores of a word's pieces).
		fw := uint64(f) * 0x0001000100010001
		bw := uint64(0x0003000200010000)
		y := 0
		for ; y <= len(fr)-4 && y <= len(ba)-4; y += 4 {
			f4 := (*[4]uint16)(fr[y:])
			b4 := (*[4]uint16)(ba[y:])
			f4[0], f4[1], f4[2], f4[3] = uint16(fw), uint16(fw>>16), uint16(fw>>32), uint16(fw>>48)
			b4[0], b4[1], b4[2], b4[3] = uint16(bw), uint16(bw>>16), uint16(bw>>32), uint16(bw>>48)
			bw += 0x0004000400040004
		}
		for ; y < len(fr); y++ {
			fr[y] = uint16(f)
			ba[y] = uint16(y)
		}
		c += f
	}
	return nil
}

// maxFreqTableO1 caps the uncompressed size of a compressed order-1
// frequency table: an alphabet (at most 512 bytes) plus 256x256 entries of
// at most 5+1 bytes each.
const maxFreqTableO1 = 512 + 256*256*6

// o1Tables holds the order-1 decode tables of ReadFrequenciesNx16_1
// (CRAMcodecs section 3.1): for each context l, a row of packed entries
// (see pack10 and pack12), one per frequency slot, so that one load per
// symbol gives the next symbol, state and table row.
//
//   - 10-bit frequencies (what htscodecs writes for large blocks): row l
//     is t10[l<<10:], 4 KiB, in one flat table, so that the next index is
//     two masks and an add away from an entry and a state (no load of a
//     row pointer in the dependency chain).
//   - 12-bit frequencies (small blocks): rows12[l] is the row of context
//     l, 16 KiB, and contexts without one point at the first row that
//     exists. When every symbol is below flat12Syms (PACK codes, most
//     quality alphabets), row l is t12[l<<12:] (flat12), and the fast
//     loops index t12 as they do t10; otherwise the rows are in slab12,
//     one per context that has a table.
//
// The tables are recycled without clearing: a row is read only after
// readFreqO1 wrote all its slots, except for contexts without a table
// (absent), which decodeO1 rejects; their stale entries never reach a
// caller.
type o1Tables struct {
	tfBits uint
	closed bool // every decodable symbol, and context 0, has a table
	absent [256]uint8
	t10    *[256 << 10]uint32
	flat12 bool
	t12    *[flat12Syms << 12]uint32
	slab12 []uint32
	rows12 [256]*[1 << 12]uint32
}

// flat12Syms bounds the alphabet of a 12-bit order-1 table that uses the
// flat table t12 (1 MiB).
const flat12Syms = 64

// pack10 packs a slot of a 10-bit decode table: the slot's offset within
// its symbol's range in bits 0-9, the symbol in bits 10-17 and its
// frequency (at most 1024) in bits 18-31. A decode step is then
// x' = (e>>18)*(x>>10) + e&0x3ff, and the next slot of the flat table t10
// for the state that decoded e is e&0x3fc00 + x'&0x3ff.
func pack10(sym, off, freq uint32) uint32 { return off | sym<<10 | freq<<18 }

// pack12 packs a slot of a 12-bit decode table in slab12: the offset in
// bits 0-11, the symbol in bits 12-19 and the frequency minus one (4096
// does not fit) in bits 20-31: x' = (e>>20+1)*(x>>12) + e&0xfff.
func pack12(sym, off, freq uint32) uint32 { return off | sym<<12 | (freq-1)<<20 }

// pack12Flat packs a slot of the flat 12-bit table t12, whose symbols are
// below flat12Syms: the offset in bits 0-11, the symbol in bits 12-17 and
// the frequency in bits 18-31, which saves an add on the dependency chain
// over pack12: x' = (e>>18)*(x>>12) + e&0xfff, and the next slot is
// e&0x3f000 + x'&0xfff.
func pack12Flat(sym, off, freq uint32) uint32 { return off | sym<<12 | freq<<18 }

// fillPacked writes the packed entries of one frequency table (already
// normalised to sum to len(tab)) into tab, with pack (pack10, pack12 or
// pack12Flat). The offset is the low field of an entry, so consecutive
// slots of a symbol differ by one.
func fillPacked(tab []uint32, freq *[256]uint32, pack func(sym, off, freq uint32) uint32) {
	c := uint32(0)
	for s, f := range freq {
		if f == 0 {
			continue
		}
		slots := tab[c : c+f]
		v := pack(uint32(s), 0, f)
		// Pairs of slots as 64-bit words (the compiler merges the
		// stores of a word's halves), eight slots a step.
		w := uint64(v) | uint64(v+1)<<32
		const two = 2 | 2<<32
		for len(slots) >= 8 {
			s8 := (*[8]uint32)(slots)
			s8[0], s8[1] = uint32(w), uint32(w>>32)
			s8[2], s8[3] = uint32(w+two), uint32((w+two)>>32)
			s8[4], s8[5] = uint32(w+2*two), uint32((w+2*two)>>32)
			s8[6], s8[7] = uint32(w+3*two), uint32((w+3*two)>>32)
			w += 4 * two
			slots = slots[8:]
		}
		v = uint32(w)
		for y := range slots {
			slots[y] = v + uint32(y)
		}
		c += f
	}
}

// readFreqO1 implements ReadFrequenciesNx16_1 (CRAMcodecs section 3.1),
// including the optionally order-0 compressed table, whose decoding uses
// s.freqTab and s.o0.
func readFreqO1(r *reader, t *o1Tables, s *scratch) error {
	start := r.p
	comp, err := r.u8()
	if err != nil {
		return err
	}
	t.tfBits = uint(comp >> 4)
	switch t.tfBits {
	case 10:
		if t.t10 == nil {
			t.t10 = new([256 << 10]uint32)
		}
	case 12:
	default:
		return fmt.Errorf("%w: order-1 frequency bits %d at offset %d, want 10 or 12", ErrCorrupt, t.tfBits, start)
	}
	tr := r
	if comp&1 != 0 {
		usz, err := r.uint7()
		if err != nil {
			return err
		}
		csz, err := r.uint7()
		if err != nil {
			return err
		}
		if usz > maxFreqTableO1 {
			return fmt.Errorf("%w: compressed order-1 table claims %d bytes (max %d)", ErrCorrupt, usz, maxFreqTableO1)
		}
		if int64(csz) > int64(r.remaining()) {
			return fmt.Errorf("%w: compressed order-1 table of %d bytes, %d left at offset %d", ErrCorrupt, csz, r.remaining(), r.p)
		}
		raw := sized(&s.freqTab, int(usz))
		if err := decodeO0(raw, r.b[r.p:r.p+int(csz)], 4, &s.o0); err != nil {
			return fmt.Errorf("order-1 frequency table: %w", err)
		}
		r.p += int(csz)
		tr = &reader{b: raw}
	}

	var present [256]bool
	if err := readAlphabet(tr, &present); err != nil {
		return err
	}
	size := uint32(1) << t.tfBits
	t.flat12 = false
	if t.tfBits == 12 {
		// Symbols below flat12Syms use the flat table, others a row
		// for each context in the alphabet at most.
		nsym, maxSym := 0, 0
		for c, p := range present {
			if p {
				nsym++
				maxSym = c
			}
		}
		if maxSym < flat12Syms {
			t.flat12 = true
			if t.t12 == nil {
				t.t12 = new([flat12Syms << 12]uint32)
			}
		} else if cap(t.slab12) < nsym<<12 {
			t.slab12 = make([]uint32, nsym<<12)
		}
	}
	rows := 0
	var decodable [256]bool
	first := -1
	for i := 0; i < 256; i++ {
		t.absent[i] = 1
		if !present[i] {
			continue
		}
		var freq [256]uint32
		total := uint64(0)
		run := 0
		for j := 0; j < 256; j++ {
			if !present[j] {
				continue
			}
			if run > 0 {
				run--
				continue
			}
			f, err := tr.uint7()
			if err != nil {
				return err
			}
			freq[j] = f
			decodable[j] = decodable[j] || f != 0
			total += uint64(f)
			if f == 0 {
				c, err := tr.u8()
				if err != nil {
					return err
				}
				run = int(c)
			}
		}
		if total == 0 {
			continue // context never used as such (htscodecs skips it too)
		}
		sh, ok := normShift(total, t.tfBits)
		if !ok {
			return fmt.Errorf("%w: order-1 context %d frequencies sum to %d, not a power of two up to %d", ErrCorrupt, i, total, size)
		}
		for s := range freq {
			freq[s] <<= sh
		}
		if t.tfBits == 10 {
			fillPacked(t.t10[i<<10:(i+1)<<10], &freq, pack10)
		} else {
			var row *[1 << 12]uint32
			if t.flat12 {
				row = (*[1 << 12]uint32)(t.t12[i<<12 : (i+1)<<12])
				fillPacked(row[:], &freq, pack12Flat)
			} else {
				row = (*[1 << 12]uint32)(t.slab12[rows<<12 : (rows+1)<<12])
				fillPacked(row[:], &freq, pack12)
			}
			t.rows12[i] = row
		}
		rows++
		t.absent[i] = 0
		if first < 0 {
			first = i
		}
	}
	if first < 0 {
		return fmt.Errorf("%w: order-1 table at offset %d has no contexts", ErrCorrupt, start)
	}
	t.closed = t.absent[0] == 0
	for i := 0; i < 256; i++ {
		if t.absent[i] != 0 {
			t.closed = t.closed && !decodable[i]
			if t.tfBits == 12 {
				t.rows12[i] = t.rows12[first]
			}
		}
	}
	return nil
}
