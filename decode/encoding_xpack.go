package decode

import "fmt"

// XPACK (51), a CRAM 4.0 transform that htslib 1.16 reads and no writer
// emits: several small values packed into each byte. Parameters: the bits
// per value (uint7, below 8), the number of values (at most 256), the
// values themselves (each below 256), then the sub-encoding.
//
// As htslib 1.16 decodes it: an integer is NBits bits of the core block
// (most significant first) looked up in Table, the sub-encoding unused;
// bytes come from the sub-encoding's whole block of the slice, unpacked
// once per slice, the lowest bits of each byte first (8/NBits values a
// byte), and read in order. With fewer than two values every value is
// the first one, and nothing is read.

func (e *Encoding) parseXPack(params []byte, p *int, vt valueType, depth int, a *encodings, r varints) error {
	if vt == typeByteBlock {
		return corruptf("XPACK for a read name or tag")
	}
	var err error
	if e.NBits, err = r.u32(params, p); err != nil {
		return err
	}
	if e.NVal, err = r.u32(params, p); err != nil {
		return err
	}
	if e.NBits < 0 || e.NBits >= 8 || e.NVal < 0 || e.NVal > 256 {
		return corruptf("XPACK of %d values in %d bits each, want at most 256 in fewer than 8", e.NVal, e.NBits)
	}
	e.Table = new([256]byte)
	for i := range e.NVal {
		v, err := r.u32(params, p)
		if err != nil {
			return err
		}
		if v < 0 || v >= 256 {
			return corruptf("XPACK value %d, want below 256", uint32(v))
		}
		e.Table[i] = byte(v)
	}
	e.Val, err = parseEncoding(params, p, vt, depth+1, a, r)
	if err == nil && e.Val == nil {
		err = corruptf("XPACK with a NULL sub-encoding")
	}
	return err
}

// xpackInt reads one integer: NBits bits of the core block.
func (e *Encoding) xpackInt(s *streams) (int32, error) {
	if e.NBits == 0 {
		return int32(e.Table[0]), nil
	}
	v, err := s.core.readBits(int(e.NBits))
	if err != nil {
		return 0, err
	}
	return int32(e.Table[v]), nil
}

// xpackBytes appends n bytes of the unpacked block to dst.
func (e *Encoding) xpackBytes(s *streams, dst []byte, n int) ([]byte, error) {
	if e.NVal <= 1 {
		for range n {
			dst = append(dst, e.Table[0])
		}
		return dst, nil
	}
	return e.readExpanded(s, dst, n)
}

// unpack expands the sub-encoding's block (htslib's hts_unpack), values
// of NBits bits, lowest first. htslib unpacks correctly only 1, 2 and 4
// bits a value; anything else leaves its buffer undefined and is refused.
func (e *Encoding) unpack(s *streams) ([]byte, error) {
	src, err := e.Val.wholeBlock(s)
	if err != nil {
		return nil, err
	}
	nb := uint(e.NBits)
	if nb != 1 && nb != 2 && nb != 4 {
		return nil, fmt.Errorf("%w: XPACK of %d values in %d bits each", ErrUnsupported, e.NVal, nb)
	}
	per := 8 / int(nb)
	out := make([]byte, 0, len(src)*per)
	mask := byte(1)<<nb - 1
	for _, c := range src {
		for k := range per {
			out = append(out, e.Table[c>>(uint(k)*nb)&mask])
		}
	}
	return out, nil
}

// wholeBlock is the whole block of the slice that e reads from, as
// htslib's get_block gives it to a transform: an EXTERNAL or VARINT
// encoding's external block, or what an XPACK or XRLE expanded. Other
// encodings have none there (htslib would crash or fail).
func (e *Encoding) wholeBlock(s *streams) ([]byte, error) {
	switch e.ID {
	case EncodingExternal, EncodingVarintUnsigned, EncodingVarintSigned:
		x, err := e.stream(s)
		if err != nil {
			return nil, err
		}
		return x.data, nil
	case EncodingXPack, EncodingXRLE:
		return e.expanded(s)
	}
	return nil, corruptf("encoding %d under a transform, want one with a block of its own (EXTERNAL, VARINT, XPACK, XRLE)", e.ID)
}

// expanded returns what XPACK or XRLE expands the slice's block(s) to,
// computed once per slice.
func (e *Encoding) expanded(s *streams) ([]byte, error) {
	if e.xformGen == s.gen+1 {
		return e.xform, nil
	}
	var b []byte
	var err error
	if e.ID == EncodingXPack {
		b, err = e.unpack(s)
	} else {
		b, err = e.unRLE(s)
	}
	if err != nil {
		return nil, err
	}
	e.xform, e.xformGen, e.xpos, e.xposGen = b, s.gen+1, 0, s.gen+1
	return b, nil
}

// readExpanded appends the next n expanded bytes of the slice to dst.
func (e *Encoding) readExpanded(s *streams, dst []byte, n int) ([]byte, error) {
	b, err := e.expanded(s)
	if err != nil {
		return dst, err
	}
	if n < 0 || n > len(b)-e.xpos {
		return dst, corruptf("encoding %d: %d bytes wanted at offset %d of %d expanded", e.ID, n, e.xpos, len(b))
	}
	dst = append(dst, b[e.xpos:e.xpos+n]...)
	e.xpos += n
	return dst, nil
}
