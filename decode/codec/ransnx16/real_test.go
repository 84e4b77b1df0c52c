package ransnx16

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// realBlock is one block dumped by internal/cmd/blockdump: the stream as
// Decode takes it, and its decoded size (the file name's last field).
type realBlock struct {
	name string
	src  []byte
	n    int
}

// realGroup is what one sub-benchmark of BenchmarkDecodeReal decodes.
type realGroup struct {
	name   string
	blocks []realBlock
	raw    int64
}

// bigBlock is the decoded size from which a block gets a sub-benchmark
// of its own; smaller ones are grouped by format flags.
const bigBlock = 100000

// loadRealBlocks reads the blocks of dir into groups: one per big block,
// one per format byte for the rest.
func loadRealBlocks(tb testing.TB, dir string) []realGroup {
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	small := map[string]*realGroup{}
	var groups []realGroup
	for _, e := range ents {
		name := e.Name()
		n, err := strconv.Atoi(name[strings.LastIndexByte(name, '.')+1:])
		if err != nil || e.IsDir() {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			tb.Fatal(err)
		}
		if len(src) == 0 {
			continue
		}
		blk := realBlock{name, src, n}
		if n >= bigBlock {
			groups = append(groups, realGroup{name, []realBlock{blk}, int64(n)})
			continue
		}
		key := fmt.Sprintf("small-f%02x", src[0])
		g := small[key]
		if g == nil {
			g = &realGroup{name: key}
			small[key] = g
		}
		g.blocks = append(g.blocks, blk)
		g.raw += int64(n)
	}
	for _, g := range small {
		groups = append(groups, *g)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].name < groups[j].name })
	return groups
}

// BenchmarkDecodeReal decodes the real blocks of the directory named by
// CRAMFS_CODEC_BLOCKS (made by internal/cmd/blockdump), appending into a
// reused buffer as the decoder's callers do.
func BenchmarkDecodeReal(b *testing.B) {
	dir := os.Getenv("CRAMFS_CODEC_BLOCKS")
	if dir == "" {
		b.Skip("CRAMFS_CODEC_BLOCKS is not set")
	}
	for _, g := range loadRealBlocks(b, dir) {
		for _, blk := range g.blocks {
			out, err := Decode(blk.src, blk.n)
			if err != nil || len(out) != blk.n {
				b.Fatalf("%s: %d bytes, %v", blk.name, len(out), err)
			}
		}
		b.Run(g.name, func(b *testing.B) {
			b.SetBytes(g.raw)
			b.ReportAllocs()
			var dst []byte
			for b.Loop() {
				for _, blk := range g.blocks {
					var err error
					if dst, err = AppendDecode(dst[:0], blk.src, blk.n); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
