package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/engine/source"
)

// BenchmarkBenchDataFirstAccess is the first access of a never-indexed
// CRAM of the benchmark dataset at the mount's level 0, open to layout:
// scan=lean measures the records (the default), scan=full builds and
// compresses every container (Options.Digests). Bytes are the virtual
// BAM's.
func BenchmarkBenchDataFirstAccess(b *testing.B) {
	for _, full := range []bool{false, true} {
		name := "scan=lean"
		if full {
			name = "scan=full"
		}
		b.Run(name, func(b *testing.B) {
			src := benchDataCRAM(b)
			b.ReportAllocs()
			for b.Loop() {
				dir, err := os.MkdirTemp(b.TempDir(), "first")
				if err != nil {
					b.Fatal(err)
				}
				m := NewManager(Options{Level: Stored, Threads: 2, CacheSize: 256 << 20, CacheDir: dir, Digests: full}, nil)
				v, err := m.Open(context.Background(), src)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(v.Size())
				m.Close()
				os.RemoveAll(dir)
			}
		})
	}
}

// TestBenchDataLeanEqualsFull is TestLeanScanEqualsFullScan on every CRAM
// of the benchmark dataset (opt-in like the benchmarks: set
// CRAMFS_BENCH_DATA, see benchDataCRAM); a few seconds per file.
func TestBenchDataLeanEqualsFull(t *testing.T) {
	dir := os.Getenv("CRAMFS_BENCH_DATA")
	if dir == "" {
		t.Skip("CRAMFS_BENCH_DATA is not set (see ../shared/bench/make-data.sh)")
	}
	crams, err := filepath.Glob(filepath.Join(dir, "*.cram"))
	if err != nil || len(crams) == 0 {
		t.Fatalf("no CRAM in %s (%v)", dir, err)
	}
	store, err := reference.Open([]string{filepath.Join(dir, "ref.fa")}, reference.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, path := range crams {
		t.Run(filepath.Base(path), func(t *testing.T) {
			_, _, leanIdx, fullIdx := scanBoth(t, func() source.Source {
				c, err := cram.Open(path, cram.Path(path), cram.Options{Reference: store})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { c.Close() })
				return c
			})
			checkLeanEqualsFull(t, leanIdx, fullIdx)
		})
	}
}
