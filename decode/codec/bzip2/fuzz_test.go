package bzip2

import (
	"bytes"
	"errors"
	"testing"
)

// fuzzMaxOut bounds the output of every decode in FuzzDecode, so that
// small inputs expanding to gigabytes stay cheap.
const fuzzMaxOut = 4 << 20

// FuzzDecode checks, for any input and expected size, that Decode never
// panics, fails only with ErrCorrupt and otherwise returns exactly the
// expected size, and that it agrees with compress/bzip2: what one decodes
// the other decodes to the same bytes. The comparison skips streams that
// rely on behaviour where compress/bzip2 departs from libbz2, which this
// package follows (decoder.irregular), and accounts for compress/bzip2
// decoding concatenated streams where libbz2's one-shot decoder, and this
// package, stop after the first.
func FuzzDecode(f *testing.F) {
	for _, fx := range loadFixtures(f) {
		if len(fx.Src) <= 10000 {
			f.Add(fx.Src, uint32(fx.RawLen))
		}
	}
	// Crafted streams: long codes, many tables, a run after count 0
	// (irregular), an incomplete code (irregular), two streams.
	ls := []uint8{20, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1}
	long, want := encodeStream(f, '1', testBlock{pre: []byte("abcdefghijklmnopqrsabc"), lengths: [][]uint8{ls, ls}})
	f.Add(long, uint32(len(want)))
	tables, want := encodeStream(f, '2', testBlock{pre: []byte("the cat sat on the mat"), nGroups: 6, selectors: []int{5}},
		testBlock{pre: []byte("xaa")}, testBlock{pre: []byte("aa\x05b")})
	f.Add(tables, uint32(len(want)))
	rle, want := encodeStream(f, '9', testBlock{pre: []byte("aaaa\x00aaa\x02b")})
	f.Add(rle, uint32(len(want)))
	inc, want := encodeStream(f, '9', testBlock{pre: []byte("qqq"), lengths: [][]uint8{{1, 2, 3}, {1, 2, 3}}})
	f.Add(inc, uint32(len(want)))
	two := append(bytes.Clone(long), tables...)
	f.Add(two, uint32(len(two)))

	f.Fuzz(func(t *testing.T, src []byte, size uint32) {
		n := int(size % (fuzzMaxOut + 1))
		got, err := decodeNew(src, n)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
		} else if len(got) != n {
			t.Fatalf("Decode returned %d bytes, rawSize %d", len(got), n)
		}

		// The first stream alone, whatever its length.
		first, info, ferr := decode(nil, src, fuzzMaxOut)
		if (err == nil) != (ferr == nil && len(first) == n) || err == nil && !bytes.Equal(got, first) {
			t.Fatalf("Decode (%d bytes, %v) and decode (%d bytes, %v) disagree", len(got), err, len(first), ferr)
		}
		if info.irregular {
			return
		}
		if ferr == nil {
			std, serr := stdDecode(src[:info.end], fuzzMaxOut)
			if serr != nil || !bytes.Equal(std, first) {
				t.Fatalf("decoded %d bytes; compress/bzip2 on the same %d-byte stream: %d bytes, %v", len(first), info.end, len(std), serr)
			}
		}
		std, serr := stdDecode(src, fuzzMaxOut)
		if serr == nil && len(std) <= fuzzMaxOut {
			if ferr != nil {
				t.Fatalf("compress/bzip2 decoded %d bytes; decode failed: %v", len(std), ferr)
			}
			if !bytes.HasPrefix(std, first) || info.end == len(src) && len(std) != len(first) {
				t.Fatalf("compress/bzip2 decoded %d bytes of which the first stream's %d (ending at %d of %d) differ", len(std), len(first), info.end, len(src))
			}
		}
	})
}
