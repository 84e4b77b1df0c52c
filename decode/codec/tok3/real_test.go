package tok3

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkDecodeReal decodes the real blocks dumped by
// internal/cmd/blockdump into the directory named by CRAMFS_CODEC_BLOCKS
// (files named <stem>.c<container>.b<n>.<rawsize>; for example
// /tmp/blocks/tok3), one sub-benchmark per block, appending into a reused
// dst.
func BenchmarkDecodeReal(b *testing.B) {
	dir := os.Getenv("CRAMFS_CODEC_BLOCKS")
	if dir == "" {
		b.Skip("CRAMFS_CODEC_BLOCKS not set")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		b.Fatal(err)
	}
	sort.Strings(files)
	if len(files) == 0 {
		b.Fatalf("no blocks in %s", dir)
	}
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
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(raw))
			b.ReportAllocs()
			var dst []byte
			for b.Loop() {
				dst, err = AppendDecode(dst[:0], src, raw)
				if err != nil {
					b.Fatal(err)
				}
				if len(dst) != raw {
					b.Fatalf("decoded %d bytes, want %d", len(dst), raw)
				}
			}
		})
	}
}
