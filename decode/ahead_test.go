package decode

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// TestAheadReaderReadsWhatTheFileHolds compares aheadReader with the
// reader under it for reads in order, going back, past the end and larger
// than its buffer.
func TestAheadReaderReadsWhatTheFileHolds(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 3*aheadSize+123)
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	under := bytes.NewReader(data)
	a := &aheadReader{r: under, buf: make([]byte, 0, aheadSize)}
	off := int64(0)
	for q := 0; q < 5000; q++ {
		n := 1 + rng.IntN(300)
		switch q % 7 {
		case 0:
			off = rng.Int64N(int64(len(data)) + 10)
		case 1:
			n = 1 + rng.IntN(2*aheadSize)
		}
		want := make([]byte, n)
		wn, werr := under.ReadAt(want, off)
		got := make([]byte, n)
		gn, gerr := a.ReadAt(got, off)
		if gn != wn || !bytes.Equal(got[:gn], want[:wn]) || (gerr == nil) != (werr == nil) {
			t.Fatalf("ReadAt(%d bytes at %d) = %d, %v; want %d, %v", n, off, gn, gerr, wn, werr)
		}
		if gerr != nil && gerr != io.EOF {
			t.Fatalf("ReadAt(%d bytes at %d): %v", n, off, gerr)
		}
		off += int64(gn)
	}
}
