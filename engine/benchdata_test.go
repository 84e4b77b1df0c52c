package engine

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/internal/cramtest"
)

// benchDataCRAM opens a CRAM of the benchmark dataset
// (../shared/bench/make-data.sh; directory in $CRAMFS_BENCH_DATA, file in
// $CRAMFS_BENCH_CRAM, default sample.v30.cram), closed when b ends.
func benchDataCRAM(b *testing.B) *cram.CRAM {
	b.Helper()
	path, store := cramtest.BenchData(b)
	return openBenchCRAM(b, path, store)
}

// openBenchCRAM opens the CRAM at path with the reference store, closed
// when b ends.
func openBenchCRAM(b *testing.B, path string, store *reference.Store) *cram.CRAM {
	b.Helper()
	src, err := cram.Open(path, cram.Path(path), cram.Options{Reference: store})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { src.Close() })
	return src
}

// benchDataVBAM opens a CRAM of the benchmark dataset (see benchDataCRAM)
// as a virtual BAM with its layout already persisted, so only segment
// builds are measured.
func benchDataVBAM(b *testing.B, cacheDir string, opts Options) (*Manager, *VirtualBAM) {
	b.Helper()
	src := benchDataCRAM(b)
	opts.CacheDir = cacheDir
	m := NewManager(opts, nil)
	v, err := m.Open(context.Background(), src)
	if err != nil {
		b.Fatal(err)
	}
	return m, v
}

// BenchmarkBenchDataRandom64K reads 64 KiB at random offsets of a real
// virtual BAM: cold (no cache: every read builds its segment, as the first
// read of a region does) and warm (the whole file cached), at the serving
// level of the mount (stored blocks) and at level 1.
func BenchmarkBenchDataRandom64K(b *testing.B) {
	for _, c := range []struct {
		name  string
		level Level
		warm  bool
	}{{"L0/cold", Stored, false}, {"L0/warm", Stored, true}, {"L1/cold", 1, false}, {"L1/warm", 1, true}} {
		b.Run(c.name, func(b *testing.B) {
			opts := Options{Level: c.level, Readahead: -1, CacheSize: -1}
			if c.warm {
				opts.CacheSize = 4 << 30
			}
			m, v := benchDataVBAM(b, b.TempDir(), opts)
			defer m.Close()
			p := make([]byte, 64<<10)
			if c.warm {
				for off := int64(0); off < v.Size(); off += int64(len(p)) {
					v.ReadAt(p, off)
				}
			}
			r := rand.New(rand.NewPCG(1, 2))
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				off := r.Int64N(v.Size() - int64(len(p)))
				if _, err := v.ReadAt(p, off); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBenchDataSequential reads a real virtual BAM from start to end
// in 1 MiB views, as the mount serves a streaming reader: stored blocks,
// an empty 256 MiB cache, two workers and readahead. It reports the CPU
// time of the process per read of the file beside the wall time, so that
// the engine's overhead over a plain conversion shows.
func BenchmarkBenchDataSequential(b *testing.B) {
	dir := b.TempDir()
	opts := Options{Level: Stored, Threads: 2, CacheSize: 256 << 20}
	m, v := benchDataVBAM(b, dir, opts)
	m.Close()
	b.SetBytes(v.Size())
	b.ReportAllocs()
	var cpu time.Duration
	for b.Loop() {
		m, v := benchDataVBAM(b, dir, opts)
		before := cpuTime()
		for off := int64(0); off < v.Size(); {
			n := int(min(1<<20, v.Size()-off))
			_, release, err := v.View(context.Background(), off, n)
			if err != nil {
				b.Fatal(err)
			}
			release()
			off += int64(n)
		}
		cpu += cpuTime() - before
		m.Close()
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// BenchmarkBenchDataConvert converts a CRAM of the benchmark dataset as
// `cramfs convert` does (two workers, into a discarding writer) at level 0
// and level 1. Bytes are the level-0 output's; it reports the CPU time of
// the process per conversion beside the wall time.
func BenchmarkBenchDataConvert(b *testing.B) {
	src := benchDataCRAM(b)
	ctx := context.Background()
	var size countingWriter
	if err := Convert(ctx, src, &size, ConvertOptions{Threads: 2, Level: Stored}); err != nil {
		b.Fatal(err)
	}
	for _, level := range []Level{Stored, 1} {
		b.Run(fmt.Sprintf("L%d", level.Deflate()), func(b *testing.B) {
			b.SetBytes(size.n)
			b.ReportAllocs()
			var cpu time.Duration
			for b.Loop() {
				before := cpuTime()
				if err := Convert(ctx, src, io.Discard, ConvertOptions{Threads: 2, Level: level}); err != nil {
					b.Fatal(err)
				}
				cpu += cpuTime() - before
			}
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
		})
	}
}

// countingWriter counts the bytes written to it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// cpuTime returns the user and system CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBenchDataContainers rebuilds every tenth container of a CRAM of
// the benchmark dataset into stored BGZF blocks on one goroutine, as the
// mount does once a file's layout is known, without the engine's
// scheduling: small changes to the decoder show above the noise of the
// whole-file benchmarks.
func BenchmarkBenchDataContainers(b *testing.B) {
	src := benchDataCRAM(b)
	comp, err := bgzf.NewCompressor(0)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	var dst []byte
	var total int64
	for i := 0; i < src.NumContainers(); i += 10 {
		var built source.Blocks
		if dst, built, err = src.AppendContainerBlocks(ctx, i, comp, dst[:0], source.BlockOptions{Rebuild: true}); err != nil {
			b.Fatal(err)
		}
		total += built.Raw
	}
	b.SetBytes(total)
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < src.NumContainers(); i += 10 {
			if dst, _, err = src.AppendContainerBlocks(ctx, i, comp, dst[:0], source.BlockOptions{Rebuild: true}); err != nil {
				b.Fatal(err)
			}
		}
	}
}
