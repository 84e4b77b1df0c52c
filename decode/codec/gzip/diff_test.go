package gzip

import (
	"bytes"
	"compress/flate"
	stdgzip "compress/gzip"
	"fmt"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/internal/splitmix"
	kflate "github.com/klauspost/compress/flate"
)

// shapes returns test inputs of many shapes and sizes.
func shapes() []struct {
	name string
	data []byte
} {
	r := splitmix.Rand(1)
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Next())
		}
		return b
	}
	alphabet := func(n int, a string) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = a[r.Intn(len(a))]
		}
		return b
	}
	words := strings.Fields("the quick brown fox jumps over a lazy dog read name quality cigar sequence tag CRAM BAM slice container block")
	text := func(n int) []byte {
		var b []byte
		for len(b) < n {
			b = append(b, words[r.Intn(len(words))]...)
			b = append(b, " \n"[r.Intn(2)])
		}
		return b[:n]
	}
	period := func(n, p int) []byte {
		unit := random(p)
		b := make([]byte, n)
		for i := range b {
			b[i] = unit[i%p]
		}
		return b
	}
	// Random 32768-byte runs repeated: matches at distance 32768.
	far := random(32768)
	far = append(far, far...)
	far = append(far, random(1000)...)
	far = append(far, far[len(far)-32768:len(far)-32768+5000]...)
	// Runs of a byte of every length up to 300, then random bytes.
	var runs []byte
	for n := 1; n <= 300; n++ {
		runs = append(runs, bytes.Repeat([]byte{byte(n)}, n)...)
		runs = append(runs, random(r.Intn(4))...)
	}
	// Mixed: text, random and repeats.
	var mixed []byte
	for len(mixed) < 300000 {
		switch r.Intn(4) {
		case 0:
			mixed = append(mixed, text(r.Intn(5000))...)
		case 1:
			mixed = append(mixed, random(r.Intn(3000))...)
		case 2:
			mixed = append(mixed, period(r.Intn(4000), 1+r.Intn(12))...)
		case 3:
			if len(mixed) > 100 {
				from := r.Intn(len(mixed) - 50)
				mixed = append(mixed, mixed[from:from+r.Intn(min(len(mixed)-from, 40000))]...)
			}
		}
	}
	out := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"one", []byte{'x'}},
		{"two", []byte("ab")},
		{"random300", random(300)},
		{"random100k", random(100000)},
		{"zeros100k", make([]byte, 100000)},
		{"text1k", text(1000)},
		{"text200k", text(200000)},
		{"dna", alphabet(150000, "ACGT")},
		{"qual", alphabet(150000, "#+-5:?@ABCDEFGHI")},
		{"far", far},
		{"runs", runs},
		{"mixed", mixed},
		{"stored-max", random(70000)},
	}
	for p := 1; p <= 9; p++ {
		out = append(out, struct {
			name string
			data []byte
		}{fmt.Sprintf("period%d", p), period(3000, p)})
	}
	for _, n := range []int{265, 266, 267, 1000, 4095, 4096, 4097} {
		out = append(out, struct {
			name string
			data []byte
		}{fmt.Sprintf("text%d", n), text(n)})
	}
	return out
}

// compressors are the DEFLATE encoders the differential tests use: every
// level of compress/flate and several of klauspost's, whose streams
// differ in block types, block sizes and match choices.
var compressors = func() []struct {
	name string
	f    func([]byte) []byte
} {
	var cs []struct {
		name string
		f    func([]byte) []byte
	}
	for level := -2; level <= 9; level++ {
		cs = append(cs, struct {
			name string
			f    func([]byte) []byte
		}{fmt.Sprintf("flate%d", level), func(b []byte) []byte {
			var buf bytes.Buffer
			w, err := flate.NewWriter(&buf, level)
			if err != nil {
				panic(err)
			}
			w.Write(b)
			w.Close()
			return buf.Bytes()
		}})
	}
	for _, level := range []int{-2, 1, 2, 4, 6, 9} {
		cs = append(cs, struct {
			name string
			f    func([]byte) []byte
		}{fmt.Sprintf("klauspost%d", level), func(b []byte) []byte {
			var buf bytes.Buffer
			w, err := kflate.NewWriter(&buf, level)
			if err != nil {
				panic(err)
			}
			w.Write(b)
			w.Close()
			return buf.Bytes()
		}})
	}
	return cs
}()

func TestDifferential(t *testing.T) {
	for _, s := range shapes() {
		for _, c := range compressors {
			name := s.name + "/" + c.name
			src := member(c.f(s.data), s.data)
			if !checkAgainstOracle(t, name, src) {
				t.Errorf("%s: the oracle rejects it", name)
			}
			got, err := decodeNew(src, len(s.data))
			if err != nil || !bytes.Equal(got, s.data) {
				t.Errorf("%s: %d bytes, %v", name, len(got), err)
			}
		}
	}
}

