// Package cramtest holds the test helpers that the engine's tests and the
// CRAM source's tests share: testdata CRAMs copied into a test's
// directory, roots, the testdata reference, samtools without the
// machine's references, and the benchmark dataset. It imports neither
// package, so that the internal tests of both can use it.
package cramtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/internal/corpus"
)

// CopyCRAM copies the testdata CRAM name to dst, making its directory.
func CopyCRAM(t *testing.T, name, dst string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata", "cram", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// OpenRoot opens dir as a root, closed when t ends.
func OpenRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// Reference opens testdata's ce.fa, closed when tb ends.
func Reference(tb testing.TB) *reference.Store {
	tb.Helper()
	store, err := reference.Open([]string{filepath.Join(corpus.Root(), "testdata", "ref", "ce.fa")}, reference.Options{NoEnv: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	return store
}

// Samtools runs samtools with args, without the machine's references
// (corpus.NoRefEnv), failing tb on error; missing samtools is
// corpus.Missing.
func Samtools(tb testing.TB, args ...string) []byte {
	tb.Helper()
	path, err := exec.LookPath("samtools")
	if err != nil {
		corpus.Missing(tb, "samtools: %v", err)
	}
	cmd := exec.Command(path, args...)
	cmd.Env = corpus.NoRefEnv(tb)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("samtools %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// BenchData returns the path of a CRAM of the benchmark dataset
// (../shared/bench/make-data.sh; directory in $CRAMFS_BENCH_DATA, file in
// $CRAMFS_BENCH_CRAM, default sample.v30.cram) and its reference, closed
// when b ends; b is skipped without the dataset.
func BenchData(b *testing.B) (string, *reference.Store) {
	b.Helper()
	dir := os.Getenv("CRAMFS_BENCH_DATA")
	if dir == "" {
		b.Skip("CRAMFS_BENCH_DATA is not set (see ../shared/bench/make-data.sh)")
	}
	name := os.Getenv("CRAMFS_BENCH_CRAM")
	if name == "" {
		name = "sample.v30.cram"
	}
	store, err := reference.Open([]string{filepath.Join(dir, "ref.fa")}, reference.Options{NoEnv: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	return filepath.Join(dir, name), store
}
