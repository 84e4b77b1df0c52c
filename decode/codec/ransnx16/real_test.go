package ransnx16

import (
	"fmt"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// BenchmarkDecodeReal decodes the real blocks dumped by
// internal/cmd/blockdump into the directory named by CRAMFS_CODEC_BLOCKS
// (for example /tmp/blocks/r4x16): a sub-benchmark per block of 100,000
// decoded bytes or more, the smaller ones grouped by format flags.
func BenchmarkDecodeReal(b *testing.B) {
	corpus.BenchmarkAppendDecode(b, AppendDecode, 100000, func(src []byte) string { return fmt.Sprintf("small-f%02x", src[0]) })
}
