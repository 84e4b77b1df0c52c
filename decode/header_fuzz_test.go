package decode

import "testing"

// FuzzMaxRefLength checks that MaxRefLength, which only scans for the LN
// of @SQ lines, gives the longest reference ParseSAMHeader finds in every
// header that parses.
func FuzzMaxRefLength(f *testing.F) {
	f.Add([]byte("@HD\tVN:1.6\n@SQ\tSN:a\tLN:100\n@SQ\tSN:b\tLN:536870913\tM5:00\n"))
	f.Add([]byte("@SQ\tSN:a\tLN:5\tLN:7\n@CO\t@SQ\tSN:b\tLN:900\n@SQ\tSN:c\tLN: 12x"))
	f.Add([]byte("@SQ\tSN:a\tLN:-3\n\x00@SQ\tSN:b\tLN:99\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		got := MaxRefLength(raw)
		h, err := ParseSAMHeader(raw)
		if err != nil {
			return
		}
		var want int64
		for _, r := range h.Refs {
			want = max(want, r.Length)
		}
		if got != want {
			t.Fatalf("MaxRefLength %d, ParseSAMHeader's longest reference %d, of %q", got, want, raw)
		}
	})
}
