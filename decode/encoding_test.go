package decode

import (
	"bytes"
	"errors"
	"testing"
)

// bitWriter writes bits most significant first, for building core blocks.
type bitWriter struct {
	b []byte
	n uint
}

func (w *bitWriter) put(v uint32, bits int) {
	for i := bits - 1; i >= 0; i-- {
		if w.n%8 == 0 {
			w.b = append(w.b, 0)
		}
		if v>>uint(i)&1 == 1 {
			w.b[len(w.b)-1] |= 0x80 >> (w.n % 8)
		}
		w.n++
	}
}

func huffParams(syms, lens []int32) []byte {
	var p []byte
	p = append(p, putITF8(int32(len(syms)))...)
	for _, s := range syms {
		p = append(p, putITF8(s)...)
	}
	p = append(p, putITF8(int32(len(lens)))...)
	for _, l := range lens {
		p = append(p, putITF8(l)...)
	}
	return p
}

func TestHuffmanCanonical(t *testing.T) {
	// Symbols 'A'(1 bit), 'B','C'(2... ) lengths 1,2,3,3 give codes
	// 0, 10, 110, 111 in (length, symbol) order.
	h, err := parseHuffman(huffParams([]int32{'D', 'B', 'A', 'C'}, []int32{3, 2, 1, 3}), nil, varints{})
	if err != nil {
		t.Fatal(err)
	}
	var w bitWriter
	w.put(0b0, 1)   // A
	w.put(0b10, 2)  // B
	w.put(0b110, 3) // C
	w.put(0b111, 3) // D
	var br bitReader
	br.reset(w.b)
	for _, want := range []int32{'A', 'B', 'C', 'D'} {
		got, err := h.decode(&br)
		if err != nil || got != want {
			t.Fatalf("decoded %q, %v; want %q", got, err, want)
		}
	}
	// The 7 padding bits of the last byte read as 'A' (code 0).
	for range 7 {
		if got, err := h.decode(&br); err != nil || got != 'A' {
			t.Fatalf("padding decoded %q, %v", got, err)
		}
	}
	if _, err := h.decode(&br); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("decoding past the end: %v, want ErrCorrupt", err)
	}
}

func TestHuffmanSingleSymbolReadsNoBits(t *testing.T) {
	h, err := parseHuffman(huffParams([]int32{42}, []int32{0}), nil, varints{})
	if err != nil {
		t.Fatal(err)
	}
	var br bitReader
	br.reset(nil)
	for range 3 {
		if v, err := h.decode(&br); err != nil || v != 42 {
			t.Fatalf("got %d, %v", v, err)
		}
	}
}

// encodingBytes is an encoding as a compression header stores it: id,
// parameter length, parameters (CRAMv3 section 13).
func encodingBytes(id EncodingID, params []byte) []byte {
	b := append(putITF8(int32(id)), putITF8(int32(len(params)))...)
	return append(b, params...)
}

// TestHuffmanEmptyAlphabet reads every kind of value through a HUFFMAN
// code with no symbols, which parses: each read fails with ErrCorrupt.
// The one-symbol shortcuts of decodeInt and appendArray once indexed its
// code-length counts, absent for an empty alphabet, and panicked.
func TestHuffmanEmptyAlphabet(t *testing.T) {
	empty := encodingBytes(EncodingHuffman, huffParams(nil, nil))
	parse := func(b []byte, vt valueType) *Encoding {
		p := 0
		e, err := parseEncoding(b, &p, vt, 0, nil, varints{})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	st := &streams{}
	st.add(5, []byte("abcd"))
	st.index()
	e := parse(empty, typeInt)
	if v, err := e.decodeInt(st); !errors.Is(err, ErrCorrupt) {
		t.Errorf("decodeInt: %d, %v; want ErrCorrupt", v, err)
	}
	if v, err := e.decodeByte(st); !errors.Is(err, ErrCorrupt) {
		t.Errorf("decodeByte: %d, %v; want ErrCorrupt", v, err)
	}
	if b, err := e.appendBytes(st, nil, 2); !errors.Is(err, ErrCorrupt) {
		t.Errorf("appendBytes: %q, %v; want ErrCorrupt", b, err)
	}
	bal := parse(encodingBytes(EncodingByteArrayLen, append(empty, encodingBytes(EncodingExternal, putITF8(5))...)), typeByteArray)
	if b, err := bal.appendArray(st, nil); !errors.Is(err, ErrCorrupt) {
		t.Errorf("BYTE_ARRAY_LEN appendArray: %q, %v; want ErrCorrupt", b, err)
	}
}

func TestHuffmanRejectsBadTables(t *testing.T) {
	for name, p := range map[string][]byte{
		"count mismatch":   huffParams([]int32{1, 2}, []int32{1}),
		"oversubscribed":   huffParams([]int32{1, 2, 3}, []int32{1, 1, 1}),
		"negative length":  huffParams([]int32{1, 2}, []int32{-1, 1}),
		"length too long":  huffParams([]int32{1, 2}, []int32{40, 1}),
		"trailing garbage": append(huffParams([]int32{1}, []int32{0}), 7),
	} {
		if _, err := parseHuffman(p, nil, varints{}); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err %v, want ErrCorrupt", name, err)
		}
	}
}

