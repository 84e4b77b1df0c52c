package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/fs"
	"github.com/cramfs/cramfs/internal/corpus"
)

// copyTestCRAM copies the testdata CRAM name to dst.
func copyTestCRAM(t *testing.T, name, dst string) {
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

// openTestRoot opens dir as a root, closed when t ends.
func openTestRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// evictByOther opens other.cram of root with opt, whose FileStates holds
// one descriptor: that drops c's state, which it checks (the FileStates
// is left empty once other.cram is closed).
func evictByOther(t *testing.T, c *cram.CRAM, root *os.Root, opt cram.Options) {
	t.Helper()
	o, err := cram.Open("other.cram", atRoot(root, "other.cram"), opt)
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	if entries, _, _ := opt.States.Snapshot(); len(entries) != 0 {
		t.Fatalf("%s: its state was not dropped by a FileStates of one descriptor (%d entries held)", c.Name(), len(entries))
	}
}

// testdataReference opens testdata's ce.fa, closed when t ends.
func testdataReference(t *testing.T) *reference.Store {
	t.Helper()
	store, err := reference.Open([]string{filepath.Join(corpus.Root(), "testdata", "ref", "ce.fa")}, reference.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// atRoot is the CRAM rel of root as a mount opens it.
func atRoot(root *os.Root, rel string) cram.File { return fs.CRAMRef{Root: root, Rel: rel} }
