package decode

import (
	"bytes"
	"errors"
	"testing"
)

// encoding4 is an encoding as CRAM 4.0 writes it: id, parameter length
// and parameters, all uint7.
func encoding4(id EncodingID, params []byte) []byte {
	b := append(putUint7(uint64(id)), putUint7(uint64(len(params)))...)
	return append(b, params...)
}

func parse4(t *testing.T, b []byte, vt valueType) *Encoding {
	t.Helper()
	p := 0
	e, err := parseEncoding(b, &p, vt, 0, nil, varints{v4: true})
	if err != nil {
		t.Fatalf("parse % x: %v", b, err)
	}
	if p != len(b) {
		t.Fatalf("parse % x: %d bytes read", b, p)
	}
	return e
}

func TestVarintEncoding(t *testing.T) {
	var blk []byte
	for _, v := range []uint64{0, 5, 300, 1 << 31, 1<<40 + 1} {
		blk = append(blk, putUint7(v)...)
	}
	for _, v := range []int64{-1, 7, -1 << 35} {
		blk = append(blk, putSint7(v)...)
	}
	// VARINT_UNSIGNED with base -2 in block 9: as 32-bit values, then
	// as 64-bit ones.
	unsigned := append(putUint7(9), putSint7(-2)...)
	newStreams := func() *streams {
		st := &streams{}
		st.add(9, blk)
		st.index()
		return st
	}
	st := newStreams()
	e := parse4(t, encoding4(EncodingVarintUnsigned, unsigned), typeInt)
	for _, want := range []int32{-2, 3, 298, 1<<31 - 2} {
		if v, err := e.decodeInt(st); err != nil || v != want {
			t.Errorf("VARINT_UNSIGNED 32: %d, %v, want %d", v, err, want)
		}
	}
	st = newStreams()
	e = parse4(t, encoding4(EncodingVarintUnsigned, unsigned), typeLong)
	for _, want := range []int64{-2, 3, 298, 1<<31 - 2, 1<<40 - 1} {
		if v, err := e.decodeLong(st); err != nil || v != want {
			t.Errorf("VARINT_UNSIGNED 64: %d, %v, want %d", v, err, want)
		}
	}
	// The signed values follow the five unsigned ones.
	es := parse4(t, encoding4(EncodingVarintSigned, append(putUint7(9), putSint7(10)...)), typeLong)
	for _, want := range []int64{9, 17, -1<<35 + 10} {
		if v, err := es.decodeLong(st); err != nil || v != want {
			t.Errorf("VARINT_SIGNED 64: %d, %v, want %d", v, err, want)
		}
	}
	if v, err := es.decodeLong(st); !errors.Is(err, ErrCorrupt) {
		t.Errorf("past the block's end: %d, %v, want ErrCorrupt", v, err)
	}
	// A block that is not in the slice.
	ex := parse4(t, encoding4(EncodingVarintSigned, append(putUint7(10), putSint7(0)...)), typeInt)
	if _, err := ex.decodeInt(newStreams()); !errors.Is(err, ErrCorrupt) {
		t.Errorf("missing block: err %v, want ErrCorrupt", err)
	}
}

func TestConstEncoding(t *testing.T) {
	st := &streams{}
	st.index()
	ci := parse4(t, encoding4(EncodingConstInt, putSint7(-7)), typeInt)
	if v, err := ci.decodeInt(st); err != nil || v != -7 {
		t.Errorf("CONST_INT: %d, %v", v, err)
	}
	cl := parse4(t, encoding4(EncodingConstInt, putSint7(1<<40)), typeLong)
	if v, err := cl.decodeLong(st); err != nil || v != 1<<40 {
		t.Errorf("CONST_INT 64: %d, %v", v, err)
	}
	cb := parse4(t, encoding4(EncodingConstByte, putSint7('N')), typeByte)
	if v, err := cb.decodeByte(st); err != nil || v != 'N' {
		t.Errorf("CONST_BYTE: %q, %v", v, err)
	}
	if b, err := cb.appendBytes(st, []byte("x"), 3); err != nil || string(b) != "xNNN" {
		t.Errorf("CONST_BYTE appendBytes: %q, %v", b, err)
	}
	// BYTE_ARRAY_LEN with a CONST_INT length: how htslib 1.16 writes
	// integer tags in CRAM 4.0; the tag plan reads it in one go.
	st = &streams{}
	st.add(4, []byte{1, 2, 3, 4, 5})
	st.index()
	bal := parse4(t, encoding4(EncodingByteArrayLen, append(encoding4(EncodingConstInt, putSint7(4)), encoding4(EncodingExternal, putUint7(4))...)), typeByteArray)
	if b, err := bal.appendArray(st, nil); err != nil || !bytes.Equal(b, []byte{1, 2, 3, 4}) {
		t.Errorf("BYTE_ARRAY_LEN(CONST_INT 4): % x, %v", b, err)
	}
	key := int32('X')<<16 | int32('Y')<<8 | 'i'
	plan := planTagLine([]byte("XYi"), map[int32]*Encoding{key: bal}, true)
	if op := plan.ops[0]; op.kind != tagConst || op.n != 4 {
		t.Errorf("tag plan: kind %d, n %d; want a constant length of 4", op.kind, op.n)
	}
}

