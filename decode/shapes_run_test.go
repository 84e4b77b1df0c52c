package decode

import (
	"bytes"
	"math"
	"testing"
)

// TestDigits checks digits against uintLen: every value below 2^20, and
// around every power of ten and of two up to 2^32, negative values and
// those past 32 bits included (both count uint32(v)).
func TestDigits(t *testing.T) {
	check := func(v int64) {
		if got, want := digits(v), uintLen(v); got != want {
			t.Fatalf("digits(%d) = %d, want %d", v, got, want)
		}
	}
	for v := range int64(1 << 20) {
		check(v)
	}
	for p := int64(1); p <= 1<<34; p *= 10 {
		for d := int64(-2); d <= 2; d++ {
			check(p + d)
		}
	}
	for s := range 40 {
		for d := int64(-2); d <= 2; d++ {
			check(int64(1)<<s + d)
		}
	}
	for _, v := range []int64{-1, math.MinInt32, math.MaxInt32, math.MaxUint32, math.MaxInt64, math.MinInt64} {
		check(v)
	}
}

// TestUntilStop checks untilStop against bytes.IndexByte: the stop byte
// at every place of slices of every length up to 20, absent, and beside
// bytes one above and below it (which a borrow could flag).
func TestUntilStop(t *testing.T) {
	for _, stop := range []byte{0, 1, '\t', 0x7f, 0x80, 0xff} {
		for n := range 21 {
			for at := -1; at < n; at++ {
				for _, fill := range []byte{stop + 1, stop - 1, 'A'} {
					b := bytes.Repeat([]byte{fill}, n)
					if at >= 0 {
						b[at] = stop
						if at+1 < n {
							b[at+1] = stop // a second one after the first
						}
					}
					if got, want := untilStop(b, stop), bytes.IndexByte(b, stop); got != want {
						t.Fatalf("untilStop(%x, %#x) = %d, want %d", b, stop, got, want)
					}
				}
			}
		}
	}
}
