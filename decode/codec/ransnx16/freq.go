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

// fill sets every byte of b to c: word stores, then doubling copies
// (memmove) for long runs.
func fill(b []byte, c byte) {
	if len(b) < 16 {
		for i := range b {
			b[i] = c
		}
		return
	}
	v := uint64(c) * 0x0101010101010101
	binary.LittleEndian.PutUint64(b, v)
	binary.LittleEndian.PutUint64(b[8:], v)
	for n := 16; n < len(b); n *= 2 {
		copy(b[n:], b[:n])
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
		for y := range fr {
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
// (see packEntry), one per frequency slot, so that one load per symbol
// gives the next symbol and state.
//
//   - 10-bit frequencies (what htscodecs writes for large blocks): row l
//     is t10[l<<10:], 4 KiB, also reachable as rows10[l].
//   - 12-bit frequencies (small blocks): rows12[l] points into slab12,
//     16 KiB per context that has a table; contexts without one point at
//     the first row that exists.
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
	rows10 [256]*[1 << 10]uint32 // rows10[l] = t10[l<<10:], once t10 exists
	slab12 []uint32
	rows12 [256]*[1 << 12]uint32
}

// packEntry packs a decode-table slot: symbol in bits 0-7, the slot's
// offset within the symbol's range in bits 8-19, and the symbol's
// frequency minus one in bits 20-31. One load then gives everything the
// decode step needs: x' = f*(x>>bits) + offset.
func packEntry(sym, off, freq uint32) uint32 { return sym | off<<8 | (freq-1)<<20 }

// fillPacked writes the packed entries of one frequency table (already
// normalised to sum to len(tab)) into tab.
func fillPacked(tab []uint32, freq *[256]uint32) {
	c := uint32(0)
	for s, f := range freq {
		if f == 0 {
			continue
		}
		slots := tab[c : c+f]
		v := packEntry(uint32(s), 0, f)
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
			for l := range t.rows10 {
				t.rows10[l] = (*[1 << 10]uint32)(t.t10[l<<10 : (l+1)<<10])
			}
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
	if t.tfBits == 12 {
		// A row for each context in the alphabet at most.
		nsym := 0
		for _, p := range present {
			if p {
				nsym++
			}
		}
		if cap(t.slab12) < nsym<<12 {
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
			fillPacked(t.t10[i<<10:(i+1)<<10], &freq)
		} else {
			row := (*[1 << 12]uint32)(t.slab12[rows<<12 : (rows+1)<<12])
			fillPacked(row[:], &freq)
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
