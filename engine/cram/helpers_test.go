package cram

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/fs"
	"github.com/cramfs/cramfs/internal/cramtest"
)

// manifestEntry is one row of a CRAM manifest (corpus or testdata): the
// columns the tests here read.
type manifestEntry struct {
	path, version, ref, rc string
}

func readManifest(t *testing.T, path string) []manifestEntry {
	t.Helper()
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	var out []manifestEntry
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for first := true; sc.Scan(); first = false {
		f := strings.Split(sc.Text(), "\t")
		if first || len(f) < 9 {
			continue
		}
		out = append(out, manifestEntry{f[0], f[1], f[3], f[4]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

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
