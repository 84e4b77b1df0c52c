package ransnx16

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// family names a stream's family from its format byte (CRAMcodecs section
// 3.6), as the cramfs-bench codec report does.
func family(src []byte) string {
	if len(src) == 0 {
		return "empty"
	}
	f := src[0]
	var parts []string
	if f&flagCat != 0 {
		parts = append(parts, "CAT")
	} else if f&flagOrder != 0 {
		parts = append(parts, "O1")
	} else {
		parts = append(parts, "O0")
	}
	for _, p := range []struct {
		bit  byte
		name string
	}{{flagX32, "X32"}, {flagStripe, "STRIPE"}, {flagRLE, "RLE"}, {flagPack, "PACK"}} {
		if f&p.bit != 0 {
			parts = append(parts, p.name)
		}
	}
	return strings.Join(parts, "_")
}

// BenchmarkDecodeFamily decodes the real blocks of CRAMFS_CODEC_BLOCKS
// grouped by family, each group in one sub-benchmark.
func BenchmarkDecodeFamily(b *testing.B) {
	corpus.BenchmarkAppendDecode(b, AppendDecode, math.MaxInt, family)
}

// BenchmarkDecodeCorpusFamily decodes the rANS Nx16 test vectors of the
// conformance corpus grouped by family.
func BenchmarkDecodeCorpusFamily(b *testing.B) {
	dir := filepath.Join(corpus.Dir(b), "htscodecs/tests/dat/r4x16")
	ents, err := os.ReadDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	type stream struct {
		src []byte
		raw int
	}
	groups := map[string][]stream{}
	var names []string
	for _, e := range ents {
		src, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			b.Fatal(err)
		}
		out, err := decodeNew(src, -1)
		if err != nil {
			continue // not every vector is a valid stream on its own
		}
		k := family(src)
		if groups[k] == nil {
			names = append(names, k)
		}
		groups[k] = append(groups[k], stream{src, len(out)})
	}
	for _, k := range names {
		g := groups[k]
		total := 0
		for _, s := range g {
			total += s.raw
		}
		b.Run(k, func(b *testing.B) {
			b.SetBytes(int64(total))
			var dst []byte
			for b.Loop() {
				for _, s := range g {
					if dst, err = AppendDecode(dst[:0], s.src, s.raw); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
