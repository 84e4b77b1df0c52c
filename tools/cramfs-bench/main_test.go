package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestScratchDirKeepsOnlyTheBigFile: a -scratch directory given again
// keeps the ×16 file and loses what an earlier cramfs made (its warm
// indexes, copies, floor BAM), so a run never measures with another
// build's indexes.
func TestScratchDirKeepsOnlyTheBigFile(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"x16/sample.v30.x16.cram", "x16/sample.v30.x16.cram.complete", "warm-cache/a.idx", "copies-v30/.complete", "floor/sample.v30.bam"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, cleanup, err := scratchDir(dir)
	if err != nil || got != dir {
		t.Fatalf("scratchDir(%s) = %s, %v", dir, got, err)
	}
	cleanup()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "x16" {
		t.Errorf("left %v, want only x16", entries)
	}
	if _, err := os.Stat(filepath.Join(dir, "x16", "sample.v30.x16.cram.complete")); err != nil {
		t.Errorf("the ×16 file's marker: %v", err)
	}
	tmp, cleanup, err := scratchDir("")
	if err != nil {
		t.Fatal(err)
	}
	cleanup()
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Errorf("temporary scratch %s left after cleanup: %v", tmp, err)
	}
}
