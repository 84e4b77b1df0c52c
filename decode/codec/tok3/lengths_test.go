package tok3

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// checkLengths compares AppendLengths of src with AppendDecode's names:
// where the names decode, their lengths (the output split at its NULs)
// are AppendLengths', or AppendLengths reports a NUL inside a name; where
// they do not, AppendLengths fails too. It returns the names measured.
func checkLengths(t *testing.T, src []byte, rawSize int) int {
	t.Helper()
	full, ferr := decodeNew(src, rawSize)
	prefix := []uint32{7, 9}
	lens, lerr := AppendLengths(slices.Clone(prefix), src, rawSize)
	switch {
	case lerr == nil:
		if ferr != nil {
			t.Fatalf("AppendLengths gives %d lengths, AppendDecode fails: %v", len(lens), ferr)
		}
		if !slices.Equal(lens[:2], prefix) {
			t.Fatalf("prefix changed: %v", lens[:2])
		}
		var want []uint32
		for len(full) > 0 {
			k := bytes.IndexByte(full, 0)
			want = append(want, uint32(k))
			full = full[k+1:]
		}
		if !slices.Equal(lens[2:], want) {
			t.Fatalf("lengths %v, the decoded names' %v", lens[2:], want)
		}
		return len(want)
	case errors.Is(lerr, ErrNUL):
		if ferr == nil && bytes.Count(full, []byte{0}) < 2 {
			t.Fatalf("AppendLengths: %v, but the names %q hold no inner NUL", lerr, full)
		}
	default:
		if !errors.Is(lerr, ErrCorrupt) {
			t.Fatalf("error %v does not wrap ErrCorrupt", lerr)
		}
		if ferr == nil {
			t.Fatalf("AppendLengths fails (%v), AppendDecode decodes %d bytes", lerr, len(full))
		}
	}
	return 0
}

// TestLengthsMatchDecode: AppendLengths measures every tok3 stream of the
// fixtures and of the corpus (htscodecs' test vectors) as AppendDecode
// decodes it, with the raw size known and not, and fails where it fails.
func TestLengthsMatchDecode(t *testing.T) {
	files, err := filepath.Glob("testdata/names.txt.*")
	if err != nil || len(files) != 10 {
		t.Fatalf("found %d fixtures (%v), want 10", len(files), err)
	}
	exp := nulNames(readRaw(t, "testdata/names.txt"))
	for _, f := range files {
		src := readRaw(t, f)
		for _, raw := range []int{len(exp), -1, len(exp) - 1, len(exp) + 1} {
			checkLengths(t, src, raw)
		}
		if n := checkLengths(t, src, len(exp)); n != bytes.Count(exp, []byte{0}) {
			t.Fatalf("%s: %d names measured", f, n)
		}
		// Cut short anywhere, the stream fails as AppendDecode fails.
		for cut := 0; cut < len(src); cut += 1 + len(src)/97 {
			checkLengths(t, src[:cut], -1)
		}
	}
	for _, s := range fuzzSeeds(t) {
		checkLengths(t, s, -1)
	}
	dir := corpus.Dir(t)
	if dir == "" {
		return
	}
	for _, v := range corpusVectors(t, dir) {
		src, err := os.ReadFile(v.compressed)
		if err != nil {
			t.Fatal(err)
		}
		if n := checkLengths(t, src, -1); n == 0 {
			t.Fatalf("%s: no names measured", v.compressed)
		}
	}
}

// TestLengthsNUL: a CHAR token of value 0 inside a name, which a reader
// splitting the names at their NULs would cut in two, is ErrNUL.
func TestLengthsNUL(t *testing.T) {
	src := build(4, 1, false,
		st(0, tokType, tokDiff), st(0, tokDiff, u32s(0)...),
		st(1, tokType, tokChar), st(1, tokChar, 'a'),
		st(2, tokType, tokChar), st(2, tokChar, 0),
		st(3, tokType, tokChar), st(3, tokChar, 'b'),
		st(4, tokType, tokEnd))
	full, err := decodeNew(src, -1)
	if err != nil || string(full) != "a\x00b\x00" {
		t.Fatalf("AppendDecode: %q, %v", full, err)
	}
	if _, err := AppendLengths(nil, src, -1); !errors.Is(err, ErrNUL) {
		t.Fatalf("AppendLengths: %v, want ErrNUL", err)
	}
}

func FuzzLengths(f *testing.F) {
	for _, s := range fuzzSeeds(f) {
		f.Add(s, -1)
	}
	f.Fuzz(func(t *testing.T, src []byte, rawSize int) {
		if rawSize > 1<<20 || len(src) >= 4 && binary.LittleEndian.Uint32(src) > 1<<20 {
			return
		}
		checkLengths(t, src, rawSize)
	})
}
