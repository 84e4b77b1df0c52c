package fqzcomp

import (
	"bytes"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// BenchmarkDecodeReal decodes the real blocks dumped by
// internal/cmd/blockdump into the directory named by CRAMFS_CODEC_BLOCKS
// (for example /tmp/blocks/fqzcomp), one sub-benchmark per block.
func BenchmarkDecodeReal(b *testing.B) {
	corpus.BenchmarkAppendDecode(b, AppendDecode, 0, nil)
}

// TestRealBlocksLayouts decodes the real blocks of CRAMFS_CODEC_BLOCKS
// with the direct and the indirect model layouts and wants the same
// values.
func TestRealBlocksLayouts(t *testing.T) {
	for _, g := range corpus.RealBlockGroups(t, 0, nil) {
		for _, blk := range g.Blocks {
			want, err := appendDecode(nil, blk.Src, blk.Raw, 0)
			if err != nil {
				t.Fatalf("%s, indirect layout: %v", blk.Name, err)
			}
			got, err := AppendDecode(nil, blk.Src, blk.Raw)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s: direct layout differs from the indirect one (%v)", blk.Name, err)
			}
		}
	}
}
