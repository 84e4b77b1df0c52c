package gzip

import (
	"bytes"
	"errors"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
)

// FuzzDecode checks, for any input and expected size, that AppendDecode
// never panics, fails only with ErrCorrupt, and agrees with klauspost's
// gzip.Reader (what decode/block.go used before this package): it accepts
// exactly what that reader decodes, with the same bytes, and with an
// expected size accepts only that many. It agrees with compress/gzip too,
// except where that reader ignores reserved header flags (see
// checkAgainstOracle). .ci/fuzz gives it more time than most targets.
func FuzzDecode(f *testing.F) {
	for _, fx := range loadFixtures(f) {
		if len(fx.Src) <= 10000 {
			f.Add(fx.Src, uint32(fx.RawLen))
		}
	}
	for _, c := range craftedCases() {
		var w bitWriter
		out := c.block(&w, true)
		f.Add(member(w.bytes(), out), uint32(len(out)))
	}
	for _, src := range smallStreams() {
		f.Add(src, uint32(0xffffffff))
	}

	f.Fuzz(func(t *testing.T, src []byte, size uint32) {
		got, err := AppendDecode(nil, src, -1)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v does not wrap ErrCorrupt", err)
		}
		if len(got) > oracleMax {
			return
		}
		want, werr := klauspostDecode(src)
		if (err == nil) != (werr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("decoded %d bytes, %v; klauspost: %d bytes, %v", len(got), err, len(want), werr)
		}
		std, serr := stdDecode(src)
		reservedFlags := errors.Is(werr, kgzip.ErrHeader) && serr == nil
		if !reservedFlags && ((err == nil) != (serr == nil) || !bytes.Equal(got, std)) {
			t.Fatalf("decoded %d bytes, %v; compress/gzip: %d bytes, %v", len(got), err, len(std), serr)
		}
		n := int(size % (oracleMax + 1))
		if size == 0xffffffff {
			n = len(want)
		}
		dst := make([]byte, 3, 3+n+64)
		copy(dst, "pre")
		sized, err := AppendDecode(dst, src, n)
		switch {
		case err != nil && !errors.Is(err, ErrCorrupt):
			t.Fatalf("error %v does not wrap ErrCorrupt", err)
		case (err == nil) != (werr == nil && len(want) == n):
			t.Fatalf("rawSize %d: %d bytes, %v; klauspost: %d bytes, %v", n, len(sized)-3, err, len(want), werr)
		case err == nil && !bytes.Equal(sized[3:], want), string(sized[:3]) != "pre":
			t.Fatalf("rawSize %d: output differs", n)
		}
	})
}
