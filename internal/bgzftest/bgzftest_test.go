package bgzftest_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"testing"

	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/internal/bgzftest"
)

// TestCorrupt: every damage to a block is ErrCorrupt, never other bytes.
func TestCorrupt(t *testing.T) {
	c, _ := bgzf.NewCompressor(6)
	good, _ := c.AppendBlocks(nil, []byte("hello, bgzf"))
	if got, err := bgzftest.DecompressAll(good); err != nil || string(got) != "hello, bgzf" {
		t.Fatalf("good block: %q, %v", got, err)
	}
	mutate := func(f func(b []byte)) []byte { b := bytes.Clone(good); f(b); return b }
	tests := map[string][]byte{
		"bad magic":  mutate(func(b []byte) { b[0] = 0 }),
		"no FEXTRA":  mutate(func(b []byte) { b[3] = 0 }),
		"bad CRC":    mutate(func(b []byte) { b[len(b)-8] ^= 1 }),
		"bad ISIZE":  mutate(func(b []byte) { b[len(b)-4]++ }),
		"truncated":  good[:len(good)-1],
		"short head": good[:10],
		"BSIZE tiny": mutate(func(b []byte) { b[16], b[17] = 5, 0 }),
		"no BC":      mutate(func(b []byte) { b[12] = 'X' }),
		"bad data":   mutate(func(b []byte) { b[18], b[19] = 0xff, 0xff }),
	}
	for name, b := range tests {
		if _, err := bgzftest.DecompressAll(b); !errors.Is(err, bgzftest.ErrCorrupt) {
			t.Errorf("%s: DecompressAll: %v, want ErrCorrupt", name, err)
		}
	}
}

// FuzzDecompressAll: any input is refused with ErrCorrupt or decodes to
// what the standard library's multi-member gzip reader makes of it.
func FuzzDecompressAll(f *testing.F) {
	c, _ := bgzf.NewCompressor(6)
	for _, src := range [][]byte{nil, []byte("a"), bytes.Repeat([]byte("ACGT"), 5000)} {
		b, _ := c.AppendBlocks(nil, src)
		f.Add(append(b, bgzf.EOF...))
	}
	c0, _ := bgzf.NewCompressor(0)
	b, _ := c0.AppendBlocks(nil, []byte("stored block"))
	f.Add(b)
	f.Fuzz(func(t *testing.T, in []byte) {
		got, err := bgzftest.DecompressAll(in)
		if err != nil {
			if !errors.Is(err, bgzftest.ErrCorrupt) {
				t.Fatalf("error not ErrCorrupt: %v", err)
			}
			return
		}
		if len(in) == 0 {
			return
		}
		zr, err := gzip.NewReader(bytes.NewReader(in))
		if err != nil {
			t.Fatalf("decoded, but compress/gzip refuses the stream: %v", err)
		}
		want, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("decoded %d bytes, compress/gzip %d (%v)", len(got), len(want), err)
		}
	})
}
