package bgzf

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// storedLike writes data through Stored in the given piece sizes, cutting
// after every piece, and returns the buffer after a prefix.
func storedLike(prefix, data []byte, pieces []int) ([]byte, int64) {
	var s Stored
	dst := s.Begin(append([]byte(nil), prefix...))
	total := int64(len(data))
	for _, n := range pieces {
		n = min(n, len(data))
		dst = append(dst, data[:n]...)
		data = data[n:]
		if s.Pos(dst) != total-int64(len(data)) {
			panic("Pos disagrees with the data appended")
		}
		dst = s.Cut(dst)
		if s.Pos(dst) != total-int64(len(data)) {
			panic("Pos changed by Cut")
		}
	}
	dst = append(dst, data...)
	dst = s.End(dst)
	return dst, s.Raw()
}

// TestStoredMatchesAppendBlocks checks Stored against AppendBlocks at level
// 0 around every block boundary and with pieces that straddle several
// blocks, as long records do.
func TestStoredMatchesAppendBlocks(t *testing.T) {
	c, err := NewCompressor(0)
	if err != nil {
		t.Fatal(err)
	}
	rnd := rand.New(rand.NewPCG(3, 4))
	sizes := []int{0, 1, 100, MaxBlockData - 1, MaxBlockData, MaxBlockData + 1, 2 * MaxBlockData, 2*MaxBlockData + 7, 5*MaxBlockData + 12345}
	for _, n := range sizes {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(rnd.Uint32())
		}
		want, err := c.AppendBlocks([]byte("pfx"), data)
		if err != nil {
			t.Fatal(err)
		}
		for _, pieces := range [][]int{nil, {n}, {1, 2, 3}, {300, 301, 302, 303}, {MaxBlockData + 5, 3 * MaxBlockData}, {rnd.IntN(200000) + 1, rnd.IntN(400) + 1}} {
			var split []int
			for len(split) < 2000 && len(pieces) > 0 {
				split = append(split, pieces...)
			}
			got, raw := storedLike([]byte("pfx"), data, split)
			if !bytes.Equal(got, want) {
				t.Fatalf("n=%d pieces=%v: Stored differs from AppendBlocks (%d vs %d bytes)", n, pieces, len(got), len(want))
			}
			if raw != int64(n) {
				t.Fatalf("n=%d: Raw %d", n, raw)
			}
			if int64(len(got)-3) != StoredSize(int64(n)) {
				t.Fatalf("n=%d: StoredSize %d, output %d", n, StoredSize(int64(n)), len(got)-3)
			}
		}
	}
}

func FuzzStored(f *testing.F) {
	f.Add([]byte("hello"), uint16(3), uint16(70000%65536))
	f.Add(bytes.Repeat([]byte{1}, 3*MaxBlockData), uint16(65535), uint16(1))
	f.Fuzz(func(t *testing.T, data []byte, a, b uint16) {
		c, _ := NewCompressor(0)
		want, err := c.AppendBlocks(nil, data)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := storedLike(nil, data, []int{int(a) + 1, int(b) + 1})
		if !bytes.Equal(got, want) {
			t.Fatalf("Stored differs from AppendBlocks for %d bytes", len(data))
		}
	})
}

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
