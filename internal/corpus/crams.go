package corpus

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// CRAMEntry is one row of a CRAM manifest: the corpus's cram_manifest.tsv
// or testdata/cram/manifest.tsv (columns cram, version, bytes, reference,
// samtools_rc, records, expected_sam_md5, bam_payload_md5,
// bam_payload_md5_decode_md0, then columns the tests do not read).
type CRAMEntry struct {
	Path       string // the CRAM, relative to the manifest's directory
	Version    string
	Ref        string // the reference FASTA, relative likewise; "" for none
	RC         string // samtools view's exit status on it
	Records    string
	SAMMD5     string // MD5 of samtools view -h --no-PG
	BAMMD5     string // MD5 of the uncompressed BAM stream
	BAMMD5NoMD string // the same, decoded without generating MD and NM
}

// cramColumns is how many leading columns a CRAMEntry holds.
const cramColumns = 9

// CRAMManifest reads a CRAM manifest, skipping its header line, and fails
// tb on a row of fewer than cramColumns columns or on a manifest without
// rows.
func CRAMManifest(tb testing.TB, path string) []CRAMEntry {
	tb.Helper()
	fh, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer fh.Close()
	var out []CRAMEntry
	sc := bufio.NewScanner(fh)
	sc.Buffer(nil, 1<<20)
	for line := 1; sc.Scan(); line++ {
		if line == 1 || sc.Text() == "" {
			continue
		}
		f := strings.Split(sc.Text(), "\t")
		if len(f) < cramColumns {
			tb.Fatalf("%s:%d: %d columns, want at least %d", path, line, len(f), cramColumns)
		}
		out = append(out, CRAMEntry{Path: f[0], Version: f[1], Ref: f[3], RC: f[4], Records: f[5], SAMMD5: f[6], BAMMD5: f[7], BAMMD5NoMD: f[8]})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	if len(out) == 0 {
		tb.Fatalf("%s lists no CRAM", path)
	}
	return out
}
