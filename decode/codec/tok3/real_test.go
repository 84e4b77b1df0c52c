package tok3

import (
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// BenchmarkDecodeReal decodes the real blocks dumped by
// internal/cmd/blockdump into the directory named by CRAMFS_CODEC_BLOCKS
// (for example /tmp/blocks/tok3), one sub-benchmark per block.
func BenchmarkDecodeReal(b *testing.B) {
	corpus.BenchmarkAppendDecode(b, AppendDecode, 0, nil)
}

// BenchmarkLengthsReal measures the names of the real blocks of
// CRAMFS_CODEC_BLOCKS with AppendLengths, as the lean layout pass does.
func BenchmarkLengthsReal(b *testing.B) {
	for _, g := range corpus.RealBlockGroups(b, 0, nil) {
		b.Run(g.Name, func(b *testing.B) {
			b.SetBytes(g.Raw)
			b.ReportAllocs()
			var dst []uint32
			for b.Loop() {
				for _, blk := range g.Blocks {
					var err error
					if dst, err = AppendLengths(dst[:0], blk.Src, blk.Raw); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
