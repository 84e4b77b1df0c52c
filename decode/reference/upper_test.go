package reference

import (
	"bytes"
	"testing"
)

// TestCopyUpper compares copyUpper and copyUpperGo with uppercasing byte by byte, for
// every byte value at every position of every length up to 100.
func TestCopyUpper(t *testing.T) {
	for n := 0; n <= 100; n++ {
		for c := 0; c < 256; c++ {
			for at := 0; at < n; at++ {
				src := bytes.Repeat([]byte{'a'}, n)
				for i := range src {
					src[i] = byte("acgtNnACGT{`@Z["[(i+c)%15])
				}
				src[at] = byte(c)
				want := make([]byte, n)
				for i, b := range src {
					want[i] = upperByte(b)
				}
				got := make([]byte, n)
				copyUpper(got, src)
				if !bytes.Equal(got, want) {
					t.Fatalf("copyUpper(%q) = %q, want %q", src, got, want)
				}
				clear(got)
				copyUpperGo(got, src)
				if !bytes.Equal(got, want) {
					t.Fatalf("copyUpperGo(%q) = %q, want %q", src, got, want)
				}
			}
		}
	}
}

// TestUpperByte checks upperByte against the letters themselves.
func TestUpperByte(t *testing.T) {
	for c := 0; c < 256; c++ {
		want := byte(c)
		if c >= 'a' && c <= 'z' {
			want = byte(c) - 32
		}
		if got := upperByte(byte(c)); got != want {
			t.Fatalf("upperByte(%#x) = %#x, want %#x", c, got, want)
		}
	}
}

func BenchmarkCopyUpper(b *testing.B) {
	src := bytes.Repeat([]byte("ACGTNacgtn"), 6)
	dst := make([]byte, len(src))
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		copyUpper(dst, src)
	}
}

// FuzzCopyUpper compares copyUpper (the vector path where the CPU has
// one) and copyUpperGo with uppercasing byte by byte.
func FuzzCopyUpper(f *testing.F) {
	f.Add([]byte("acgtnACGTN"))
	f.Add(bytes.Repeat([]byte("ACGTNacgtn`{@[z"), 7))
	f.Fuzz(func(t *testing.T, src []byte) {
		want := make([]byte, len(src))
		for i, b := range src {
			want[i] = upperByte(b)
		}
		got := make([]byte, len(src))
		copyUpper(got, src)
		if !bytes.Equal(got, want) {
			t.Fatalf("copyUpper(%q) = %q, want %q", src, got, want)
		}
		copyUpperGo(got, src)
		if !bytes.Equal(got, want) {
			t.Fatalf("copyUpperGo(%q) = %q, want %q", src, got, want)
		}
	})
}
