package decode

import (
	"math"
	"strconv"
	"testing"
)

// TestAppendUint compares the MD number writer with strconv over its fast
// ranges' edges and values that wrap to 32 bits as htslib's do.
func TestAppendUint(t *testing.T) {
	vals := []int64{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 1001, 65535, math.MaxUint32, math.MaxUint32 + 1, math.MaxUint32 + 10, -1, -5}
	for v := int64(0); v < 2000; v++ {
		vals = append(vals, v)
	}
	for _, v := range vals {
		got := string(appendUint([]byte("x"), v))
		want := "x" + strconv.FormatUint(uint64(uint32(v)), 10)
		if got != want {
			t.Fatalf("appendUint(%d) = %q, want %q", v, got, want)
		}
	}
}
