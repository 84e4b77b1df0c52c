package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/internal/cramtest"
)

// x16Path is where bench/README.md's ×16 file (16 copies of sample.v30.cram
// merged in coordinate order) is kept; $CRAMFS_BENCH_X16 overrides it.
const x16Path = "/tmp/benchscratch/x16/sample.v30.x16.cram"

// BenchmarkX16Builds rebuilds every sixteenth container of the ×16 file
// (3.0, 10,000 short reads per container, one slice) into stored BGZF
// blocks on one goroutine, as the mount builds a segment of a file whose
// layout is known: the per-record cost of a build, on the containers of
// the sequential-read and region rows. Bytes are the BAM built; it
// reports the process's CPU time per pass beside the wall time. The
// reference is the dataset's ($CRAMFS_BENCH_DATA); it skips when either
// is missing (CI has neither).
func BenchmarkX16Builds(b *testing.B) {
	path := os.Getenv("CRAMFS_BENCH_X16")
	if path == "" {
		path = x16Path
	}
	if _, err := os.Stat(path); err != nil {
		b.Skipf("no ×16 file: %v", err)
	}
	_, store := cramtest.BenchData(b)
	src := openBenchCRAM(b, path, store)
	comp, err := bgzf.NewCompressor(0)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var dst []byte
	var total int64
	const every = 16
	for i := 0; i < src.NumContainers(); i += every {
		var built source.Blocks
		if dst, built, err = src.AppendContainerBlocks(ctx, i, comp, dst[:0], source.BlockOptions{Rebuild: true}); err != nil {
			b.Fatalf("container %d of %s: %v", i, filepath.Base(path), err)
		}
		total += built.Raw
	}
	b.SetBytes(total)
	b.ReportAllocs()
	var cpu time.Duration
	for b.Loop() {
		before := cpuTime()
		for i := 0; i < src.NumContainers(); i += every {
			if dst, _, err = src.AppendContainerBlocks(ctx, i, comp, dst[:0], source.BlockOptions{Rebuild: true}); err != nil {
				b.Fatal(err)
			}
		}
		cpu += cpuTime() - before
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}
