package engine

import (
	"context"
	"os"
	"testing"
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
