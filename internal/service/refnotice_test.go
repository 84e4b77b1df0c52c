package service

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cramfs/cramfs/internal/bgzftest"
	"github.com/cramfs/cramfs/internal/corpus"
)

// cramNamingRef writes dir/NAME.cram, samtools' encoding of the fixture's
// expected SAM against a copy of ref placed in its own directory, so that
// the CRAM's @SQ UR: fields name that copy. It returns the CRAM and the copy.
func cramNamingRef(t *testing.T, dir, name, fixture, ref string) (cram, refCopy string) {
	t.Helper()
	if _, err := samtools("--version"); err != nil {
		corpus.Missing(t, "samtools: %v", err)
	}
	refDir := t.TempDir()
	refCopy = filepath.Join(refDir, filepath.Base(ref))
	copyFile(t, ref, refCopy)
	cram = filepath.Join(dir, name+".cram")
	mustSamtools(t, "view", "-C", "--no-PG", "-T", refCopy, "-o", cram, testdata("cram", fixture+".expected.sam"))
	hdr := mustSamtools(t, "view", "-H", cram)
	if !bytes.Contains(hdr, []byte("UR:"+refCopy)) {
		t.Fatalf("samtools did not name %s in the @SQ UR: fields:\n%s", refCopy, hdr)
	}
	return cram, refCopy
}

// headerM5s returns the M5 values of the CRAM's @SQ lines.
func headerM5s(t *testing.T, cram string) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(`M5:([0-9a-f]{32})`).FindAllSubmatch(mustSamtools(t, "view", "-H", cram), -1) {
		out = append(out, string(m[1]))
	}
	return out
}

// TestConvertFindsReferenceThroughUR checks that, like samtools, convert
// needs no -T when the @SQ UR: field names a local FASTA, and writes what
// samtools writes.
func TestConvertFindsReferenceThroughUR(t *testing.T) {
	t.Setenv("REF_PATH", filepath.Join(t.TempDir(), "path"))
	t.Setenv("REF_CACHE", filepath.Join(t.TempDir(), "cache"))
	dir := t.TempDir()
	cram, _ := cramNamingRef(t, dir, "x", "ce_5b.3.0", testdata("ref", "ce.fa"))
	rc, stderr, out := runCmd(t, "convert", "--level", "0", cram)
	if rc != 0 {
		t.Fatalf("cramfs convert without -T: exit %d: %s", rc, stderr)
	}
	got, err := bgzftest.DecompressAll(out)
	if err != nil {
		t.Fatal(err)
	}
	want := mustSamtools(t, "view", "-u", "--no-PG", cram) // samtools too reads the UR: file
	if wantRaw, err := bgzftest.DecompressAll(want); err != nil || !bytes.Equal(got, wantRaw) {
		t.Fatalf("BAM through UR: differs from samtools' (%d and %d bytes, %v)", len(got), len(wantRaw), err)
	}
}

// TestConvertMissingReferenceSaysWhatToDo checks the message of a
// conversion whose reference is nowhere: the file, the container, the
// contig and its M5, what was looked at, and the remedy.
func TestConvertMissingReferenceSaysWhatToDo(t *testing.T) {
	refPath := filepath.Join(t.TempDir(), "path")
	t.Setenv("REF_PATH", refPath)
	t.Setenv("REF_CACHE", filepath.Join(t.TempDir(), "cache"))
	dir := t.TempDir()
	cram, refCopy := cramNamingRef(t, dir, "x", "ce_1000.3.0", testdata("ref", "ce.fa"))
	m5s := headerM5s(t, cram)
	if err := os.Remove(refCopy); err != nil {
		t.Fatal(err)
	}
	rc, stderr, _ := runCmd(t, "convert", "-o", filepath.Join(dir, "x.bam"), cram)
	if rc != 1 {
		t.Fatalf("exit %d, want 1; stderr: %s", rc, stderr)
	}
	for _, w := range []string{"cramfs convert: " + cram, "container at byte", "reference CHROMOSOME_I", m5s[0], "not found",
		"UR:" + refCopy + ": no such file", "REF_PATH " + refPath, "-T FASTA"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr %q does not say %q", stderr, w)
		}
	}
	checkOneMessage(t, "convert", stderr)
	if _, err := os.Stat(filepath.Join(dir, "x.bam")); err == nil {
		t.Error("x.bam exists after a failed conversion")
	}
}

// noticeLines returns the lines of the mount's log that report a
// reference problem of cram: warnings that cannot serve its BAM.
func noticeLines(stderr, cram string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, `level=WARN msg="cannot serve `) && strings.HasSuffix(l, " file="+cram) {
			out = append(out, l)
		}
	}
	return out
}

