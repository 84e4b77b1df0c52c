package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// TestMain gives the tests, and every tool they run (samtools, pysam, the
// cramfs binary, the commands run in-process), REF_PATH and REF_CACHE
// settings of the run's own under which no M5-named file is found or
// written (corpus.SetNoRefEnv); a test that wants M5-named files sets its
// own under its t.TempDir(). It removes the binary buildCramfs built.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cramfs-cmd-test-")
	if err == nil {
		err = corpus.SetNoRefEnv(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "TestMain:", err)
		os.Exit(1)
	}
	samtoolsEnv = os.Environ()
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}
