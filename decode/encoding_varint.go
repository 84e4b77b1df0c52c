package decode

// VARINT_UNSIGNED (41) and VARINT_SIGNED (42), CRAM 4.0's integer
// encodings (htslib 1.16's cram_varint_decode_*): each value is a uint7,
// or a sint7, in the external block ContentID, plus the constant Base.
// Parameters: the content id (uint7), then Base (sint7, 64-bit).

// parseVarint reads the parameters of a VARINT encoding.
func (e *Encoding) parseVarint(params []byte, p *int, vt valueType, r varints) error {
	if vt.isArray() {
		return corruptf("VARINT used for a byte array series")
	}
	var err error
	if e.ContentID, err = r.u32(params, p); err != nil {
		return err
	}
	e.Base, err = r.s64(params, p)
	return err
}

// varint32 reads one value of a 32-bit series: the uint7 or sint7 read
// as 32 bits, then Base added, truncated to 32 bits as htslib does.
func (e *Encoding) varint32(s *streams) (int32, error) {
	x, err := e.stream(s)
	if err != nil {
		return 0, err
	}
	u, err := x.readUint7(5)
	if err != nil {
		return 0, err
	}
	v := int64(uint32(u))
	if e.ID == EncodingVarintSigned {
		v = int64(int32(uint32(u)>>1) ^ -int32(u&1))
	}
	return int32(v + e.Base), nil
}

// varint64 reads one value of a 64-bit series (AP, NP, TS in CRAM 4.0).
func (e *Encoding) varint64(s *streams) (int64, error) {
	x, err := e.stream(s)
	if err != nil {
		return 0, err
	}
	u, err := x.readUint7(10)
	if err != nil {
		return 0, err
	}
	v := int64(u)
	if e.ID == EncodingVarintSigned {
		v = int64(u>>1) ^ -int64(u&1)
	}
	return v + e.Base, nil
}
