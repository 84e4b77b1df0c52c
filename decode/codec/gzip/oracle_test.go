package gzip

import (
	"bytes"
	stdgzip "compress/gzip"
	"errors"
	"hash/crc32"
	"io"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
)

// oracleMax bounds what the oracles read, so that small inputs expanding
// to gigabytes stay cheap; a stream holding more counts as rejected.
const oracleMax = 4 << 20

// klauspostDecode decodes src as decode/block.go did before this package
// (klauspost's gzip.Reader in its default multistream mode, read to EOF):
// the reference for what AppendDecode accepts and what it outputs.
func klauspostDecode(src []byte) ([]byte, error) {
	r, err := kgzip.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	return readCapped(r)
}

// stdDecode is klauspostDecode with compress/gzip.
func stdDecode(src []byte) ([]byte, error) {
	r, err := stdgzip.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	return readCapped(r)
}

func readCapped(r io.Reader) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, oracleMax+1))
	if err != nil {
		return nil, err
	}
	if len(out) > oracleMax {
		return nil, errors.New("oracle: output too large")
	}
	return out, nil
}

// checkAgainstOracle decodes src with AppendDecode, rawSize unknown and
// rawSize the oracle's output length, and fails t unless it accepts
// exactly when klauspost's reader does, with the same bytes; it also
// reports a disagreement between klauspost and compress/gzip. The one
// known disagreement is tolerated: compress/gzip ignores reserved header
// flags, which klauspost's reader rejects (with ErrHeader; the readers
// share their header code otherwise). It returns whether klauspost's
// reader accepted src.
func checkAgainstOracle(t *testing.T, name string, src []byte) bool {
	t.Helper()
	want, werr := klauspostDecode(src)
	std, serr := stdDecode(src)
	reservedFlags := errors.Is(werr, kgzip.ErrHeader) && serr == nil
	if !reservedFlags && ((serr == nil) != (werr == nil) || !bytes.Equal(std, want)) {
		t.Errorf("%s: klauspost (%d bytes, %v) and compress/gzip (%d bytes, %v) disagree", name, len(want), werr, len(std), serr)
	}
	return checkAgainstKlauspost(t, name, src)
}

// checkAgainstKlauspost is checkAgainstOracle without compress/gzip.
func checkAgainstKlauspost(t *testing.T, name string, src []byte) bool {
	t.Helper()
	want, werr := klauspostDecode(src)
	got, err := AppendDecode(nil, src, -1)
	if err != nil && !errors.Is(err, ErrCorrupt) {
		t.Errorf("%s: error %v does not wrap ErrCorrupt", name, err)
	}
	if werr != nil {
		if err == nil {
			t.Errorf("%s: decoded %d bytes; klauspost rejects it: %v", name, len(got), werr)
		}
		return false
	}
	if err != nil {
		t.Errorf("%s: %v; klauspost decodes %d bytes", name, err, len(want))
		return true
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: decoded %d bytes that differ from klauspost's %d", name, len(got), len(want))
		return true
	}
	// Exact size, into a dst with a prefix and spare capacity.
	dst := append(make([]byte, 0, 3+len(want)), "pre"...)
	got, err = AppendDecode(dst, src, len(want))
	if err != nil || string(got[:3]) != "pre" || !bytes.Equal(got[3:], want) {
		t.Errorf("%s: with rawSize %d and room in dst: %d bytes, %v", name, len(want), len(got), err)
	}
	return true
}

// member wraps the raw DEFLATE data deflated, which decodes to raw, in a
// gzip member with no optional fields.
func member(deflated, raw []byte) []byte {
	b := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}
	b = append(b, deflated...)
	return appendTrailer(b, raw)
}

func appendTrailer(b, raw []byte) []byte {
	var t [8]byte
	c := crc32.ChecksumIEEE(raw)
	t[0], t[1], t[2], t[3] = byte(c), byte(c>>8), byte(c>>16), byte(c>>24)
	n := uint32(len(raw))
	t[4], t[5], t[6], t[7] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
	return append(b, t[:]...)
}

// bitWriter writes a DEFLATE bit stream, first bit lowest, for crafting
// streams the encoders do not write.
type bitWriter struct {
	out []byte
	acc uint64
	n   uint
}

// bits writes the n low bits of v, lowest first.
func (w *bitWriter) bits(v uint64, n uint) {
	w.acc |= v << w.n
	w.n += n
	for w.n >= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.n -= 8
	}
}

// code writes an n-bit Huffman code, most significant bit first.
func (w *bitWriter) code(c uint32, n uint) {
	for i := int(n) - 1; i >= 0; i-- {
		w.bits(uint64(c>>uint(i)&1), 1)
	}
}

// align pads to a byte boundary with zero bits.
func (w *bitWriter) align() {
	if w.n > 0 {
		w.bits(0, 8-w.n)
	}
}

func (w *bitWriter) bytes() []byte {
	w.align()
	return w.out
}

// canonical returns the canonical Huffman codes of the code lengths lens
// (RFC 1951 §3.2.2).
func canonical(lens []uint8) []uint32 {
	var count [16]uint32
	for _, l := range lens {
		count[l]++
	}
	count[0] = 0
	var next [16]uint32
	code := uint32(0)
	for l := 1; l < 16; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	codes := make([]uint32, len(lens))
	for s, l := range lens {
		if l != 0 {
			codes[s] = next[l]
			next[l]++
		}
	}
	return codes
}
