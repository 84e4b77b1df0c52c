package main

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/internal/bgzftest"
	"github.com/cramfs/cramfs/internal/clitest"
	"github.com/cramfs/cramfs/internal/corpus"
)

// TestConvertBgzipReferenceMatchesSamtools converts CRAM files with -T a
// bgzip-compressed ce.fa (indexed by samtools faidx: .fai and .gzi) and
// checks that the BAM stream is the one samtools 1.16 decodes with the
// same -T, and the one of the plain ce.fa.
func TestConvertBgzipReferenceMatchesSamtools(t *testing.T) {
	if _, err := exec.LookPath("samtools"); err != nil {
		corpus.Missing(t, "samtools: %v", err)
	}
	gz := filepath.Join(t.TempDir(), "ce.fa.gz")
	clitest.BgzipFasta(t, testdata("ref", "ce.fa"), gz)
	for _, name := range []string{"ce_1000.3.0", "ce_1000.3.0-multislice", "ce_5b.3.1-archive", "ce_unmap2.3.1-small"} {
		cram := testdata("cram", name+".cram")
		got, err := bgzftest.DecompressAll(convertAt(t, 0, cram, []string{gz}))
		if err != nil {
			t.Fatal(err)
		}
		want, err := bgzftest.DecompressAll(mustSamtools(t, "view", "-u", "--no-PG", "-T", gz, cram))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: BAM stream with -T %s: %d bytes (MD5 %s), samtools %d (MD5 %s)", name, gz, len(got), md5Hex(got), len(want), md5Hex(want))
		}
		if m := md5Hex(got); m != wantMD5(t, name) {
			t.Errorf("%s: BAM stream MD5 %s, with the plain ce.fa %s", name, m, wantMD5(t, name))
		}
	}
}

// TestConvertBadBgzipReference checks that convert refuses cleanly, with
// one message naming the reference file and what is wrong, a compressed
// reference it cannot use: truncated after it was indexed, damaged in
// place, compressed with plain gzip (recompress with bgzip, as samtools
// says) or without its .gzi (samtools faidx makes it).
func TestConvertBadBgzipReference(t *testing.T) {
	if _, err := exec.LookPath("samtools"); err != nil {
		corpus.Missing(t, "samtools: %v", err)
	}
	dir := t.TempDir()
	ce := testdata("ref", "ce.fa")
	variant := func(name string) string {
		p := filepath.Join(dir, name, "ce.fa.gz")
		must(t, os.Mkdir(filepath.Dir(p), 0o755))
		clitest.BgzipFasta(t, ce, p)
		return p
	}
	truncated := variant("truncated")
	must(t, os.Truncate(truncated, 100000))
	// Damaged in the block of CHROMOSOME_I:500000, which mid.cram reads
	// and opening the FASTA does not (it reads the blocks where contigs
	// start); and in the first block, which opening reads.
	mid := clitest.CRAMAt(t, dir, "mid", ce, "CHROMOSOME_I", 500000)
	damaged := variant("damaged")
	block := damageBlock(t, damaged, 500000)
	damagedFirst := variant("damaged-first")
	damageBlock(t, damagedFirst, 0)
	noGzi := variant("nogzi")
	must(t, os.Remove(noGzi+".gzi"))
	plainGz := filepath.Join(dir, "gzip.fa.gz")
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	fa, err := os.ReadFile(ce)
	must(t, err)
	zw.Write(fa)
	must(t, zw.Close())
	must(t, os.WriteFile(plainGz, b.Bytes(), 0o644))

	for _, tc := range []struct {
		name, ref string
		say       []string
	}{
		{"truncated", truncated, []string{truncated + ".gzi", "is the index stale?"}},
		{"damaged", damaged, []string{mid, "container at byte", fmt.Sprintf("%s: BGZF block at byte %d", damaged, block), "damaged or its index stale"}},
		{"damaged where opening reads", damagedFirst, []string{damagedFirst + ".fai: .fai line 1: CHROMOSOME_I", damagedFirst + ": BGZF block at byte 0"}},
		{"no .gzi", noGzi, []string{noGzi + " is compressed with bgzip and has no " + noGzi + ".gzi", "samtools faidx " + noGzi}},
		{"gzip", plainGz, []string{plainGz + " is compressed with gzip, not bgzip", "recompress it with bgzip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "x.bam")
			rc, stderr, _ := runCmd(t, "convert", "-T", tc.ref, "-o", out, mid)
			if rc != 1 {
				t.Fatalf("exit %d, want 1: %s", rc, stderr)
			}
			for _, w := range tc.say {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
			checkOneMessage(t, "convert", stderr)
			if _, err := os.Stat(out); err == nil {
				t.Error("x.bam exists after a failed conversion")
			}
		})
	}
}

// damageBlock overwrites bytes in place within the BGZF block of the file
// at path that holds uncompressed byte text, found through its .gzi, and
// returns the block's offset.
func damageBlock(t *testing.T, path string, text int64) int64 {
	t.Helper()
	gzi, err := os.ReadFile(path + ".gzi")
	must(t, err)
	block := int64(0)
	for e := gzi[8:]; len(e) >= 16; e = e[16:] {
		if int64(binary.LittleEndian.Uint64(e[8:])) <= text {
			block = int64(binary.LittleEndian.Uint64(e))
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt(bytes.Repeat([]byte{0x55}, 64), block+1000)
	must(t, err)
	must(t, f.Close())
	return block
}
