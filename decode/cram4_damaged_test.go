package decode_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/internal/corpus"
)

// TestCRAM4Damaged cuts CRAM 4.0 fixtures at every byte and flips each of
// their bytes in turn: the uint7 headers, CRC32s, placeholders and
// transforms must fail cleanly, with an error that names the file and a
// byte offset, never panic; a flip that decodes (the file id) must give
// the same number of records. The CRC32s catch most flips: the parsers
// behind them are fuzzed (FuzzContainerHeader, FuzzSliceHeader,
// FuzzCompressionHeader4, FuzzEncoding4, FuzzDecodeFile).
func TestCRAM4Damaged(t *testing.T) {
	for _, name := range []string{"ce_5b.4.0.cram", "corner_rg.4.0.cram", "corner_unmapped.4.0.xform4.cram", "ce_unmap2.4.0.xform4.cram"} {
		orig, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata/cram", name))
		if err != nil {
			t.Fatal(err)
		}
		opt := decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true}
		want, err := decodeAll("x4.cram", orig, opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		check := func(what string, b []byte, mustFail bool) {
			t.Helper()
			n, err := decodeAll("x4.cram", b, opt)
			switch {
			case err == nil && mustFail:
				t.Errorf("%s %s: decoded %d records", name, what, n)
			case err == nil && n != want:
				t.Errorf("%s %s: %d records, want %d", name, what, n, want)
			case err != nil && (!strings.Contains(err.Error(), "x4.cram") || !strings.Contains(err.Error(), "byte")):
				t.Errorf("%s %s: error %q names no file and byte offset", name, what, err)
			}
		}
		for n := 0; n < len(orig); n++ {
			check("cut at "+strconv.Itoa(n), orig[:n], true)
		}
		b := append([]byte{}, orig...)
		for i := range b {
			b[i] ^= 0xff
			check("flipped at "+strconv.Itoa(i), b, false)
			b[i] ^= 0xff
		}
	}
}