func TestEncodings4Refused(t *testing.T) {
	r4 := varints{v4: true}
	for name, c := range map[string]struct {
		b  []byte
		vt valueType
		r  varints
	}{
		// CRAM 4.0 keeps EXTERNAL for bytes: htslib refuses it for integers.
		"EXTERNAL int":            {encoding4(EncodingExternal, putUint7(3)), typeInt, r4},
		"EXTERNAL long":           {encoding4(EncodingExternal, putUint7(3)), typeLong, r4},
		"VARINT before CRAM 4":    {[]byte{41, 2, 3, 0}, typeInt, varints{}},
		"CONST before CRAM 4":     {[]byte{44, 1, 0}, typeInt, varints{}},
		"VARINT for a byte array": {encoding4(EncodingVarintSigned, []byte{3, 0}), typeByteArray, r4},
		"CONST parameters left":   {encoding4(EncodingConstInt, []byte{2, 0}), typeInt, r4},
		"XPACK":                   {encoding4(EncodingXPack, []byte{1, 2, 65, 66, 1, 1, 3}), typeByte, r4},
		"XRLE":                    {encoding4(EncodingXRLE, []byte{0}), typeByte, r4},
		"XDELTA":                  {encoding4(EncodingXDelta, []byte{2, 41, 2, 3, 0}), typeInt, r4},
	} {
		p := 0
		if e, err := parseEncoding(c.b, &p, c.vt, 0, nil, c.r); err == nil {
			t.Errorf("%s: parsed as %+v", name, e)
		} else if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: err %v, want ErrCorrupt or ErrUnsupported", name, err)
		}
	}
}

// FuzzEncoding4 parses arbitrary CRAM 4.0 encodings of each value type
// and decodes from an arbitrary block 0..3 and core block: no panic, and
// the values a VARINT reads consume its block.
func FuzzEncoding4(f *testing.F) {
	f.Add(encoding4(EncodingVarintUnsigned, append(putUint7(1), putSint7(-2)...)), []byte{0x82, 0x2c, 5}, uint8(0))
	f.Add(encoding4(EncodingVarintSigned, append(putUint7(2), putSint7(0)...)), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, uint8(3))
	f.Add(encoding4(EncodingConstByte, putSint7('A')), []byte{}, uint8(1))
	f.Add(encoding4(EncodingByteArrayLen, append(encoding4(EncodingConstInt, putSint7(2)), encoding4(EncodingExternal, putUint7(1))...)), []byte("abc"), uint8(2))
	f.Fuzz(func(t *testing.T, b, blk []byte, vt uint8) {
		p := 0
		e, err := parseEncoding(b, &p, valueType(vt%4), 0, nil, varints{v4: true})
		if err != nil || e == nil {
			return
		}
		if p > len(b) {
			t.Fatalf("read %d of %d bytes", p, len(b))
		}
		st := &streams{}
		for id := int32(0); id < 4; id++ {
			st.add(id, blk)
		}
		st.index()
		st.core.reset(blk)
		for range 3 {
			e.decodeInt(st)
			e.decodeLong(st)
			e.decodeByte(st)
			e.appendArray(st, nil)
		}
	})
}