func TestBitCodes(t *testing.T) {
	var w bitWriter
	w.put(5, 4)      // BETA offset 0, 4 bits: 5
	w.put(0b0, 1)    // SUBEXP k=2, u=0: 2 bits
	w.put(3, 2)      //   -> 3
	w.put(0b110, 3)  // SUBEXP u=2 -> b=u+k-1=3 bits, value 1<<3|x
	w.put(0b101, 3)  //   -> 13
	w.put(0b0001, 4) // GAMMA: 3 zeros then 1 -> n=3
	w.put(0b010, 3)  //   -> 1<<3|2 = 10, offset 1 -> 9
	st := &streams{}
	st.core.reset(w.b)
	beta := &Encoding{ID: EncodingBeta, NBits: 4}
	sub := &Encoding{ID: EncodingSubexp, K: 2}
	gam := &Encoding{ID: EncodingGamma, Offset: 1}
	for _, c := range []struct {
		e    *Encoding
		want int32
	}{{beta, 5}, {sub, 3}, {sub, 13}, {gam, 9}} {
		got, err := c.e.decodeInt(st)
		if err != nil || got != c.want {
			t.Fatalf("encoding %d: got %d, %v; want %d", c.e.ID, got, err, c.want)
		}
	}
}

func TestExternalStreams(t *testing.T) {
	st := &streams{}
	st.add(3, append(putITF8(300), 'x', 'y', 'z', 0, 'q'))
	st.add(70, []byte("abc"))
	st.index()
	ext := &Encoding{ID: EncodingExternal, ContentID: 3}
	if v, err := ext.decodeInt(st); err != nil || v != 300 {
		t.Fatalf("int: %d, %v", v, err)
	}
	stop := &Encoding{ID: EncodingByteArrayStop, Stop: 0, ContentID: 3}
	if b, err := stop.appendArray(st, nil); err != nil || string(b) != "xyz" {
		t.Fatalf("stop array: %q, %v", b, err)
	}
	if _, err := stop.appendArray(st, nil); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("array without stop byte: %v, want ErrCorrupt", err)
	}
	big := &Encoding{ID: EncodingExternal, ContentID: 70}
	if b, err := big.appendBytes(st, nil, 3); err != nil || string(b) != "abc" {
		t.Fatalf("bytes: %q, %v", b, err)
	}
	if _, err := big.decodeByte(st); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read past end: %v", err)
	}
	missing := &Encoding{ID: EncodingExternal, ContentID: 9}
	if _, err := missing.decodeInt(st); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("missing block: %v", err)
	}
}

// TestByteArrayLen reads BYTE_ARRAY_LEN values whose length is a constant
// (a one-symbol HUFFMAN code, the fast path for integer tags) and whose
// length is read from an external block, from the same bytes: both give
// the same values and fail the same way on lengths the block cannot hold.
func TestByteArrayLen(t *testing.T) {
	huffConst := func(n int32) *Encoding {
		h, err := parseHuffman(huffParams([]int32{n}, []int32{0}), nil, varints{})
		if err != nil {
			t.Fatal(err)
		}
		return &Encoding{ID: EncodingHuffman, huff: h}
	}
	val := func(id int32) *Encoding { return &Encoding{ID: EncodingExternal, ContentID: id} }
	for _, c := range []struct {
		name    string
		n       int32 // the constant length
		data    string
		want    []string // values read in turn; the next read fails
		wantErr bool
	}{
		{"four-byte values", 4, "abcdefgh", []string{"abcd", "efgh"}, true},
		{"empty values", 0, "", []string{"", "", ""}, false},
		{"short block", 3, "ab", nil, true},
		{"negative length", -1, "abc", nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			lens := string(bytes.Repeat(putITF8(c.n), 4))
			st := &streams{}
			st.add(5, []byte(c.data))
			st.add(6, []byte(c.data))
			st.add(7, []byte(lens))
			st.index()
			fast := &Encoding{ID: EncodingByteArrayLen, Len: huffConst(c.n), Val: val(5)}
			slow := &Encoding{ID: EncodingByteArrayLen, Len: val(7), Val: val(6)}
			for i, w := range c.want {
				for _, e := range []*Encoding{fast, slow} {
					got, err := e.appendArray(st, []byte("XY"))
					if err != nil || string(got) != "XY"+w {
						t.Fatalf("value %d (length from %v): %q, %v; want %q", i, e.Len.ID, got, err, "XY"+w)
					}
				}
			}
			if !c.wantErr {
				return
			}
			for _, e := range []*Encoding{fast, slow} {
				if _, err := e.appendArray(st, nil); !errors.Is(err, ErrCorrupt) {
					t.Errorf("length from %v past the data: %v, want ErrCorrupt", e.Len.ID, err)
				}
			}
		})
	}
}
