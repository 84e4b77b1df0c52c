package service

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/internal/bgzftest"
	"github.com/cramfs/cramfs/internal/clitest"
)

// TestMountBgzipReference mounts with -T a bgzip-compressed ce.fa (with
// the .fai and .gzi of samtools faidx) and checks that the BAMs served are
// what samtools 1.16 decodes with the same -T; then that, the file
// truncated under the mount, a BAM needing bases of the lost blocks fails
// with EIO and a notice naming the reference file, the mount going on.
func TestMountBgzipReference(t *testing.T) {
	requireMount(t)
	bin := buildCramfs(t)
	src, mnt := t.TempDir(), t.TempDir()
	gz := filepath.Join(t.TempDir(), "ce.fa.gz")
	clitest.BgzipFasta(t, testdata("ref", "ce.fa"), gz)
	for _, name := range []string{"ce_1000.3.0", "ce_5b.3.1-archive"} {
		copyFile(t, testdata("cram", name+".cram"), filepath.Join(src, name+".cram"))
	}
	// Bases far from where contigs start: a block that neither the reads
	// above nor the check of the .fai at mount time inflate.
	mid := clitest.CRAMAt(t, src, "mid", testdata("ref", "ce.fa"), "CHROMOSOME_I", 500000)
	p := startMountProc(t, bin, mnt, "mount", "-T", gz, "-@", "2", "--cache-dir", t.TempDir(), src, mnt)
	for _, name := range []string{"ce_1000.3.0", "ce_5b.3.1-archive"} {
		b, err := os.ReadFile(filepath.Join(mnt, name+".bam"))
		if err != nil {
			t.Fatal(err)
		}
		got, err := bgzftest.DecompressAll(b)
		if err != nil {
			t.Fatal(err)
		}
		want, err := bgzftest.DecompressAll(mustSamtools(t, "view", "-u", "--no-PG", "-T", gz, filepath.Join(src, name+".cram")))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s.bam with -T %s: %d bytes (MD5 %s), samtools %d (MD5 %s)", name, gz, len(got), md5Hex(got), len(want), md5Hex(want))
		}
	}

	if err := os.Truncate(gz, 100000); err != nil {
		t.Fatal(err)
	}
	_, err := os.Stat(filepath.Join(mnt, "mid.bam"))
	wantEIO(t, "stat mid.bam after its reference was truncated", err)
	waitNotice(t, p, mid, "mid.bam", "reference problem", gz, "truncated while mapped", "a reference file changed while cramfs read it")
	if _, err := os.ReadFile(filepath.Join(mnt, "ce_1000.3.0.bam")); err != nil {
		t.Errorf("ce_1000.3.0.bam, read before: %v", err)
	}
}
