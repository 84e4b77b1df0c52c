package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestIndexSaysWhatItDid: cramfs index names each file it indexed (with
// its containers) and each it skipped as already indexed, and ends with
// the counts.
func TestIndexSaysWhatItDid(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	a, b := filepath.Join(dir, "a.cram"), filepath.Join(dir, "b.cram")
	copyFile(t, testdata("cram", "ce_1000.3.0.cram"), a)
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), b)
	args := []string{"index", "--cache-dir", cache, "-T", testdata("ref", "ce.fa"), a}
	if rc, stderr, _ := runCmd(t, args...); rc != 0 || !strings.Contains(stderr, "msg=indexed file="+a+" containers=") {
		t.Fatalf("first index: exit %d:\n%s", rc, stderr)
	}
	rc, stderr, _ := runCmd(t, append(args, b)...)
	for _, want := range []string{
		`msg="already indexed, skipped" file=` + a,
		"msg=indexed file=" + b,
		`msg="index done" files=2 indexed=1 already_indexed=1 failed=0`,
	} {
		if rc != 0 || !strings.Contains(stderr, want) {
			t.Errorf("second index: exit %d, no %q in:\n%s", rc, want, stderr)
		}
	}
}
