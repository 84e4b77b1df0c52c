package gzip

import (
	"testing"

	"github.com/cramfs/cramfs/internal/splitmix"
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
	c16 := copies16()
	in = append(in, struct {
		name string
		src  []byte
		raw  int
	}{"mixed-huffman-only", member(compressors[0].f(mixed), mixed), len(mixed)},
		struct {
			name string
			src  []byte
			raw  int
		}{"mixed-level1", member(compressors[3].f(mixed), mixed), len(mixed)},
		struct {
			name string
			src  []byte
			raw  int
		}{"copies16", member(compressors[8].f(c16), c16), len(c16)})
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

// copies16 is 1 MB of 150-byte random records, each repeated 16 times in
// a row: the quality block of 16 merged copies of one file, whose matches
// are long and overlap themselves at a distance of one record.
func copies16() []byte {
	rng := splitmix.Rand(16)
	var out []byte
	for len(out) < 1<<20 {
		rec := make([]byte, 150)
		for i := range rec {
			rec[i] = byte('!' + rng.Intn(40))
		}
		for range 16 {
			out = append(out, rec...)
		}
	}
	return out
}
