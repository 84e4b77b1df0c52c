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
		// htslib 1.16 refuses XPACK and XRLE for names and tags, 8 bits
		// a value and more than 256 values.
		"XPACK for a tag":      {encoding4(EncodingXPack, append([]byte{1, 2, 65, 66}, encoding4(EncodingExternal, []byte{3})...)), typeByteBlock, r4},
		"XPACK of 8 bits":      {encoding4(EncodingXPack, append([]byte{8, 2, 65, 66}, encoding4(EncodingExternal, []byte{3})...)), typeByte, r4},
		"XPACK value 256":      {encoding4(EncodingXPack, append([]byte{1, 2, 65, 0x82, 0x00}, encoding4(EncodingExternal, []byte{3})...)), typeByte, r4},
		"XRLE for a read name": {encoding4(EncodingXRLE, append(append([]byte{0}, encoding4(EncodingVarintUnsigned, []byte{3, 0})...), encoding4(EncodingExternal, []byte{4})...)), typeByteBlock, r4},
		"XDELTA before CRAM 4": {[]byte{53, 6, 2, 41, 2, 3, 0}, typeInt, varints{}},
		"XDELTA with no sub":   {encoding4(EncodingXDelta, []byte{2, 0, 0}), typeInt, r4},
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
	f.Add(xpackParams(2, "ACGT", encoding4(EncodingExternal, putUint7(1))), []byte{0x1b, 0xe4}, uint8(1))
	f.Add(xrleParams("I", encoding4(EncodingVarintUnsigned, []byte{2, 0}), encoding4(EncodingExternal, []byte{3})), []byte{7, 4, 3, 'I', '#'}, uint8(1))
	f.Add(encoding4(EncodingXDelta, append([]byte{2}, encoding4(EncodingVarintUnsigned, []byte{1, 0})...)), []byte{4, 3, 0x81, 0x00}, uint8(0))
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

// xpackParams is an XPACK encoding of values (each one byte) in nbits
// bits, over sub.
func xpackParams(nbits int, values string, sub []byte) []byte {
	p := append(putUint7(uint64(nbits)), putUint7(uint64(len(values)))...)
	for _, v := range []byte(values) {
		p = append(p, putUint7(uint64(v))...)
	}
	return encoding4(EncodingXPack, append(p, sub...))
}

// xrleParams is an XRLE encoding repeating the symbols rep, its run
// lengths from lens and literals from lits.
func xrleParams(rep string, lens, lits []byte) []byte {
	p := putUint7(uint64(len(rep)))
	for _, v := range []byte(rep) {
		p = append(p, putUint7(uint64(v))...)
	}
	return encoding4(EncodingXRLE, append(append(p, lens...), lits...))
}

func TestXPack(t *testing.T) {
	// 2 bits a value, lowest first: 0x1b = 00 01 10 11 gives T G C A
	// read from the low bits up; 0xe4 = 11 10 01 00 gives A C G T.
	st := &streams{}
	st.add(1, []byte{0x1b, 0xe4})
	st.core.reset([]byte{0b01101100})
	st.index()
	e := parse4(t, xpackParams(2, "ACGT", encoding4(EncodingExternal, putUint7(1))), typeByte)
	b, err := e.appendBytes(st, nil, 3)
	if err == nil {
		b, err = e.appendBytes(st, b, 5)
	}
	if err != nil || string(b) != "TGCAACGT" {
		t.Errorf("XPACK bytes: %q, %v, want TGCAACGT", b, err)
	}
	if _, err := e.decodeByte(st); !errors.Is(err, ErrCorrupt) {
		t.Errorf("past the unpacked block: err %v, want ErrCorrupt", err)
	}
	// Integers come from the core block, most significant bits first,
	// the sub-encoding unused: 01 10 11 00.
	ei := parse4(t, xpackParams(2, "\x05\x06\x07\x08", encoding4(EncodingVarintUnsigned, []byte{1, 0})), typeInt)
	for _, want := range []int32{6, 7, 8, 5} {
		if v, err := ei.decodeInt(st); err != nil || v != want {
			t.Errorf("XPACK int: %d, %v, want %d", v, err, want)
		}
	}
	// One value: a constant, nothing read.
	one := parse4(t, xpackParams(0, "Q", encoding4(EncodingExternal, putUint7(9))), typeByte)
	if b, err := one.appendBytes(st, nil, 3); err != nil || string(b) != "QQQ" {
		t.Errorf("XPACK of one value: %q, %v", b, err)
	}
	// 3 bits a value: htslib's unpacking leaves its buffer undefined.
	three := parse4(t, xpackParams(3, "ACGTN", encoding4(EncodingExternal, putUint7(1))), typeByte)
	if _, err := three.decodeByte(st); !errors.Is(err, ErrUnsupported) {
		t.Errorf("XPACK of 3 bits: err %v, want ErrUnsupported", err)
	}
}

