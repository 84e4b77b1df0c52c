package arith

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// realBlock is one block dumped by internal/cmd/blockdump: a file named
// <stem>.c<container>.b<n>.<rawsize> holding the codec's input.
type realBlock struct {
	name string
	src  []byte
	raw  int
}

// realBlocks reads the blocks in the directory named by CRAMFS_CODEC_BLOCKS
// (for example /tmp/blocks/arith), skipping when it is unset.
func realBlocks(b *testing.B) []realBlock {
	dir := os.Getenv("CRAMFS_CODEC_BLOCKS")
	if dir == "" {
		b.Skip("CRAMFS_CODEC_BLOCKS not set")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		b.Fatal(err)
	}
	sort.Strings(files)
	var bs []realBlock
	for _, f := range files {
		name := filepath.Base(f)
		raw, err := strconv.Atoi(name[strings.LastIndexByte(name, '.')+1:])
		if err != nil {
			b.Fatalf("%s: name does not end with the decoded size", name)
		}
		src, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		bs = append(bs, realBlock{name, src, raw})
	}
	if len(bs) == 0 {
		b.Fatalf("no blocks in %s", dir)
	}
	return bs
}

// BenchmarkDecodeReal decodes the real blocks of CRAMFS_CODEC_BLOCKS, one
// sub-benchmark per block, appending into a reused dst.
func BenchmarkDecodeReal(b *testing.B) {
	for _, blk := range realBlocks(b) {
		b.Run(blk.name, func(b *testing.B) {
			b.SetBytes(int64(blk.raw))
			b.ReportAllocs()
			var dst []byte
			for b.Loop() {
				var err error
				dst, err = AppendDecode(dst[:0], blk.src, blk.raw)
				if err != nil {
					b.Fatal(err)
				}
				if len(dst) != blk.raw {
					b.Fatalf("decoded %d bytes, want %d", len(dst), blk.raw)
				}
			}
		})
	}
}
