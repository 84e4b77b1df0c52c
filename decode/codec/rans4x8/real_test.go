package rans4x8

import (
	"fmt"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// BenchmarkDecodeReal decodes the real blocks dumped by
// internal/cmd/blockdump into the directory named by CRAMFS_CODEC_BLOCKS
// (for example /tmp/blocks/r4x8): a sub-benchmark per block of 100,000
// decoded bytes or more, the smaller ones grouped by order.
func BenchmarkDecodeReal(b *testing.B) {
	corpus.BenchmarkAppendDecode(b, AppendDecode, 100000, func(src []byte) string { return fmt.Sprintf("small-o%d", src[0]) })
}
