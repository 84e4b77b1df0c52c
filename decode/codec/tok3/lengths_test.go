package tok3

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
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

// randomColumns returns a name tokeniser stream of a few names whose
// columns draw their token types from one palette each: all DIGITS, all
// END, DIGITS/DELTA/MATCH, every type, or an elided type stream (the
// first type, then MATCH), with values and distances that are now valid,
// now not, so that each way of measuring a column meets valid and broken
// input.
func randomColumns(r *rand.Rand) []byte {
	names := 1 + r.IntN(12)
	npos := 1 + r.IntN(5)
	var ss []ts
	lead := make([]byte, names)
	var dups, diffs []uint32
	for i := range lead {
		switch k := r.IntN(20); {
		case k < 8:
			lead[i] = tokDup
			dups = append(dups, uint32(r.IntN(i+1)))
		case k < 19:
			lead[i] = tokDiff
			diffs = append(diffs, uint32(min(i, r.IntN(3))))
		default:
			lead[i] = byte(16 + r.IntN(3)) // a distance from a later position's stream
		}
	}
	if r.IntN(8) == 0 {
		lead[0] = tokDiff
		diffs = append([]uint32{0}, diffs...)
	}
	ss = append(ss, st(0, tokType, lead...), st(0, tokDup, u32s(dups...)...), st(0, tokDiff, u32s(diffs...)...))
	all := []byte{tokChar, tokString, tokDigits0, tokDelta0, tokDigits, tokDelta, tokNOP, tokMatch, tokEnd}
	for p := 1; p <= npos; p++ {
		var palette []byte
		switch r.IntN(5) {
		case 0:
			palette = []byte{tokDigits}
		case 1:
			palette = []byte{tokDigits, tokDelta, tokMatch}
		case 2:
			palette = all
		case 3:
			palette = []byte{tokMatch}
		}
		if p == npos {
			palette = []byte{tokEnd}
		}
		if palette == nil || len(palette) == 1 && palette[0] == tokMatch && r.IntN(2) == 0 {
			// An elided type stream: its first value stream's type.
			typ := all[r.IntN(len(all)-2)]
			ss = append(ss, randomValues(r, p, typ, names)...)
			continue
		}
		types := make([]byte, names-r.IntN(2))
		for i := range types {
			types[i] = palette[r.IntN(len(palette))]
		}
		ss = append(ss, st(p, tokType, types...))
		for _, typ := range []byte{tokChar, tokString, tokDigits0, tokDelta0, tokDigits, tokDelta} {
			if bytes.IndexByte(types, typ) >= 0 {
				ss = append(ss, randomValues(r, p, typ, names)...)
			}
		}
	}
	return build(uint32(1+r.IntN(40*names)), uint32(names+r.IntN(2)), r.IntN(4) == 0, ss...)
}

// randomValues returns the value streams of token type typ at position
// p for up to n tokens, sometimes a few short.
func randomValues(r *rand.Rand, p int, typ byte, n int) []ts {
	n -= r.IntN(2)
	var b []byte
	for range n {
		switch typ {
		case tokChar, tokDelta, tokDelta0:
			b = append(b, byte(r.IntN(256)))
		case tokString:
			b = append(b, bytes.Repeat([]byte{'s'}, r.IntN(4))...)
			b = append(b, 0)
		case tokDigits, tokDigits0:
			v := r.Uint32() >> r.IntN(32)
			if typ == tokDigits0 {
				v %= 1000
			}
			b = binary.LittleEndian.AppendUint32(b, v)
		}
	}
	s := []ts{st(p, int(typ), b...)}
	if typ == tokDigits0 {
		dz := make([]byte, n)
		for i := range dz {
			dz[i] = byte(r.IntN(5))
		}
		s = append(s, st(p, tokDZLen, dz...))
	}
	return s
}

// TestLengthsRandomColumns: AppendLengths measures streams whose columns
// take each of its loops (a column of DIGITS, of END, of numbers, an
// elided type stream, any types; names whose distance is read from a
// later position) as AppendDecode decodes them, or fails where it fails.
func TestLengthsRandomColumns(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	measured := 0
	for range 20000 {
		if checkLengths(t, randomColumns(r), -1) > 0 {
			measured++
		}
	}
	if measured < 1000 {
		t.Fatalf("only %d of the streams measured", measured)
	}
}
