package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMountHidesIndexOfUnsortedCRAM mounts a CRAM whose records are not
// sorted by coordinate, so no index can be built: x.bam.bai does not
// exist (it used to be an empty file) and, once the file was opened, the
// listing names only x.bam, whose records are samtools' own.
func TestMountHidesIndexOfUnsortedCRAM(t *testing.T) {
	requireMount(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	var sam strings.Builder
	sam.WriteString("@HD\tVN:1.6\tSO:unsorted\n@SQ\tSN:c1\tLN:100000\n")
	for i := 0; i < 200; i++ {
		pos := 1 + (i*7919)%90000 // out of order
		fmt.Fprintf(&sam, "r%d\t0\tc1\t%d\t60\t10M\t*\t0\t0\tACGTACGTAC\tIIIIIIIIII\n", i, pos)
	}
	samPath := filepath.Join(dir, "u.sam")
	if err := os.WriteFile(samPath, []byte(sam.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	cram := filepath.Join(src, "u.cram")
	if out, err := samtools("view", "-C", "--no-PG", "--output-fmt-option", "no_ref=1", "-o", cram, samPath); err != nil {
		t.Fatalf("samtools view -C: %v\n%s", err, out)
	}
	m := mountT(t, src, mountConfig{})
	if _, err := os.Stat(filepath.Join(m.mnt, "u.bam.bai")); !os.IsNotExist(err) {
		t.Fatalf("u.bam.bai: %v, want not found", err)
	}
	got, err := samtools("view", "--no-PG", filepath.Join(m.mnt, "u.bam"))
	if err != nil {
		t.Fatalf("samtools view of the mount: %v\n%s", err, got)
	}
	want, err := samtools("view", "--no-PG", cram)
	if err != nil {
		t.Fatalf("samtools view of the CRAM: %v\n%s", err, want)
	}
	if !bytes.Equal(got, want) || len(want) == 0 {
		t.Fatalf("records through the mount differ from samtools' (%d and %d bytes)", len(got), len(want))
	}
	names, err := os.ReadDir(m.mnt)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, n := range names {
		listed = append(listed, n.Name())
	}
	if strings.Join(listed, " ") != "u.bam" {
		t.Fatalf("listing %q, want [u.bam]", listed)
	}
}