// waitNotice waits for the reference notice of cram and checks that it
// is the only one and says each of want.
func waitNotice(t *testing.T, p *mountProc, cram string, want ...string) {
	t.Helper()
	poll(t, "reference notice of "+cram, 10*time.Second, func() error {
		if len(noticeLines(p.Stderr.String(), cram)) == 0 {
			return errors.New("not printed")
		}
		return nil
	})
	lines := noticeLines(p.Stderr.String(), cram)
	if len(lines) != 1 {
		t.Fatalf("%d reference notices for %s, want 1:\n%s", len(lines), cram, strings.Join(lines, "\n"))
	}
	for _, w := range want {
		if !strings.Contains(lines[0], w) {
			t.Errorf("notice %q does not say %q", lines[0], w)
		}
	}
}

// wantEIO checks that stat or read of p fails with EIO.
func wantEIO(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("%s: %v, want EIO", what, err)
	}
}

// TestMountReferenceNoticeOnce checks that a mount says once, on standard
// error, at the first access, which file cannot be served for want of its
// reference (missing, or not the one the CRAM was written with), naming
// the contig, its M5 and the remedy; that the file is still listed; and
// that the other files are served.
func TestMountReferenceNoticeOnce(t *testing.T) {
	requireMount(t)
	bin := buildCramfs(t)
	src := t.TempDir()
	gone, goneRef := cramNamingRef(t, src, "gone", "xx_tlen.3.0", testdata("ref", "xx.fa"))
	wrong, wrongRef := cramNamingRef(t, src, "wrong", "xx_tlen.3.0", testdata("ref", "xx.fa"))
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), filepath.Join(src, "good.cram"))
	m5 := headerM5s(t, gone)[0]
	if err := os.Remove(goneRef); err != nil {
		t.Fatal(err)
	}
	// Same names and lengths, other bases: found, but the slice MD5s differ.
	fa, err := os.ReadFile(wrongRef)
	if err != nil {
		t.Fatal(err)
	}
	altered := alterBases(fa)
	if err := os.WriteFile(wrongRef, altered, 0o644); err != nil {
		t.Fatal(err)
	}
	// Written against ce.fa with other bases, whose names the mount's -T
	// ce.fa has: the -T contigs are used, and their slice MD5s differ.
	ce, err := os.ReadFile(testdata("ref", "ce.fa"))
	if err != nil {
		t.Fatal(err)
	}
	altCe := filepath.Join(t.TempDir(), "ce.fa")
	if err := os.WriteFile(altCe, alterBases(ce), 0o644); err != nil {
		t.Fatal(err)
	}
	other, _ := cramNamingRef(t, src, "other", "ce_1000.3.0", altCe)

	p := startMount(t, bin, src, "--cache-dir", t.TempDir()) // -T ce.fa only
	if got := readNames(t, p.Mnt); !strings.Contains(got, "gone.bam") || !strings.Contains(got, "wrong.bam") {
		t.Errorf("listing %q does not show the files whose reference is missing", got)
	}
	// What a user sees: ls -l lists gone.bam, with "?" attributes, and
	// says why on its standard error; no index is listed or found for it.
	ls := exec.Command("ls", "-l", p.Mnt)
	var lsOut, lsErr bytes.Buffer
	ls.Stdout, ls.Stderr = &lsOut, &lsErr
	if err := ls.Run(); err == nil || !regexp.MustCompile(`(?m)^-\?+ .* gone\.bam$`).Match(lsOut.Bytes()) ||
		!strings.Contains(lsErr.String(), "gone.bam': Input/output error") {
		t.Errorf("ls -l: %v\nstdout:\n%s\nstderr:\n%s", err, lsOut.String(), lsErr.String())
	}
	if strings.Contains(lsOut.String(), "gone.bam.bai") || strings.Contains(lsOut.String(), "gone.bai") {
		t.Errorf("ls -l lists an index of gone.bam:\n%s", lsOut.String())
	}
	_, err = os.Lstat(filepath.Join(p.Mnt, "gone.bam.bai"))
	wantEIO(t, "lstat gone.bam.bai", err)
	for range 3 {
		_, err := os.Stat(filepath.Join(p.Mnt, "gone.bam"))
		wantEIO(t, "stat gone.bam", err)
		_, err = os.ReadFile(filepath.Join(p.Mnt, "wrong.bam"))
		wantEIO(t, "read wrong.bam", err)
	}
	if _, err := os.ReadFile(filepath.Join(p.Mnt, "good.bam")); err != nil {
		t.Errorf("good.bam: %v", err)
	}
	// xx_tlen's contigs xx and yy have the same sequence, and M5.
	waitNotice(t, p, gone, "gone.bam", "size is unknown without the right reference", "stat and open fail with EIO", "stays listed",
		"(M5 "+m5+", 20 bases) not found", "UR:"+goneRef+": no such file", "-T FASTA", "REF_PATH", "tried again after 30 s", "needs a new mount")
	waitNotice(t, p, wrong, "wrong.bam", "stat and open fail with EIO", "(@SQ M5 "+m5+")", "wrong reference",
		"bases from the FASTA "+wrongRef+" (@SQ UR:)", "the FASTA "+wrongRef+" (@SQ UR:) has other bases for ", "with -T")
	if _, err := os.Stat(filepath.Join(p.Mnt, "other.bam")); !errors.Is(err, syscall.EIO) {
		t.Errorf("stat other.bam: %v, want EIO", err)
	}
	ceT := testdata("ref", "ce.fa")
	waitNotice(t, p, other, "other.bam", "stat and open fail with EIO", "bases from the -T FASTA "+ceT,
		"the -T FASTA "+ceT+" has other bases for CHROMOSOME_I than the CRAM was written with", "give with -T the FASTA it was written with")
	if l := noticeLines(p.Stderr.String(), other); len(l) == 1 && strings.Contains(l[0], referenceRemedy) {
		t.Errorf("notice %q tells to give -T, which was given and differs", l[0])
	}
	if n := len(noticeLines(p.Stderr.String(), filepath.Join(src, "good.cram"))); n != 0 {
		t.Errorf("%d notices for good.cram", n)
	}
}

