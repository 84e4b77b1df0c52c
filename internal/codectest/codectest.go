// Package codectest holds what the tests of the CRAM block codecs share.
package codectest

import (
	"bytes"
	"testing"
)

// AppendDecoder is the signature of every codec's AppendDecode.
type AppendDecoder func(dst, src []byte, rawSize int) ([]byte, error)

// Decode decodes src with decode into a new slice. An empty output is a
// non-nil empty slice, so that a test can tell it from a failed decode.
func Decode(decode AppendDecoder, src []byte, rawSize int) ([]byte, error) {
	out, err := decode(nil, src, rawSize)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}

// CheckAppend decodes src (rawSize as the codec's caller passes it) with
// decode after each shape of dst a caller may hand it: nil, a prefix with
// room for the output (its spare capacity holding garbage, which must not
// leak into the output), a prefix with room for half of it, and a prefix
// with no room at all. The prefix must be kept and followed by want; the
// output must be decoded in place exactly when dst has room for it.
func CheckAppend(t testing.TB, decode AppendDecoder, src []byte, rawSize int, want []byte) {
	t.Helper()
	prefix := []byte("prefix\x00\xff")
	for _, c := range []struct {
		name  string
		spare int // spare capacity after the prefix; -1: dst is nil
	}{{"nil", -1}, {"prefix+room", len(want) + 7}, {"prefix+half", len(want) / 2}, {"prefix full", 0}} {
		var dst []byte
		if c.spare >= 0 {
			dst = append(make([]byte, 0, len(prefix)+c.spare), prefix...)
			spare := dst[len(dst):cap(dst)]
			for i := range spare {
				spare[i] = 0xa5
			}
		}
		out, err := decode(dst, src, rawSize)
		if err != nil {
			t.Fatalf("%s, rawSize %d: %v", c.name, rawSize, err)
		}
		if len(out) < len(dst) || !bytes.Equal(out[:len(dst)], dst) {
			t.Fatalf("%s, rawSize %d: the prefix changed", c.name, rawSize)
		}
		if got := out[len(dst):]; !bytes.Equal(got, want) {
			t.Fatalf("%s, rawSize %d: %d bytes decoded differ from the %d expected (first difference at %d)",
				c.name, rawSize, len(got), len(want), FirstDiff(got, want))
		}
		if dst == nil {
			continue
		}
		if inPlace, room := &out[0] == &dst[0], c.spare >= len(want); inPlace != room {
			t.Fatalf("%s, rawSize %d: decoded in place = %v with room for the output = %v", c.name, rawSize, inPlace, room)
		}
	}
}

// FirstDiff returns the index of the first byte where a and b differ, or
// the shorter length when one is a prefix of the other.
func FirstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
