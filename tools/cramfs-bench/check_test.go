package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// TestCheckSame: BAMs of the same records at different BGZF levels pass;
// BAMs of different records fail, naming the SAM difference.
func TestCheckSame(t *testing.T) {
	st, err := exec.LookPath("samtools")
	if err != nil {
		corpus.Missing(t, "samtools: %v", err)
		return
	}
	root := moduleRoot()
	ref := filepath.Join(root, "testdata", "ref", "ce.fa")
	dir := t.TempDir()
	b := &bench{tools: []samtool{{Path: st, Version: "oracle"}}, threads: 1}
	bam := func(name, cram string, opts ...string) string {
		out := filepath.Join(dir, name)
		args := append(append([]string{"view", "--no-PG", "-T", ref}, opts...), "-o", out, filepath.Join(root, "testdata", "cram", cram))
		cmd := exec.Command(st, args...)
		cmd.Env = corpus.NoRefEnv(t)
		if msg, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("samtools %s: %v\n%s", strings.Join(args, " "), err, msg)
		}
		return out
	}
	u := bam("u.bam", "ce_1000.2.1.cram", "-u")
	l6 := bam("l6.bam", "ce_1000.2.1.cram", "-b", "--output-fmt-option", "level=6")
	other := bam("other.bam", "ce_1.2.1.cram", "-u")
	if err := b.checkSame(context.Background(), u, l6); err != nil {
		t.Errorf("same records at levels 0 and 6: %v", err)
	}
	err = b.checkSame(context.Background(), u, other)
	if err == nil || !strings.Contains(err.Error(), "CORRECTNESS: uncompressed BAM streams differ") || !strings.Contains(err.Error(), "SAM text is different") {
		t.Errorf("different records: err = %v", err)
	}
}
