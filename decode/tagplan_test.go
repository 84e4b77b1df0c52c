package decode

import (
	"bytes"
	"errors"
	"testing"
)

// TestTagPlan reads a record's tags through the plan of its tag line and
// compares them with each tag's encoding read the general way: a constant
// length from an external block (how writers store integer tags), a stop
// byte, a length read from its own block, and a constant length below
// zero, which the plan must leave to the general path to reject.
func TestTagPlan(t *testing.T) {
	parseAs := func(b []byte, vt valueType) *Encoding {
		p := 0
		e, err := parseEncoding(b, &p, vt, 0, nil, varints{})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	parse := func(b []byte) *Encoding { return parseAs(b, typeByteArray) }
	oneLen := func(n int32) []byte { return encodingBytes(EncodingHuffman, huffParams([]int32{n}, []int32{0})) }
	ext := func(id int32) []byte { return encodingBytes(EncodingExternal, putITF8(id)) }
	// Encodings remember their block per slice, so the general reads get
	// their own.
	makeTags := func() map[int32]*Encoding {
		return map[int32]*Encoding{
			'X'<<16 | 'A'<<8 | 'i': parse(encodingBytes(EncodingByteArrayLen, append(oneLen(4), ext(5)...))),
			'M'<<16 | 'C'<<8 | 'Z': parse(encodingBytes(EncodingByteArrayStop, append([]byte{0}, putITF8(6)...))),
			'X'<<16 | 'B'<<8 | 'Z': parse(encodingBytes(EncodingByteArrayLen, append(ext(7), ext(8)...))),
			'N'<<16 | 'M'<<8 | 'C': parse(encodingBytes(EncodingByteArrayLen, append(oneLen(1), ext(9)...))),
			'X'<<16 | 'N'<<8 | 'C': parse(encodingBytes(EncodingByteArrayLen, append(oneLen(-1), ext(9)...))),
		}
	}
	tags, general := makeTags(), makeTags()
	blocks := func() *streams {
		st := &streams{}
		st.add(5, []byte{1, 2, 3, 4, 5, 6, 7, 8})
		st.add(6, []byte("150M\x0075M\x00"))
		st.add(7, []byte{3, 2})
		st.add(8, []byte("abcde"))
		st.add(9, []byte{42, 43})
		st.index()
		return st
	}
	line := []byte("XAiMCZXBZNMC")
	plan := planTagLine(line, tags, false)
	if plan.hasMD || !plan.hasNM {
		t.Errorf("hasMD %v hasNM %v, want false true", plan.hasMD, plan.hasNM)
	}
	kinds := []tagKind{tagConst, tagStop, tagGeneral, tagConst}
	for i, op := range plan.ops {
		if op.kind != kinds[i] {
			t.Errorf("tag %s: kind %d, want %d", op.key[:], op.kind, kinds[i])
		}
	}
	if p := planTagLine([]byte("XNC"), tags, false); p.ops[0].kind != tagGeneral {
		t.Errorf("negative constant length planned as kind %d", p.ops[0].kind)
	}

	ch := &CompressionHeader{TagLines: [][]byte{line, []byte("XNC")}, Tags: tags}
	ch.DataSeries[DSTL] = parseAs(encodingBytes(EncodingHuffman, huffParams([]int32{0}, []int32{0})), typeInt)
	ch.tagPlans = []tagPlan{plan, planTagLine([]byte("XNC"), tags, false)}
	d := &Decoder{}
	d.st = *blocks()
	d.st.maxArray = 100
	want := blocks()
	want.maxArray = 100
	var wantAux []byte
	for rec := 0; rec < 2; rec++ {
		start := len(d.aux)
		hasMD, hasNM, err := d.readTags(ch, &crec{})
		if err != nil || hasMD || !hasNM {
			t.Fatalf("record %d: readTags: %v %v %v", rec, hasMD, hasNM, err)
		}
		var w []byte
		for i := 0; i < len(line); i += 3 {
			k := line[i : i+3]
			w = append(w, k...)
			if w, err = general[int32(k[0])<<16|int32(k[1])<<8|int32(k[2])].appendArray(want, w); err != nil {
				t.Fatal(err)
			}
		}
		wantAux = append(wantAux, w...)
		if got := d.aux[start:]; !bytes.Equal(got, w) {
			t.Errorf("record %d: tags %q, want %q", rec, got, w)
		}
	}
	if !bytes.Equal(d.aux, wantAux) {
		t.Errorf("aux %q, want %q", d.aux, wantAux)
	}
	// A third record runs out of the constant-length block; the XN line's
	// negative length is rejected.
	if _, _, err := d.readTags(ch, &crec{}); err == nil {
		t.Error("third record: no error past the end of block 5")
	}
	ch.DataSeries[DSTL] = parseAs(encodingBytes(EncodingHuffman, huffParams([]int32{1}, []int32{0})), typeInt)
	if _, _, err := d.readTags(ch, &crec{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("negative constant length: %v, want ErrCorrupt", err)
	}
}