// TestMountReferenceNoticeAtMountTime checks that --index-on-mount reports
// a missing reference at mount time, without any access, once.
func TestMountReferenceNoticeAtMountTime(t *testing.T) {
	requireMount(t)
	bin := buildCramfs(t)
	src := t.TempDir()
	gone, goneRef := cramNamingRef(t, src, "gone", "xx_tlen.3.0", testdata("ref", "xx.fa"))
	if err := os.Remove(goneRef); err != nil {
		t.Fatal(err)
	}
	p := startMount(t, bin, src, "--cache-dir", t.TempDir(), "--index-on-mount")
	waitNotice(t, p, gone, "gone.bam", "not found", "UR:"+goneRef, "-T FASTA")
	if strings.Contains(p.Stderr.String(), "background index failed") {
		t.Errorf("the reference problem was reported twice:\n%s", p.Stderr.String())
	}
}

// TestMountReferenceNoticeOnRead checks the notice of a file whose layout
// an earlier mount persisted: it opens without its reference, and its
// first read fails.
func TestMountReferenceNoticeOnRead(t *testing.T) {
	requireMount(t)
	bin := buildCramfs(t)
	src, cache := t.TempDir(), t.TempDir()
	cram, refCopy := cramNamingRef(t, src, "x", "xx_tlen.3.0", testdata("ref", "xx.fa"))
	p := startMount(t, bin, src, "--cache-dir", cache)
	if _, err := os.Stat(filepath.Join(p.Mnt, "x.bam")); err != nil {
		t.Fatalf("stat with the reference in place: %v", err)
	}
	if err := unmountProc(t, p); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(refCopy); err != nil {
		t.Fatal(err)
	}
	q := startMount(t, bin, src, "--cache-dir", cache)
	if _, err := os.Stat(filepath.Join(q.Mnt, "x.bam")); err != nil {
		t.Fatalf("stat from the persisted layout: %v", err)
	}
	for range 3 {
		_, err := os.ReadFile(filepath.Join(q.Mnt, "x.bam"))
		wantEIO(t, "read x.bam", err)
	}
	waitNotice(t, q, cram, "x.bam", "its reads fail with EIO", "not found", "UR:"+refCopy, "-T FASTA", "needs a new mount")
	if l := noticeLines(q.Stderr.String(), cram); len(l) == 1 && strings.Contains(l[0], "stat and open fail") {
		t.Errorf("notice %q says stat fails, but the layout was persisted", l[0])
	}
}

// alterBases returns the FASTA fa with each A of its sequence lines made
// a C: the same names and lengths, other bases.
func alterBases(fa []byte) []byte {
	var out []byte
	for _, l := range bytes.SplitAfter(fa, []byte("\n")) {
		if !bytes.HasPrefix(l, []byte(">")) {
			l = bytes.ReplaceAll(l, []byte("A"), []byte("C"))
		}
		out = append(out, l...)
	}
	return out
}
