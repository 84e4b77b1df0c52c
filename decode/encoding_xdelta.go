package decode

import "fmt"

// XDELTA (53), a CRAM 4.0 transform that htslib 1.16 reads and no writer
// emits: differences of successive values, zig-zag coded. Parameters:
// the word size (uint7), then the sub-encoding.
//
// As htslib 1.16 decodes it: an integer is one value of the sub-encoding,
// un-zig-zagged and added to the previous one (from 0 at the container's
// start, carried from slice to slice); a byte array (read names, tag
// values) is read from the sub-encoding's block with a cursor of its own,
// one uint7 per 2-byte word, each un-zig-zagged as 16 bits and added to
// the previous word of the array (from 0), the words written little
// endian, the first one cut to one byte for an odd length. Other word
// sizes, 64-bit series and byte series fail there, and here.

func (e *Encoding) parseXDelta(params []byte, p *int, vt valueType, depth int, a *encodings, r varints) error {
	var err error
	if e.Word, err = r.u32(params, p); err != nil {
		return err
	}
	sub := vt
	if vt == typeByteBlock {
		sub = typeByteArray // as htslib passes it on
	}
	e.Val, err = parseEncoding(params, p, sub, depth+1, a, r)
	if err == nil && e.Val == nil {
		err = corruptf("XDELTA with a NULL sub-encoding")
	}
	return err
}

// xdeltaInt reads one integer.
func (e *Encoding) xdeltaInt(s *streams) (int32, error) {
	v, err := e.Val.decodeInt(s)
	if err != nil {
		return 0, err
	}
	u := uint32(v)
	e.last += u>>1 ^ -(u & 1)
	return int32(e.last), nil
}

// xdeltaArray appends an array of n bytes to dst.
func (e *Encoding) xdeltaArray(s *streams, dst []byte, n int) ([]byte, error) {
	if e.Word != 2 {
		return dst, fmt.Errorf("%w: XDELTA with %d-byte words", ErrUnsupported, e.Word)
	}
	blk, err := e.Val.wholeBlock(s)
	if err != nil {
		return dst, err
	}
	if e.xposGen != s.gen+1 {
		e.xpos, e.xposGen = 0, s.gen+1
	}
	last := uint16(0)
	for w := range (n + 1) / 2 {
		u, err := readUint7(blk, &e.xpos, 5)
		if err != nil {
			return dst, fmt.Errorf("XDELTA: %w", err)
		}
		v := uint16(u)
		last += v>>1 ^ -(v & 1)
		if w == 0 && n%2 == 1 {
			dst = append(dst, byte(last))
			continue
		}
		dst = append(dst, byte(last), byte(last>>8))
	}
	return dst, nil
}
