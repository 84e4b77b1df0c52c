package bgzf

import "testing"

func BenchmarkStored(b *testing.B) {
	data := realBAM(b)
	dst := make([]byte, 0, StoredSize(int64(len(data))))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var s Stored
		d := s.Begin(dst[:0])
		for p := data; len(p) > 0; {
			n := min(len(p), 400)
			d = append(d, p[:n]...)
			d = s.Cut(d)
			p = p[n:]
		}
		s.End(d)
	}
}
