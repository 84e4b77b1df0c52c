package ransnx16

import (
	"fmt"
	"math/bits"
)

// A decode table maps each frequency slot (the low bits of a state) to a
// packed entry: symbol in bits 0-7, the slot's offset within the symbol's
// range in bits 8-19, and the symbol's frequency minus one in bits 20-31.
// One load then gives everything the decode step needs:
//
//	x' = f * (x >> bits) + (x & mask) - cfreq = f * (x >> bits) + offset
func packEntry(sym, off, freq uint32) uint32 { return sym | off<<8 | (freq-1)<<20 }

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

// fillTable writes the packed entries of one frequency table (already
// normalised to sum to len(tab)) into tab.
func fillTable(tab []uint32, freq *[256]uint32) {
	c := uint32(0)
	for s := 0; s < 256; s++ {
		f := freq[s]
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

// readFreqO0 implements ReadFrequenciesNx16_0 (CRAMcodecs section 3.1) and
// builds the 12-bit decode table.
func readFreqO0(r *reader, tab *[4096]uint32) error {
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
	for s := range freq {
		freq[s] <<= sh
	}
	fillTable(tab[:], &freq)
	return nil
}

// maxFreqTableO1 caps the uncompressed size of a compressed order-1
// frequency table: an alphabet (at most 512 bytes) plus 256x256 entries of
// at most 5+1 bytes each.
const maxFreqTableO1 = 512 + 256*256*6

// o1Tables holds the order-1 decode tables of ReadFrequenciesNx16_1
// (CRAMcodecs section 3.1). Contexts without a table point at some valid
// table and are flagged in absent, so a decoder can reject them without a
// branch per symbol; when closed, no decodable symbol lacks a table and the
// decoder need not look at absent at all.
type o1Tables struct {
	tfBits uint
	closed bool // every decodable symbol, and context 0, has a table
	t12    [256]*[4096]uint32
	t10    [256]*[1024]uint32
	absent [256]uint8
}

// readFreqO1 implements ReadFrequenciesNx16_1 (CRAMcodecs section 3.1),
// including the optionally order-0 compressed table.
func readFreqO1(r *reader, t *o1Tables) error {
	start := r.p
	comp, err := r.u8()
	if err != nil {
		return err
	}
	t.tfBits = uint(comp >> 4)
	if t.tfBits != 10 && t.tfBits != 12 {
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
		raw, err := decodeO0(r.b[r.p:r.p+int(csz)], int(usz), 4)
		if err != nil {
			return fmt.Errorf("order-1 frequency table: %w", err)
		}
		r.p += int(csz)
		tr = &reader{b: raw}
	}

	var present [256]bool
	if err := readAlphabet(tr, &present); err != nil {
		return err
	}
	nsym := 0
	for _, p := range present {
		if p {
			nsym++
		}
	}
	size := 1 << t.tfBits
	var decodable [256]bool
	all := make([]uint32, 0, nsym*size)
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
		off := len(all)
		all = all[:off+size]
		tab := all[off : off+size]
		fillTable(tab, &freq)
		if t.tfBits == 12 {
			t.t12[i] = (*[4096]uint32)(tab)
		} else {
			t.t10[i] = (*[1024]uint32)(tab)
		}
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
			t.t12[i], t.t10[i] = t.t12[first], t.t10[first]
			if decodable[i] {
				t.closed = false
			}
		}
	}
	return nil
}