// TestHeaders decodes members with every combination of the optional
// header fields, as compress/gzip writes them (FEXTRA, FNAME, FCOMMENT)
// and crafted (FHCRC).
func TestHeaders(t *testing.T) {
	data := []byte(strings.Repeat("header test ", 50))
	body := compressors[7].f(data)
	for flg := range 32 {
		if flg&1 != 0 {
			continue // FTEXT is only a hint; tested once below
		}
		h := []byte{0x1f, 0x8b, 8, byte(flg), 1, 2, 3, 4, 0, 3}
		if flg&flagExtra != 0 {
			h = append(h, 6, 0, 'A', 'B', 2, 0, 'x', 'y')
		}
		if flg&flagName != 0 {
			h = append(h, "name.txt\x00"...)
		}
		if flg&flagComment != 0 {
			h = append(h, "a comment\xe9\x00"...)
		}
		if flg&flagHCRC != 0 {
			c := crc32.ChecksumIEEE(h)
			h = append(h, byte(c), byte(c>>8))
		}
		src := appendTrailer(append(h, body...), data)
		name := fmt.Sprintf("flags%#02x", flg)
		if !checkAgainstOracle(t, name, src) {
			t.Errorf("%s: the oracle rejects it", name)
		}
		if flg&flagHCRC != 0 {
			bad := bytes.Clone(src)
			bad[len(h)-1] ^= 1
			if checkAgainstOracle(t, name+"/bad-hcrc", bad) {
				t.Errorf("%s: the oracle accepts a bad header CRC", name)
			}
		}
	}
	// compress/gzip's own headers, FTEXT, and reserved flags.
	var buf bytes.Buffer
	w := stdgzip.NewWriter(&buf)
	w.Name, w.Comment, w.Extra = "x.bam", "comment", []byte{'B', 'C', 2, 0, 1, 2}
	w.Write(data)
	w.Close()
	checkAgainstOracle(t, "stdlib-header", buf.Bytes())
	ftext := member(body, data)
	ftext[3] = 1
	checkAgainstOracle(t, "ftext", ftext)
	// klauspost's reader rejects reserved flag bits (RFC 1952 §2.3.1:
	// "A compliant decompressor must give an error indication if any
	// reserved bit is non-zero"); compress/gzip ignores them.
	for bit := 5; bit < 8; bit++ {
		res := member(body, data)
		res[3] = 1 << bit
		if checkAgainstKlauspost(t, fmt.Sprintf("reserved%d", bit), res) {
			t.Errorf("reserved flag bit %d accepted", bit)
		}
		if _, err := stdDecode(res); err != nil {
			t.Errorf("compress/gzip now rejects reserved flag bit %d (%v): the oracles agree again", bit, err)
		}
	}
	// FNAME and FCOMMENT of 511 bytes are accepted, of 512 rejected.
	for _, flg := range []byte{flagName, flagComment} {
		for n := 509; n <= 513; n++ {
			h := []byte{0x1f, 0x8b, 8, flg, 0, 0, 0, 0, 0, 3}
			h = append(h, bytes.Repeat([]byte{'n'}, n)...)
			h = append(h, 0)
			src := appendTrailer(append(h, body...), data)
			ok := checkAgainstOracle(t, fmt.Sprintf("flag%#02x-len%d", flg, n), src)
			if ok != (n <= 511) {
				t.Errorf("flag %#02x, string of %d bytes: accepted %v", flg, n, ok)
			}
		}
	}
}

// TestMultipleMembers decodes concatenated members, including empty ones,
// and pins what follows the last member: nothing is accepted, not even
// zero padding or a partial header.
func TestMultipleMembers(t *testing.T) {
	a := []byte(strings.Repeat("first member ", 100))
	b := []byte(strings.Repeat("second ", 300))
	ma := member(compressors[8].f(a), a)
	mb := member(compressors[3].f(b), b)
	me := member(compressors[8].f(nil), nil)
	cat := func(ms ...[]byte) []byte { return bytes.Join(ms, nil) }
	for _, tc := range []struct {
		name string
		src  []byte
		ok   bool
	}{
		{"two", cat(ma, mb), true},
		{"three", cat(ma, mb, ma), true},
		{"empty-first", cat(me, ma), true},
		{"empty-last", cat(ma, me), true},
		{"empties", cat(me, me, me), true},
		{"zero-byte", cat(ma, []byte{0}), false},
		{"zero-padding", cat(ma, make([]byte, 512)), false},
		{"garbage", cat(ma, []byte("garbage after the member")), false},
		{"partial-header", cat(ma, mb[:9]), false},
		{"header-only", cat(ma, mb[:10]), false},
		{"magic-only", cat(ma, []byte{0x1f, 0x8b}), false},
		{"truncated-second", cat(ma, mb[:len(mb)-1]), false},
		{"empty-input", nil, false},
	} {
		if ok := checkAgainstOracle(t, tc.name, tc.src); ok != tc.ok {
			t.Errorf("%s: oracle accepts: %v, want %v", tc.name, ok, tc.ok)
		}
	}
	// A match may not reach into the previous member's output: the
	// second member below is "abcabc" as a literal "abc" and a match
	// of 3 at distance 3, then a copy reaching 6 back, into member one.
	var w bitWriter
	w.bits(0b011, 3) // final, fixed Huffman
	fixedLit := func(s int) { fixedLitCode(&w, s) }
	for _, c := range "abc" {
		fixedLit(int(c))
	}
	fixedLit(257) // length 3
	w.code(2, 5)  // distance code 2: distance 3
	fixedLit(256)
	ok := member(w.bytes(), []byte("abcabc"))
	if !checkAgainstOracle(t, "fixed-abcabc", ok) {
		t.Fatal("the crafted member is rejected")
	}
	w = bitWriter{}
	w.bits(0b011, 3)
	fixedLit(257)
	w.code(4, 5) // distance code 4 with 1 extra bit 1: distance 6
	w.bits(1, 1)
	fixedLit(256)
	far := member(w.bytes(), []byte("abc"))
	if checkAgainstOracle(t, "cross-member-distance", cat(ok, far)) {
		t.Error("a match into the previous member is accepted")
	}
}
