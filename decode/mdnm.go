package decode

import "strconv"

// appendUint appends the decimal form of v as htslib's BLOCK_APPEND_UINT
// does (v is a 32-bit unsigned value there).
func appendUint(b []byte, v int64) []byte {
	u := uint32(v)
	switch {
	case u < 10:
		return append(b, byte('0'+u))
	case u < 100:
		return append(b, byte('0'+u/10), byte('0'+u%10))
	case u < 1000:
		return append(b, byte('0'+u/100), byte('0'+u/10%10), byte('0'+u%10))
	}
	return strconv.AppendUint(b, uint64(u), 10)
}
