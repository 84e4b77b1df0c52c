package gzip

import (
	"testing"
)

// benchInputs are synthetic inputs for BenchmarkDecode and
// BenchmarkKlauspost: shapes() entries compressed by compress/flate at
// level 6 unless named otherwise.
func benchInputs(b *testing.B) []struct {
	name string
	src  []byte
	raw  int
} {
	want := map[string]int{"text200k": 6, "random100k": 6, "zeros100k": 6, "dna": 6, "qual": 6, "mixed": 6, "far": 9}
	var in []struct {
		name string
		src  []byte
		raw  int
	}
	for _, s := range shapes() {
		level, ok := want[s.name]
		if !ok {
			continue
		}
		src := member(compressors[level+2].f(s.data), s.data)
		in = append(in, struct {
			name string
			src  []byte
			raw  int
		}{s.name, src, len(s.data)})
	}
	mixed := shapes()[12].data
	in = append(in, struct {
		name string
		src  []byte
		raw  int
	}{"mixed-huffman-only", member(compressors[0].f(mixed), mixed), len(mixed)},
		struct {
			name string
			src  []byte
			raw  int
		}{"mixed-level1", member(compressors[3].f(mixed), mixed), len(mixed)})
	return in
}

// BenchmarkDecode measures AppendDecode into a dst with enough capacity
// on synthetic inputs: 0 allocs/op in steady state.
func BenchmarkDecode(b *testing.B) {
	for _, in := range benchInputs(b) {
		b.Run(in.name, func(b *testing.B) {
			dst := make([]byte, 0, in.raw)
			b.SetBytes(int64(in.raw))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := AppendDecode(dst, in.src, in.raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkKlauspost is BenchmarkDecode with klauspost's gzip.Reader as
// decode/block.go used it, for comparison.
func BenchmarkKlauspost(b *testing.B) {
	var k klauspostDecoder
	for _, in := range benchInputs(b) {
		b.Run(in.name, func(b *testing.B) {
			dst := make([]byte, 0, in.raw+1)
			b.SetBytes(int64(in.raw))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := k.appendDecode(dst, in.src, in.raw); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
