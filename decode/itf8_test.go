package decode

import (
	"errors"
	"math"
	"testing"
)

// putITF8 encodes v as ITF-8 (CRAMv3 §2.3); the test's own encoder.
func putITF8(v int32) []byte {
	u := uint32(v)
	switch {
	case u < 1<<7:
		return []byte{byte(u)}
	case u < 1<<14:
		return []byte{byte(u>>8) | 0x80, byte(u)}
	case u < 1<<21:
		return []byte{byte(u>>16) | 0xc0, byte(u >> 8), byte(u)}
	case u < 1<<28:
		return []byte{byte(u>>24) | 0xe0, byte(u >> 16), byte(u >> 8), byte(u)}
	}
	return []byte{byte(u>>28) | 0xf0, byte(u >> 20), byte(u >> 12), byte(u >> 4), byte(u & 0x0f)}
}

// putLTF8 encodes v as LTF-8.
func putLTF8(v int64) []byte {
	u := uint64(v)
	for n := 1; n <= 8; n++ {
		bits := 7*n + 0
		if n == 8 {
			bits = 56
		}
		if n < 8 && u < 1<<uint(bits-(n-1)) || n == 8 && u < 1<<56 {
			out := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				out[i] = byte(u)
				u >>= 8
			}
			out[0] |= byte(0xff << uint(8-(n-1)))
			return out
		}
	}
	out := make([]byte, 9)
	out[0] = 0xff
	for i := 8; i >= 1; i-- {
		out[i] = byte(u)
		u >>= 8
	}
	return out
}

func TestITF8(t *testing.T) {
	for _, v := range []int32{0, 1, 127, 128, 255, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<28 - 1, 1 << 28, math.MaxInt32, -1, math.MinInt32, -4542278} {
		b := putITF8(v)
		pos := 0
		got, err := readITF8(b, &pos)
		if err != nil || got != v || pos != len(b) {
			t.Errorf("ITF-8 %d (% x): got %d, pos %d, err %v", v, b, got, pos, err)
		}
		if len(b) > 1 {
			pos = 0
			if _, err := readITF8(b[:len(b)-1], &pos); !errors.Is(err, ErrCorrupt) {
				t.Errorf("ITF-8 %d cut short: err %v, want ErrCorrupt", v, err)
			}
		}
	}
}

func TestLTF8(t *testing.T) {
	for _, v := range []int64{0, 1, 127, 128, 16383, 16384, 1 << 20, 1<<35 + 7, 1<<48 + 3, 1<<56 - 1, 1 << 56, math.MaxInt64, -1} {
		b := putLTF8(v)
		pos := 0
		got, err := readLTF8(b, &pos)
		if err != nil || got != v || pos != len(b) {
			t.Errorf("LTF-8 %d (% x): got %d, pos %d, err %v", v, b, got, pos, err)
		}
	}
}

func FuzzITF8(f *testing.F) {
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{0x80})
	f.Add([]byte{0xc1, 0x02, 0x03, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		pos := 0
		sameStreamITF8(t, b)
		v, err := readITF8(b, &pos)
		if err != nil {
			return
		}
		// Re-encoding gives a prefix-equal value (ITF-8 has redundant
		// forms, so compare values, not bytes).
		p2 := 0
		w, err := readITF8(putITF8(v), &p2)
		if err != nil || w != v {
			t.Fatalf("ITF-8 round trip of %d: %d, %v", v, w, err)
		}
		if pos < 1 || pos > 5 || pos > len(b) {
			t.Fatalf("consumed %d of %d bytes", pos, len(b))
		}
	})
}

// sameStreamITF8 checks that extStream.itf8 reads the value readITF8
// reads from b, and as many bytes, or declines when fewer than five
// bytes remain.
func sameStreamITF8(t *testing.T, b []byte) {
	t.Helper()
	pos := 0
	want, err := readITF8(b, &pos)
	x := &extStream{data: b}
	got, ok := x.itf8()
	switch {
	case len(b) < 5 && (ok || x.pos != 0):
		t.Fatalf("itf8 of % x (under 5 bytes): %d, %v, pos %d; want no value", b, got, ok, x.pos)
	case len(b) >= 5 && (err != nil || !ok || got != want || x.pos != pos):
		t.Fatalf("itf8 of % x: %d, %v, pos %d; readITF8 %d, %v, pos %d", b, got, ok, x.pos, want, err, pos)
	}
	// readInt has itf8 written out, and reads the end of a block too.
	var d Decoder
	var ds [numDataSeries]*Encoding
	x = &extStream{data: b}
	d.st.series[DSBF].x = x
	got, gotErr := d.readInt(&ds, DSBF)
	if (gotErr == nil) != (err == nil) || err == nil && (got != want || x.pos != pos) {
		t.Fatalf("readInt of % x: %d, %v, pos %d; readITF8 %d, %v, pos %d", b, got, gotErr, x.pos, want, err, pos)
	}
}

// TestStreamITF8 holds extStream.itf8 to readITF8 for values of every
// length, followed by other bytes, and at the end of a block.
func TestStreamITF8(t *testing.T) {
	for _, v := range []int32{0, 1, 127, 128, 255, 16383, 16384, 1<<21 - 1, 1 << 21, 1<<28 - 1, 1 << 28, math.MaxInt32, -1, math.MinInt32, -4542278} {
		b := putITF8(v)
		sameStreamITF8(t, b)
		sameStreamITF8(t, append(b, 0xff, 0xff, 0xff, 0xff))
		sameStreamITF8(t, append(b, 0, 0, 0, 0))
	}
}
