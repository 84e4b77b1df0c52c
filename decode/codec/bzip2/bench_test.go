package bzip2

import (
	"bytes"
	"compress/bzip2"
	"io"
	"testing"
)

// benchFixtures are realistic CRAM block contents (bzip2 -9): 300 kB of
// read names and 150 kB of quality strings; then the 363 kB multi-block
// input at level 1, 40 kB of text and 8 kB of random bytes (a small
// block, where compress/bzip2's per-stream 3.6 MB allocation dominates).
var benchFixtures = []string{"names.9.bz2", "qual.9.bz2", "multiblock.1.bz2", "text.9.bz2", "random.9.bz2"}

// BenchmarkDecode measures AppendDecode into a dst with enough capacity:
// 0 allocs/op in steady state (B/op counts the working memory allocated
// once after the GC that precedes each benchmark run empties the pool).
func BenchmarkDecode(b *testing.B) {
	for _, name := range benchFixtures {
		f := fixtureNamed(b, name)
		b.Run(name, func(b *testing.B) {
			dst := make([]byte, 0, f.RawLen)
			b.SetBytes(int64(f.RawLen))
			b.ReportAllocs()
			for b.Loop() {
				out, err := AppendDecode(dst[:0], f.Src, f.RawLen)
				if err != nil || len(out) != f.RawLen {
					b.Fatalf("AppendDecode: %d bytes, %v", len(out), err)
				}
			}
		})
	}
}

// BenchmarkStdlib measures compress/bzip2 on the same inputs, for
// comparison.
func BenchmarkStdlib(b *testing.B) {
	for _, name := range benchFixtures {
		f := fixtureNamed(b, name)
		b.Run(name, func(b *testing.B) {
			dst := make([]byte, f.RawLen)
			b.SetBytes(int64(f.RawLen))
			b.ReportAllocs()
			for b.Loop() {
				r := bzip2.NewReader(bytes.NewReader(f.Src))
				if _, err := io.ReadFull(r, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
