package decode

import "encoding/binary"

// readITF8 decodes an ITF-8 integer (CRAMv3 §2.3) from b at *pos.
func readITF8(b []byte, pos *int) (int32, error) {
	p := *pos
	if p >= len(b) {
		return 0, corruptf("ITF-8 at offset %d: end of data", p)
	}
	c := b[p]
	var n int
	switch {
	case c < 0x80:
		*pos = p + 1
		return int32(c), nil
	case c < 0xc0:
		n = 2
	case c < 0xe0:
		n = 3
	case c < 0xf0:
		n = 4
	default:
		n = 5
	}
	if p+n > len(b) {
		return 0, corruptf("ITF-8 at offset %d: need %d bytes, have %d", p, n, len(b)-p)
	}
	var v uint32
	switch n {
	case 2:
		v = uint32(c&0x3f)<<8 | uint32(b[p+1])
	case 3:
		v = uint32(c&0x1f)<<16 | uint32(b[p+1])<<8 | uint32(b[p+2])
	case 4:
		v = uint32(c&0x0f)<<24 | uint32(b[p+1])<<16 | uint32(b[p+2])<<8 | uint32(b[p+3])
	case 5:
		v = uint32(c&0x0f)<<28 | uint32(b[p+1])<<20 | uint32(b[p+2])<<12 | uint32(b[p+3])<<4 | uint32(b[p+4]&0x0f)
	}
	*pos = p + n
	return int32(v), nil
}

// readLTF8 decodes an LTF-8 integer (CRAMv3 §2.3) from b at *pos.
func readLTF8(b []byte, pos *int) (int64, error) {
	p := *pos
	if p >= len(b) {
		return 0, corruptf("LTF-8 at offset %d: end of data", p)
	}
	c := b[p]
	n := 1
	for m := byte(0x80); n < 9 && c&m != 0; m >>= 1 {
		n++
	}
	if p+n > len(b) {
		return 0, corruptf("LTF-8 at offset %d: need %d bytes, have %d", p, n, len(b)-p)
	}
	var v uint64
	if n < 8 {
		v = uint64(c & (0xff >> n))
	}
	for i := 1; i < n; i++ {
		v = v<<8 | uint64(b[p+i])
	}
	*pos = p + n
	return int64(v), nil
}

// readInt32 reads a little-endian int32 at *pos.
func readInt32(b []byte, pos *int) (int32, error) {
	p := *pos
	if p+4 > len(b) {
		return 0, corruptf("int32 at offset %d: end of data", p)
	}
	*pos = p + 4
	return int32(binary.LittleEndian.Uint32(b[p:])), nil
}

// readArrayITF8 reads an array<itf8> (CRAMv3 §2.3: count then values),
// with the count bounded by the bytes that remain.
func readArrayITF8(b []byte, pos *int, dst []int32) ([]int32, error) {
	n, err := readITF8(b, pos)
	if err != nil {
		return nil, err
	}
	if n < 0 || int(n) > len(b)-*pos {
		return nil, corruptf("array of %d ITF-8 values at offset %d: only %d bytes remain", n, *pos, len(b)-*pos)
	}
	dst = dst[:0]
	for i := int32(0); i < n; i++ {
		v, err := readITF8(b, pos)
		if err != nil {
			return nil, err
		}
		dst = append(dst, v)
	}
	return dst, nil
}
