package arith

import (
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// BenchmarkDecodeReal decodes the real blocks dumped by
// internal/cmd/blockdump into the directory named by CRAMFS_CODEC_BLOCKS
// (for example /tmp/blocks/arith), one sub-benchmark per block.
func BenchmarkDecodeReal(b *testing.B) {
	corpus.BenchmarkAppendDecode(b, AppendDecode, 0, nil)
}
