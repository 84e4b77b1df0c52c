package cram

import (
	"os"
	"testing"

	"github.com/cramfs/cramfs/fs"
	"github.com/cramfs/cramfs/internal/cramtest"
)

// benchDataCRAM opens a CRAM of the benchmark dataset
// (../shared/bench/make-data.sh; directory in $CRAMFS_BENCH_DATA, file in
// $CRAMFS_BENCH_CRAM, default sample.v30.cram), closed when b ends.
func benchDataCRAM(b *testing.B) *CRAM {
	b.Helper()
	path, store := cramtest.BenchData(b)
	src, err := Open(path, Path(path), Options{Reference: store})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { src.Close() })
	return src
}

// atRoot is the CRAM rel of root as a mount opens it.
func atRoot(root *os.Root, rel string) File { return fs.CRAMRef{Root: root, Rel: rel} }
