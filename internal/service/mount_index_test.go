package service

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/internal/bgzftest"
)

// TestMountServesCSIForLongReferences mounts a CRAM whose reference is
// longer than a BAI can address (2^29): the mount lists x.bam.csi, not
// x.bam.bai, and the CSI equals samtools index -c of the same BAM once
// both are decompressed; region queries through it equal samtools'.
func TestMountServesCSIForLongReferences(t *testing.T) {
	requireMount(t)
	// A SAM on a 1 Gbp reference with reads past 2^29.
	var sam strings.Builder
	sam.WriteString("@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:long\tLN:1000000000\n@SQ\tSN:short\tLN:5000\n")
	for i := 0; i < 300; i++ {
		pos := 1 + i*3000007
		fmt.Fprintf(&sam, "r%d\t0\tlong\t%d\t60\t10M\t*\t0\t0\tACGTACGTAC\tIIIIIIIIII\n", i, pos)
	}
	sam.WriteString("s1\t0\tshort\t100\t60\t10M\t*\t0\t0\tACGTACGTAC\tIIIIIIIIII\n")
	dir, src, _ := cramFromSAM(t, "long", sam.String())
	m := mountT(t, src, mountConfig{})
	// Listings read no CRAM: the index is listed once the file was opened.
	if listed := readNames(t, m.mnt); listed != "long.bam" {
		t.Fatalf("listing %q before opening, want %q", listed, "long.bam")
	}
	for _, n := range []string{"long.bam.bai", "long.bai"} {
		if _, err := os.Stat(filepath.Join(m.mnt, n)); !os.IsNotExist(err) {
			t.Errorf("%s: %v, want not found", n, err)
		}
	}
	if listed := readNames(t, m.mnt); listed != "long.bam long.bam.csi long.csi" {
		t.Fatalf("listing %q, want %q", listed, "long.bam long.bam.csi long.csi")
	}
	got, err := os.ReadFile(filepath.Join(m.mnt, "long.bam.csi"))
	if err != nil {
		t.Fatal(err)
	}
	if alias, err := os.ReadFile(filepath.Join(m.mnt, "long.csi")); err != nil || !bytes.Equal(alias, got) {
		t.Fatalf("long.csi: %v, or not the bytes of long.bam.csi", err)
	}
	bam := filepath.Join(dir, "copy.bam")
	data, err := os.ReadFile(filepath.Join(m.mnt, "long.bam"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bam, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := samtools("index", "-c", bam); err != nil {
		t.Fatalf("samtools index -c: %v\n%s", err, out)
	}
	want, err := os.ReadFile(bam + ".csi")
	if err != nil {
		t.Fatal(err)
	}
	g, err := bgzftest.DecompressAll(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := bgzftest.DecompressAll(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Fatalf("CSI differs from samtools index -c (%d vs %d bytes decompressed)", len(g), len(w))
	}
	for _, region := range []string{"long:1-1000", "long:536870000-600000000", "long:900000000-1000000000", "short"} {
		a, err := samtools("view", "-c", filepath.Join(m.mnt, "long.bam"), region)
		if err != nil {
			t.Fatalf("region %s through the mount: %v\n%s", region, err, a)
		}
		b, err := samtools("view", "-c", bam, region)
		if err != nil {
			t.Fatalf("region %s on the copy: %v\n%s", region, err, b)
		}
		if string(a) != string(b) {
			t.Errorf("region %s: %s through the mount, samtools %s", region, a, b)
		}
	}
}

// TestMountHidesIndexOfUnsortedCRAM mounts a CRAM whose records are not
// sorted by coordinate, so no index can be built: x.bam.bai does not
// exist (it used to be an empty file) and, once the file was opened, the
// listing names only x.bam, whose records are samtools' own.
func TestMountHidesIndexOfUnsortedCRAM(t *testing.T) {
	requireMount(t)
	var sam strings.Builder
	sam.WriteString("@HD\tVN:1.6\tSO:unsorted\n@SQ\tSN:c1\tLN:100000\n")
	for i := 0; i < 200; i++ {
		pos := 1 + (i*7919)%90000 // out of order
		fmt.Fprintf(&sam, "r%d\t0\tc1\t%d\t60\t10M\t*\t0\t0\tACGTACGTAC\tIIIIIIIIII\n", i, pos)
	}
	_, src, cram := cramFromSAM(t, "u", sam.String())
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
	if listed := readNames(t, m.mnt); listed != "u.bam" {
		t.Fatalf("listing %q, want %q", listed, "u.bam")
	}
}

// cramFromSAM writes sam as dir/src/stem.cram in a new temporary dir,
// without a reference (no_ref), so none is needed to read it.
func cramFromSAM(t *testing.T, stem, sam string) (dir, src, cram string) {
	t.Helper()
	dir = t.TempDir()
	src = filepath.Join(dir, "src")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	samPath := filepath.Join(dir, stem+".sam")
	if err := os.WriteFile(samPath, []byte(sam), 0o644); err != nil {
		t.Fatal(err)
	}
	cram = filepath.Join(src, stem+".cram")
	if out, err := samtools("view", "-C", "--no-PG", "--output-fmt-option", "no_ref=1", "-o", cram, samPath); err != nil {
		t.Fatalf("samtools view -C: %v\n%s", err, out)
	}
	return dir, src, cram
}