func TestXRLE(t *testing.T) {
	// 'I' repeats: literals I # I A, runs 3 and 0 (4 and 1 copies); the
	// length block starts with the output size, 7.
	lens := []byte{7, 3, 0}
	st := &streams{}
	st.add(2, lens)
	st.add(3, []byte("I#IA"))
	st.index()
	e := parse4(t, xrleParams("I", encoding4(EncodingVarintUnsigned, []byte{2, 0}), encoding4(EncodingExternal, []byte{3})), typeByte)
	b, err := e.appendBytes(st, nil, 7)
	if err != nil || string(b) != "IIII#IA" {
		t.Errorf("XRLE: %q, %v, want IIII#IA", b, err)
	}
	// The next slice expands afresh.
	st.reset()
	st.add(2, []byte{3, 2})
	st.add(3, []byte("I"))
	st.index()
	if b, err := e.appendBytes(st, nil, 3); err != nil || string(b) != "III" {
		t.Errorf("XRLE, second slice: %q, %v", b, err)
	}
	// A run past the declared size fails (htslib's hts_rle_decode).
	st.reset()
	st.add(2, []byte{2, 2})
	st.add(3, []byte("I"))
	st.index()
	if _, err := e.decodeByte(st); !errors.Is(err, ErrCorrupt) {
		t.Errorf("run past the declared size: err %v, want ErrCorrupt", err)
	}
	// For integers it parses only with integer literals, and fails when
	// read.
	ei := parse4(t, xrleParams("I", encoding4(EncodingVarintUnsigned, []byte{2, 0}), encoding4(EncodingVarintUnsigned, []byte{3, 0})), typeInt)
	if _, err := ei.decodeInt(st); !errors.Is(err, ErrUnsupported) {
		t.Errorf("XRLE of integers: err %v, want ErrUnsupported", err)
	}
}

func TestXDelta(t *testing.T) {
	// Integers: zig-zag deltas 4 (+2), 3 (-2), 0x81 0x00 (128: +64),
	// running on from slice to slice.
	st := &streams{}
	st.add(1, []byte{4, 3, 0x81, 0x00})
	st.index()
	e := parse4(t, encoding4(EncodingXDelta, append([]byte{2}, encoding4(EncodingVarintUnsigned, []byte{1, 0})...)), typeInt)
	for _, want := range []int32{2, 0, 64} {
		if v, err := e.decodeInt(st); err != nil || v != want {
			t.Errorf("XDELTA int: %d, %v, want %d", v, err, want)
		}
	}
	st.reset()
	st.add(1, []byte{2})
	st.index()
	if v, err := e.decodeInt(st); err != nil || v != 65 {
		t.Errorf("XDELTA int, next slice: %d, %v, want 65", v, err)
	}
	if _, err := e.decodeLong(st); !errors.Is(err, ErrUnsupported) {
		t.Errorf("XDELTA of a 64-bit series: err %v, want ErrUnsupported", err)
	}
	// A tag's array of 3 bytes in 16-bit words: the first word, 0x0102,
	// cut to its low byte, then 0x0102 + 0x0100 = 0x0202, little endian;
	// each array starts from 0.
	st = &streams{}
	var blk []byte
	for _, d := range []int{0x0102, 0x0100, 0x0102, 0x0100} {
		blk = append(blk, putUint7(uint64(d<<1))...)
	}
	st.add(4, blk)
	st.add(5, []byte{3, 3})
	st.index()
	bal := parse4(t, encoding4(EncodingByteArrayLen, append(encoding4(EncodingVarintUnsigned, []byte{5, 0}),
		encoding4(EncodingXDelta, append([]byte{2}, encoding4(EncodingExternal, []byte{4})...))...)), typeByteBlock)
	for range 2 {
		if b, err := bal.appendArray(st, nil); err != nil || !bytes.Equal(b, []byte{0x02, 0x02, 0x02}) {
			t.Errorf("XDELTA array: % x, %v, want 02 02 02", b, err)
		}
	}
	// BB's arrays are not names or tags: htslib 1.16 fails them.
	st.reset()
	st.add(4, blk)
	st.add(5, []byte{3})
	st.index()
	bb := parse4(t, encoding4(EncodingByteArrayLen, append(encoding4(EncodingVarintUnsigned, []byte{5, 0}),
		encoding4(EncodingXDelta, append([]byte{2}, encoding4(EncodingExternal, []byte{4})...))...)), typeByteArray)
	if _, err := bb.appendArray(st, nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("XDELTA for BB: err %v, want ErrUnsupported", err)
	}
}
