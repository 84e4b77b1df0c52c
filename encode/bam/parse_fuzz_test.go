package bam

import (
	"encoding/binary"
	"testing"
)

// FuzzParseHeaderRefs parses arbitrary SAM header text (SAMv1 §1.3): no
// panic, and every reference it returns fits the BAM header it makes.
func FuzzParseHeaderRefs(f *testing.F) {
	f.Add([]byte(testHeader))
	f.Add([]byte("@SQ\tSN:a\tLN:10\tLN:30\n"))
	f.Add([]byte("@SQ\tSN:a\tLN:1\n\x00@SQ\tSN:b\tLN:2\n"))
	f.Add([]byte("@SQ\tSN:a\tLN: +12x\n@SQ\tSN:b\tLN:99999999999999999999\n"))
	f.Fuzz(func(t *testing.T, text []byte) {
		refs, err := ParseHeaderRefs(text)
		if err != nil {
			return
		}
		h := AppendHeader(nil, text, refs)
		if len(h) < 12 || string(h[:4]) != "BAM\x01" {
			t.Fatalf("header of %d bytes without magic", len(h))
		}
		lText := int(binary.LittleEndian.Uint32(h[4:]))
		if 8+lText+4 > len(h) {
			t.Fatalf("l_text %d overruns a %d-byte header", lText, len(h))
		}
		if n := int(binary.LittleEndian.Uint32(h[8+lText:])); n != len(refs) {
			t.Fatalf("n_ref %d, %d references", n, len(refs))
		}
	})
}

// FuzzRecordInfo reads arbitrary bytes as a BAM record (SAMv1 §4.2): no
// panic, and a record it accepts has a sane span.
func FuzzRecordInfo(f *testing.F) {
	for _, c := range handBuilt() {
		if out, err := AppendRecord(nil, &c.rec); err == nil && len(out) < 4096 {
			f.Add(out)
		}
	}
	f.Fuzz(func(t *testing.T, rec []byte) {
		_, pos, end, _, err := RecordInfo(rec)
		if err != nil {
			return
		}
		if end < pos {
			t.Fatalf("end %d before pos %d", end, pos)
		}
	})
}
