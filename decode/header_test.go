package decode

import (
	"bytes"
	"testing"
	"unsafe"
)

// TestParseSAMHeaderUR: each @SQ line's first UR: value is its RefSeq.UR
// (without a line's trailing CR), "" when the line has none, and lines
// naming the same UR: share one string, so that a GRCh38 header whose
// 3,366 lines all name one FASTA holds it once.
func TestParseSAMHeaderUR(t *testing.T) {
	text := "@HD\tVN:1.6\n" +
		"@SQ\tSN:chr1\tLN:10\tUR:/refs/a.fa\tM5:0123\tUR:/second.fa\n" +
		"@SQ\tSN:chr2\tLN:10\n" +
		"@SQ\tUR:file:///b.fa\tSN:chr3\tLN:5\r\n" +
		"@CO\tSN:chr4\tUR:/not/an/sq\n" +
		"@SQ\tSN:chr5\tLN:1\tUR:/refs/a.fa\n" +
		"@SQ\tSN:chr6\tLN:1\tUR:\n"
	h, err := ParseSAMHeader([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ name, ur string }{{"chr1", "/refs/a.fa"}, {"chr2", ""}, {"chr3", "file:///b.fa"}, {"chr5", "/refs/a.fa"}, {"chr6", ""}}
	if len(h.Refs) != len(want) {
		t.Fatalf("%d @SQ lines parsed, want %d: %+v", len(h.Refs), len(want), h.Refs)
	}
	for i, w := range want {
		if r := h.Refs[i]; r.Name != w.name || r.UR != w.ur {
			t.Errorf("Refs[%d] = %s UR %q, want %s UR %q", i, r.Name, r.UR, w.name, w.ur)
		}
	}
	if unsafe.StringData(h.Refs[0].UR) != unsafe.StringData(h.Refs[3].UR) {
		t.Error("two @SQ lines naming the same UR: hold two copies of it")
	}
}

// FuzzParseSAMHeader checks that ParseSAMHeader never panics and that each
// RefSeq's UR is a UR: field of an @SQ line of the text.
func FuzzParseSAMHeader(f *testing.F) {
	f.Add([]byte("@SQ\tSN:chr1\tLN:10\tUR:/refs/a.fa\n@SQ\tSN:x\tLN:1\tUR:file:///y\n"))
	f.Add([]byte("@SQ\tUR:\tSN:a\tLN:1\n@SQ\tSN:b\tLN:2\tUR:u\r\n@RG\tID:r\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		h, err := ParseSAMHeader(text)
		if err != nil {
			return
		}
		for _, r := range h.Refs {
			if r.UR != "" && !bytes.Contains(text, []byte("\tUR:"+r.UR)) {
				t.Fatalf("@SQ %q got UR %q, which the text does not hold", r.Name, r.UR)
			}
		}
	})
}
