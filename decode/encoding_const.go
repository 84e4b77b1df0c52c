package decode

// CONST_BYTE (43) and CONST_INT (44), CRAM 4.0's encodings of a series
// with one value (htslib 1.16's cram_const_decode_*): every value is Base
// and nothing is read. Parameter: the value (sint7, 64-bit). CONST_BYTE
// gives its low byte, CONST_INT the value truncated to the series' width.

// parseConst reads the parameter of a CONST encoding.
func (e *Encoding) parseConst(params []byte, p *int, vt valueType, r varints) error {
	if vt.isArray() {
		return corruptf("CONST used for a byte array series")
	}
	var err error
	e.Base, err = r.s64(params, p)
	return err
}

// const32 is the value of a CONST encoding for a 32-bit series.
func (e *Encoding) const32() int32 {
	if e.ID == EncodingConstByte {
		return int32(byte(e.Base))
	}
	return int32(e.Base)
}

// constByte is the value of a CONST encoding for a byte series.
func (e *Encoding) constByte() byte { return byte(e.Base) }
