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

// countingReader counts the reads and bytes asked of it.
type countingReader struct {
	r            io.ReaderAt
	reads, bytes int
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.reads++
	c.bytes += len(p)
	return c.r.ReadAt(p, off)
}

// TestAheadReaderReadSizes: headers of large containers (one per read)
// are read minAhead bytes at a time after the first, not aheadSize;
// headers close together are still served many per read.
func TestAheadReaderReadSizes(t *testing.T) {
	data := make([]byte, 50*aheadSize)
	for _, tc := range []struct {
		name              string
		stride            int64
		headers, maxReads int
		maxBytes          int
	}{
		{"large containers", 3 * aheadSize / 2, 30, 30, aheadSize + 30*minAhead},
		{"small containers", 300, 2000, 20, 20 * aheadSize},
	} {
		c := &countingReader{r: bytes.NewReader(data)}
		a := &aheadReader{r: c, buf: make([]byte, 0, aheadSize)}
		for k := range tc.headers {
			if _, err := a.ReadAt(make([]byte, 256), int64(k)*tc.stride); err != nil {
				t.Fatal(err)
			}
		}
		if c.reads > tc.maxReads || c.bytes > tc.maxBytes {
			t.Errorf("%s: %d reads of %d bytes in all for %d headers", tc.name, c.reads, c.bytes, tc.headers)
		}
	}
}
