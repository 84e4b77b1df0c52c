package corpus

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// RealBlock is one compressed block dumped by internal/cmd/blockdump: a
// file named <stem>.c<container>.b<n>.<rawsize> holding a codec's input.
type RealBlock struct {
	Name string
	Src  []byte
	Raw  int // decoded size
}

// BlockGroup is the blocks one sub-benchmark decodes.
type BlockGroup struct {
	Name   string
	Blocks []RealBlock
	Raw    int64 // decoded bytes in all
}

// RealBlockGroups reads the blocks of the directory named by the
// environment variable CRAMFS_CODEC_BLOCKS (for example /tmp/blocks/r4x8),
// skipping tb when it is unset. A block of at least big decoded bytes, or
// any block when key is nil, is a group of its own; smaller ones are
// grouped by key(src). Groups come sorted by name.
func RealBlockGroups(tb testing.TB, big int, key func(src []byte) string) []BlockGroup {
	tb.Helper()
	dir := os.Getenv("CRAMFS_CODEC_BLOCKS")
	if dir == "" {
		tb.Skip("CRAMFS_CODEC_BLOCKS is not set")
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	keyed := map[string]*BlockGroup{}
	var groups []BlockGroup
	for _, e := range ents {
		name := e.Name()
		if e.IsDir() {
			continue
		}
		raw, err := strconv.Atoi(name[strings.LastIndexByte(name, '.')+1:])
		if err != nil {
			tb.Fatalf("%s: the name does not end with the decoded size", name)
		}
		src, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			tb.Fatal(err)
		}
		if len(src) == 0 {
			continue
		}
		blk := RealBlock{name, src, raw}
		if key == nil || raw >= big {
			groups = append(groups, BlockGroup{name, []RealBlock{blk}, int64(raw)})
			continue
		}
		k := key(src)
		g := keyed[k]
		if g == nil {
			g = &BlockGroup{Name: k}
			keyed[k] = g
		}
		g.Blocks = append(g.Blocks, blk)
		g.Raw += int64(raw)
	}
	for _, g := range keyed {
		groups = append(groups, *g)
	}
	if len(groups) == 0 {
		tb.Fatalf("no blocks in %s", dir)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })
	return groups
}

// BenchmarkAppendDecode runs one sub-benchmark per group of
// RealBlockGroups(b, big, key), decoding each block with decode into a
// reused buffer as the CRAM block decoder does, with b.SetBytes set to the
// decoded bytes. Every block is first checked to decode to its size.
func BenchmarkAppendDecode(b *testing.B, decode func(dst, src []byte, rawSize int) ([]byte, error), big int, key func(src []byte) string) {
	groups := RealBlockGroups(b, big, key)
	for _, g := range groups {
		for _, blk := range g.Blocks {
			if out, err := decode(nil, blk.Src, blk.Raw); err != nil || len(out) != blk.Raw {
				b.Fatalf("%s: decoded %d bytes (want %d): %v", blk.Name, len(out), blk.Raw, err)
			}
		}
	}
	BenchmarkAppend(b, groups, decode)
}

// BenchmarkAppend runs one sub-benchmark per group, appending what each
// block gives with fn to a reused buffer of any element type (bytes
// decoded, lengths measured), with b.SetBytes set to the blocks' raw bytes.
func BenchmarkAppend[T any](b *testing.B, groups []BlockGroup, fn func(dst []T, src []byte, rawSize int) ([]T, error)) {
	for _, g := range groups {
		b.Run(g.Name, func(b *testing.B) {
			b.SetBytes(g.Raw)
			b.ReportAllocs()
			var dst []T
			for b.Loop() {
				for _, blk := range g.Blocks {
					var err error
					if dst, err = fn(dst[:0], blk.Src, blk.Raw); err != nil {
						b.Fatal(fmt.Errorf("%s: %w", blk.Name, err))
					}
				}
			}
		})
	}
}
