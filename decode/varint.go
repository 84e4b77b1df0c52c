package decode

// CRAM 4.0 (htslib's draft, CRAMv4 §2.3) replaces ITF-8 and LTF-8 with
// uint7: 7 bits per byte, most significant group first, the top bit set
// on every byte but the last; sint7 is uint7 of the zig-zag value
// (0, -1, 1, -2, ...). htslib reads 32-bit values at most 5 bytes long and
// 64-bit ones at most 10, truncating to the width.

// readUint7 decodes a uint7 of at most maxBytes bytes from b at *pos.
func readUint7(b []byte, pos *int, maxBytes int) (uint64, error) {
	p := *pos
	var v uint64
	for i := 0; i < maxBytes; i++ {
		if p+i >= len(b) {
			return 0, corruptf("uint7 at offset %d: end of data after %d bytes", p, i)
		}
		c := b[p+i]
		v = v<<7 | uint64(c&0x7f)
		if c&0x80 == 0 {
			*pos = p + i + 1
			return v, nil
		}
	}
	return 0, corruptf("uint7 at offset %d: longer than %d bytes", p, maxBytes)
}

func readUint7u32(b []byte, pos *int) (uint32, error) {
	v, err := readUint7(b, pos, 5)
	return uint32(v), err
}

func readSint7s32(b []byte, pos *int) (int32, error) {
	v, err := readUint7u32(b, pos)
	return int32(v>>1) ^ -int32(v&1), err
}

func readUint7u64(b []byte, pos *int) (uint64, error) { return readUint7(b, pos, 10) }

func readSint7s64(b []byte, pos *int) (int64, error) {
	v, err := readUint7(b, pos, 10)
	return int64(v>>1) ^ -int64(v&1), err
}

// varints reads the integers of headers and encoding parameters as the
// file's major version writes them: ITF-8 and LTF-8 before 4.0, uint7
// and sint7 from 4.0 on. The zero value reads CRAM 2 and 3.
type varints struct {
	v4 bool // constant: CRAM 4.0 or later
}

func varintsFor(major int) varints { return varints{v4: major >= 4} }

// u32 reads an unsigned 32-bit value (ITF-8's negative values come back
// as they were written, as in htslib, where both share one type).
func (r varints) u32(b []byte, pos *int) (int32, error) {
	if r.v4 {
		v, err := readUint7u32(b, pos)
		return int32(v), err
	}
	return readITF8(b, pos)
}

// s32 reads a signed 32-bit value.
func (r varints) s32(b []byte, pos *int) (int32, error) {
	if r.v4 {
		return readSint7s32(b, pos)
	}
	return readITF8(b, pos)
}

// u64 reads an unsigned 64-bit value.
func (r varints) u64(b []byte, pos *int) (int64, error) {
	if r.v4 {
		v, err := readUint7u64(b, pos)
		return int64(v), err
	}
	return readLTF8(b, pos)
}

// s64 reads a signed 64-bit value.
func (r varints) s64(b []byte, pos *int) (int64, error) {
	if r.v4 {
		return readSint7s64(b, pos)
	}
	return readLTF8(b, pos)
}

// array32 reads a count then that many u32 values, the count bounded by
// the bytes that remain.
func (r varints) array32(b []byte, pos *int, dst []int32) ([]int32, error) {
	if !r.v4 {
		return readArrayITF8(b, pos, dst)
	}
	n, err := r.u32(b, pos)
	if err != nil {
		return nil, err
	}
	if n < 0 || int(n) > len(b)-*pos {
		return nil, corruptf("array of %d values at offset %d: only %d bytes remain", n, *pos, len(b)-*pos)
	}
	dst = dst[:0]
	for range n {
		v, err := r.u32(b, pos)
		if err != nil {
			return nil, err
		}
		dst = append(dst, v)
	}
	return dst, nil
}
