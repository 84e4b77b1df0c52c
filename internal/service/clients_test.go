package service

import (
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// The tests in this file read a mount with the BAM clients other than
// samtools that users run (pysam, bedtools, sambamba, Picard), each side by
// side with the same client on samtools' BAM of the same CRAM. The clients
// are Debian's python3-pysam, bedtools, sambamba and picard-tools (.ci/run
// installs them).

// clientFixture is the CRAM the clients read: 500 reads on one reference,
// CRAM 3.1, small enough for a few seconds per client.
const clientFixture = "ce_1000.3.1-normal"

// clientTool returns the path of a client's program, or skips (fails
// under CI) when it is not installed.
func clientTool(t *testing.T, name, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		corpus.Missing(t, "%s (Debian package %s): %v", name, pkg, err)
	}
	return p
}

// pysamPython returns a python3 that can import pysam: Debian's, which
// python3-pysam installs into, before the first on PATH (a pyenv or venv
// python does not see Debian's modules).
func pysamPython(t *testing.T) string {
	t.Helper()
	cands := []string{"/usr/bin/python3"}
	if p, err := exec.LookPath("python3"); err == nil {
		cands = append(cands, p)
	}
	for _, py := range cands {
		if exec.Command(py, "-c", "import pysam").Run() == nil {
			return py
		}
	}
	corpus.Missing(t, "no python3 (of %s) imports pysam (Debian package python3-pysam)", strings.Join(cands, ", "))
	return ""
}

// runClient runs a client program in the directory dir and returns its
// standard output; a failure stops the test with its standard error.
func runClient(t *testing.T, dir, prog string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(prog, args...)
	cmd.Env = samtoolsEnv()
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(prog), strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

// sameOutput runs a client in the directory of the mount's x.bam and in
// that of samtools' x.bam, with the same arguments (which name the file
// x.bam: sambamba's @PG line records them), and checks that it says the
// same, and something.
func sameOutput(t *testing.T, what, mountDir, oracleDir, prog string, args ...string) {
	t.Helper()
	got, want := runClient(t, mountDir, prog, args...), runClient(t, oracleDir, prog, args...)
	if len(want) == 0 {
		t.Fatalf("%s printed nothing on samtools' BAM: nothing compared", what)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s through the mount differs from samtools' BAM: %d and %d bytes; first line that differs:\n%s",
			what, len(got), len(want), firstDiff(got, want))
	}
}

// firstDiff returns the first line where got and want differ, both sides.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n mount:    %q\n samtools: %q", i+1, a, b)
		}
	}
	return "(none)"
}

// pysamScript prints every record iterated from the start, then the
// records fetched for each region of argv (which needs the index, found
// by htslib as x.bam.bai).
const pysamScript = `
import sys, pysam
bam = pysam.AlignmentFile(sys.argv[1], "rb")
print("references", bam.references, bam.lengths, "mapped", bam.mapped)
for r in bam.fetch(until_eof=True):
    print(r.to_string())
for region in sys.argv[2:]:
    rs = list(bam.fetch(region=region))
    print("region", region, len(rs), bam.count(region=region))
    for r in rs:
        print(r.reference_start, r.cigarstring, r.get_tags())
`

// TestMountRealClients reads a CRAM's x.bam through a real mount with
// pysam (iteration, region fetch through the index), bedtools bamtobed and
// sambamba view (all records, and regions through the index), each
// compared with its output on samtools' BAM of the same CRAM; and checks
// the mount's BAM and index with Picard ValidateSamFile (one JVM start).
func TestMountRealClients(t *testing.T) {
	requireMount(t)
	ref := testdata("ref", "ce.fa")
	cram := testdata("cram", clientFixture+".cram")
	src := t.TempDir()
	copyFile(t, cram, filepath.Join(src, "x.cram"))
	m := mountT(t, src, mountConfig{refs: []string{ref}})
	oracleDir := t.TempDir()
	oracle := filepath.Join(oracleDir, "x.bam")
	mustSamtools(t, "view", "-b", "--no-PG", "-T", ref, "-o", oracle, cram)
	mustSamtools(t, "index", oracle)
	sam := mustSamtools(t, "view", "-h", "--no-PG", "-T", ref, cram)
	var regions []string
	for _, r := range pickRegions(clientFixture, sam, 6) {
		if r != "*" { // no unmapped reads here; "*" is not a region to every client
			regions = append(regions, r)
		}
	}
	if n := countRegions(t, oracle, regions); !slices.ContainsFunc(n, func(c string) bool { return c != "0" }) {
		t.Fatalf("regions %v hold no record (counts %v): the region queries would compare nothing", regions, n)
	}

	t.Run("pysam", func(t *testing.T) {
		py := pysamPython(t)
		sameOutput(t, "pysam", m.mnt, oracleDir, py, append([]string{"-c", pysamScript, "x.bam"}, regions...)...)
	})
	t.Run("bedtools", func(t *testing.T) {
		bt := clientTool(t, "bedtools", "bedtools")
		sameOutput(t, "bedtools bamtobed", m.mnt, oracleDir, bt, "bamtobed", "-cigar", "-i", "x.bam")
	})
	t.Run("sambamba", func(t *testing.T) {
		sb := clientTool(t, "sambamba", "sambamba")
		sameOutput(t, "sambamba view", m.mnt, oracleDir, sb, "view", "-h", "-t", "1", "x.bam")
		sameOutput(t, "sambamba view REGION...", m.mnt, oracleDir, sb, append([]string{"view", "-t", "1", "x.bam"}, regions...)...)
	})
	t.Run("picard", func(t *testing.T) {
		pc := clientTool(t, "PicardCommandLine", "picard-tools")
		// The fixture has no @RG: the only findings Picard has on
		// samtools' BAM too. Everything else, the index included
		// (exhaustive by default), must validate.
		out := runClient(t, m.mnt, pc, "ValidateSamFile", "I=x.bam", "MODE=VERBOSE",
			"IGNORE=MISSING_READ_GROUP", "IGNORE=RECORD_MISSING_READ_GROUP", "VERBOSITY=WARNING")
		if !bytes.Contains(out, []byte("No errors found")) {
			t.Errorf("Picard ValidateSamFile on the mount's BAM:\n%s", out)
		}
	})
}
