package main

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/internal/corpus"
)

// refChoiceFixture is what TestConvertReferenceChoiceMatchesSamtools
// converts: two CRAM files of five reads on CHROMOSOME_II of ce.fa, whose
// @SQ line gives the M5 of CHROMOSOME_I (as cram-js's
// test/data/sam_alignment.tmp.cram does) or of CHROMOSOME_II, and whose
// UR: names a FASTA that is gone; FASTA variants; and directories of
// M5-named files.
type refChoiceFixture struct {
	m5I, m5II   string // the CRAM files
	ce          string // testdata's ce.fa
	alt         string // ce.fa with other bases in CHROMOSOME_II
	alias       string // ce.fa with CHROMOSOME_II renamed alias
	only3       string // CHROMOSOME_III alone
	dirI, dirII string // directories holding CHROMOSOME_I, CHROMOSOME_II by their M5
	cacheI      string // dirI as a REF_CACHE template of htslib's layout
	cacheII     string
}

// namedSeq is one FASTA record.
type namedSeq struct {
	name string
	seq  []byte
}

func md5Of(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

// newRefChoiceFixture writes the fixture's files under dir.
func newRefChoiceFixture(t *testing.T, dir string) *refChoiceFixture {
	t.Helper()
	f := &refChoiceFixture{ce: testdata("ref", "ce.fa")}
	ce := readContigs(t, f.ce)
	seq := map[string][]byte{}
	for _, c := range ce {
		seq[c.name] = c.seq
	}
	sumI, sumII := md5Of(seq["CHROMOSOME_I"]), md5Of(seq["CHROMOSOME_II"])

	// Encode against a copy of ce.fa that is then removed, so that UR:
	// finds nothing.
	enc := filepath.Join(dir, "enc", "ce.fa")
	if err := os.Mkdir(filepath.Dir(enc), 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, f.ce, enc)
	f.m5I = encodeSamAlignment(t, dir, "m5I", sumI, enc)
	f.m5II = encodeSamAlignment(t, dir, "m5II", sumII, enc)
	if err := os.RemoveAll(filepath.Dir(enc)); err != nil {
		t.Fatal(err)
	}

	var alt, alias []namedSeq
	for _, c := range ce {
		a, b := c, c
		if c.name == "CHROMOSOME_II" {
			a.seq = bytes.ReplaceAll(c.seq, []byte("A"), []byte("C"))
			b.name = "alias"
		}
		alt, alias = append(alt, a), append(alias, b)
	}
	f.alt = writeFasta(t, filepath.Join(dir, "alt.fa"), alt)
	f.alias = writeFasta(t, filepath.Join(dir, "alias.fa"), alias)
	f.only3 = writeFasta(t, filepath.Join(dir, "only3.fa"), []namedSeq{{"CHROMOSOME_III", seq["CHROMOSOME_III"]}})

	f.dirI, f.dirII = filepath.Join(dir, "m5-I"), filepath.Join(dir, "m5-II")
	for _, m := range []struct {
		dir, sum string
		seq      []byte
	}{{f.dirI, sumI, seq["CHROMOSOME_I"]}, {f.dirII, sumII, seq["CHROMOSOME_II"]}} {
		// htslib's own cache layout (%2s/%2s/%s), as it writes REF_CACHE;
		// and the whole M5 in the directory itself, for REF_PATH.
		for _, p := range []string{filepath.Join(m.dir, m.sum[:2], m.sum[2:4], m.sum[4:]), filepath.Join(m.dir, m.sum)} {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, m.seq, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	f.cacheI, f.cacheII = f.dirI+"/%2s/%2s/%s", f.dirII+"/%2s/%2s/%s"
	return f
}

// readContigs returns the records of the FASTA file fa, uppercased.
func readContigs(t *testing.T, fa string) []namedSeq {
	t.Helper()
	store, err := reference.Open([]string{fa}, reference.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var out []namedSeq
	for _, c := range store.Contigs() {
		b, err := c.Bases(nil, 0, c.Len())
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, namedSeq{c.Name(), b})
	}
	return out
}

// writeFasta writes the records to path, 60 bases a line.
func writeFasta(t *testing.T, path string, recs []namedSeq) string {
	t.Helper()
	var b bytes.Buffer
	for _, r := range recs {
		fmt.Fprintf(&b, ">%s\n", r.name)
		for s := r.seq; len(s) > 0; s = s[min(60, len(s)):] {
			b.Write(s[:min(60, len(s))])
			b.WriteByte('\n')
		}
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// encodeSamAlignment writes dir/name.cram, samtools' encoding against ref
// of the five reads of cram-js's sam_alignment.tmp.cram on CHROMOSOME_II,
// whose @SQ line says M5 m5.
func encodeSamAlignment(t *testing.T, dir, name, m5, ref string) string {
	t.Helper()
	var sam strings.Builder
	fmt.Fprintf(&sam, "@SQ\tSN:CHROMOSOME_II\tLN:5000\tM5:%s\n", m5)
	for i, n := range []string{"a", "bc", "def", "ghij", "klmno"} {
		fmt.Fprintf(&sam, "%s\t0\tCHROMOSOME_II\t%d\t10\t4M\t*\t0\t0\tATGC\tqqqq\n", n, 100*(i+1))
	}
	in := filepath.Join(dir, name+".sam")
	if err := os.WriteFile(in, []byte(sam.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name+".cram")
	mustSamtools(t, "view", "-C", "--no-PG", "-T", ref, "-o", out, in)
	hdr := mustSamtools(t, "view", "-H", out)
	if !bytes.Contains(hdr, []byte("M5:"+m5)) || !bytes.Contains(hdr, []byte("UR:"+ref)) {
		t.Fatalf("samtools did not keep M5:%s and name UR:%s:\n%s", m5, ref, hdr)
	}
	return out
}

// samtoolsWith runs samtools with REF_PATH and REF_CACHE set to the values
// given and returns its standard output, standard error and exit code.
func samtoolsWith(t *testing.T, refPath, refCache string, args ...string) ([]byte, string, int) {
	t.Helper()
	cmd := exec.Command("samtools", args...)
	cmd.Env = corpus.RefEnv(refPath, refCache)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return stdout.Bytes(), stderr.String(), ee.ExitCode()
	case err != nil:
		t.Fatalf("samtools: %v", err)
	}
	return stdout.Bytes(), stderr.String(), 0
}

// TestConvertReferenceChoiceMatchesSamtools runs samtools 1.16 and cramfs
// convert on the same CRAM, -T FASTA, REF_CACHE and REF_PATH (all the
// test's own) and checks that they agree exactly: the same BAM bytes, or
// both refusing. htslib takes a -T contig by its name whatever its MD5,
// and M5-named files only for names -T lacks; so cram-js's
// sam_alignment.tmp.cram, whose @SQ CHROMOSOME_II gives the M5 of
// CHROMOSOME_I, decodes from -T ce.fa even when REF_CACHE holds the file
// that M5 names (as htslib itself puts there).
func TestConvertReferenceChoiceMatchesSamtools(t *testing.T) {
	if _, err := exec.LookPath("samtools"); err != nil {
		corpus.Missing(t, "samtools: %v", err)
	}
	f := newRefChoiceFixture(t, t.TempDir())
	for _, tc := range []struct {
		name      string
		cram      string
		fasta     string // "" for no -T
		refCache  string // "" for none
		refPath   string // "" for a path of the test's holding nothing
		records   int    // -1: both refuse
		cramfsSay string // what cramfs's refusal says
	}{
		{"sam_alignment, -T has the name, REF_CACHE has the M5", f.m5I, f.ce, f.cacheI, "", 5, ""},
		{"sam_alignment, -T has the name, REF_PATH has the M5", f.m5I, f.ce, "", f.dirI, 5, ""},
		{"sam_alignment, -T has the name, no M5-named file", f.m5I, f.ce, "", "", 5, ""},
		{"sam_alignment, no -T, REF_CACHE has the M5", f.m5I, "", f.cacheI, "", -1, "wrong reference?"},
		{"-T has the name with other bases, REF_CACHE the right ones", f.m5II, f.alt, f.cacheII, "", -1, "wrong reference?"},
		{"-T lacks the name, REF_CACHE has the M5", f.m5II, f.only3, f.cacheII, "", 5, ""},
		{"-T lacks the name, REF_PATH has the M5", f.m5II, f.only3, "", f.dirII, 5, ""},
		{"-T has the bases under another name only", f.m5II, f.alias, "", "", -1, "no contig CHROMOSOME_II in the -T FASTA files"},
		{"no -T, REF_CACHE has the M5", f.m5II, "", f.cacheII, "", 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refPath := tc.refPath
			if refPath == "" {
				refPath = filepath.Join(t.TempDir(), "no-m5-files")
			}
			var tArgs []string
			if tc.fasta != "" {
				tArgs = []string{"-T", tc.fasta}
			}
			want, stErr, stRC := samtoolsWith(t, refPath, tc.refCache, append(append([]string{"view", "-u", "--no-PG"}, tArgs...), tc.cram)...)
			t.Setenv("REF_PATH", refPath)
			t.Setenv("REF_CACHE", tc.refCache)
			out := filepath.Join(t.TempDir(), "x.bam")
			rc, stderr, _ := runCmd(t, append(append([]string{"convert", "--level", "0", "-o", out}, tArgs...), tc.cram)...)
			if rc != stRC {
				t.Fatalf("cramfs convert exit %d, samtools %d\ncramfs: %s\nsamtools: %s", rc, stRC, stderr, stErr)
			}
			if tc.records < 0 {
				if rc == 0 {
					t.Fatalf("both converted; the test expects both to refuse")
				}
				if !strings.Contains(stderr, tc.cramfsSay) {
					t.Errorf("cramfs says %q, not %q", stderr, tc.cramfsSay)
				}
				return
			}
			if rc != 0 {
				t.Fatalf("both refused: cramfs %s\nsamtools %s", stderr, stErr)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("cramfs convert --level 0 wrote %d bytes (MD5 %s), samtools view -u %d (MD5 %s)", len(got), md5Of(got), len(want), md5Of(want))
			}
			if n, _, _ := samtoolsWith(t, refPath, "", "view", "-c", out); strings.TrimSpace(string(n)) != fmt.Sprint(tc.records) {
				t.Errorf("%s records, want %d", bytes.TrimSpace(n), tc.records)
			}
		})
	}
}

// TestConvertWrongReferenceNamesItsSource checks the message of a
// conversion whose reference has the @SQ names but other bases: it names
// the file the contig's bases came from (the -T FASTA, or the M5-named
// file under REF_CACHE) beside the CRAM and container, and does not tell
// the user to give -T when the -T file given is the one that differs.
func TestConvertWrongReferenceNamesItsSource(t *testing.T) {
	dir := t.TempDir()
	f := newRefChoiceFixture(t, dir)
	ce, alt := map[string][]byte{}, map[string][]byte{}
	for _, c := range readContigs(t, f.ce) {
		ce[c.name] = c.seq
	}
	for _, c := range readContigs(t, f.alt) {
		alt[c.name] = c.seq
	}
	altII := alt["CHROMOSOME_II"]
	sumI, sumII := md5Of(ce["CHROMOSOME_I"]), md5Of(ce["CHROMOSOME_II"])
	cacheFile := func(root, sum string) string { return filepath.Join(root, sum[:2], sum[2:4], sum[4:]) }
	// A REF_CACHE whose file named by CHROMOSOME_II's M5 holds other bases.
	badCache := filepath.Join(dir, "bad-cache")
	bad := cacheFile(badCache, sumII)
	if err := os.MkdirAll(filepath.Dir(bad), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, altII, 0o644); err != nil {
		t.Fatal(err)
	}
	giveT := "give the reference FASTA with -T FASTA"
	for _, tc := range []struct {
		name     string
		cram     string
		fasta    string // "" for no -T
		refCache string
		say      []string
		notSay   string
	}{
		{"-T FASTA with other bases", f.m5II, f.alt, f.cacheII, []string{
			"bases from the -T FASTA " + f.alt,
			"the -T FASTA " + f.alt + " has other bases for CHROMOSOME_II than the CRAM was written with",
			"REF_PATH/REF_CACHE cannot stand in"}, giveT},
		{"REF_CACHE file with other bases than its M5", f.m5II, "", badCache + "/%2s/%2s/%s", []string{
			"the M5-named file " + bad + " (REF_CACHE) has M5 " + md5Of(altII),
			"replace or remove the M5-named file " + bad + " (REF_CACHE)"}, ""},
		{"REF_CACHE file of the @SQ M5, other bases than the slices", f.m5I, "", f.cacheI, []string{
			"bases from the M5-named file " + cacheFile(f.dirI, sumI) + " (REF_CACHE)",
			"holds the sequence of the @SQ M5 " + sumI + ", but the slices were written against other bases"}, giveT},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("REF_PATH", filepath.Join(t.TempDir(), "no-m5-files"))
			t.Setenv("REF_CACHE", tc.refCache)
			args := []string{"convert", "-o", filepath.Join(t.TempDir(), "x.bam")}
			if tc.fasta != "" {
				args = append(args, "-T", tc.fasta)
			}
			rc, stderr, _ := runCmd(t, append(args, tc.cram)...)
			if rc != 1 {
				t.Fatalf("exit %d, want 1: %s", rc, stderr)
			}
			for _, w := range append([]string{"cramfs convert: " + tc.cram, "container at byte"}, tc.say...) {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not say %q", stderr, w)
				}
			}
			if tc.notSay != "" && strings.Contains(stderr, tc.notSay) {
				t.Errorf("stderr %q says %q, though the file given is the one that differs", stderr, tc.notSay)
			}
			checkOneMessage(t, "convert", stderr)
		})
	}
}
