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
	corpus.BenchmarkAppend(b, corpus.RealBlockGroups(b, 0, nil), AppendLengths)
}
