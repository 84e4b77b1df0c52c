package cram

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/cramtest"
	"github.com/cramfs/cramfs/internal/hostile"
)

// compareLeanLayout checks every container of the CRAM at path: the lean
// pass must measure it (no fallback) and give the records and length of
// the full build. It returns the records compared.
func compareLeanLayout(t *testing.T, path string, fastas []string, noMD bool) int {
	t.Helper()
	store, err := reference.Open(fastas, reference.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c, err := Open(path, Path(path), Options{Reference: store, NoMD: noMD, AllowMissingEOF: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	n := 0
	var lean, full []source.RecordLayout
	for i := 0; i < c.NumContainers(); i++ {
		full, fullTotal, _, err := c.fullLayout(context.Background(), i, full[:0])
		if err != nil {
			t.Fatalf("container %d: full build: %v", i, err)
		}
		var total int64
		var ok bool
		lean, total, _, ok, err = c.leanLayout(i, lean[:0])
		if err != nil {
			t.Fatal(err)
		}
		switch lerr := leanError(c, i); {
		case !ok && c.major() >= 4 && errors.Is(lerr, decode.ErrUnsupported):
			// CRAM 4.0 is measured by the full build, checked below.
		case !ok:
			t.Fatalf("container %d: the lean pass failed where the full build succeeds (%s)", i, lerr)
		case c.major() >= 4:
			t.Fatalf("container %d: the lean pass measured CRAM %d, which it does not know", i, c.major())
		case total != fullTotal || !slices.Equal(lean, full):
			t.Fatalf("container %d: lean pass gives %d bytes, full build %d; first difference: %s", i, total, fullTotal, firstDiff(lean, full))
		}
		// ScanLayout itself reports the same.
		var got []source.RecordLayout
		scanned, _, err := c.ScanLayout(context.Background(), i, func(r source.RecordLayout) error {
			got = append(got, r)
			return nil
		})
		if err != nil || scanned != fullTotal || !slices.Equal(got, full) {
			t.Fatalf("container %d: ScanLayout gives %d bytes (%v), full build %d", i, scanned, err, fullTotal)
		}
		n += len(full)
	}
	return n
}

// leanError is the lean pass's error on container i, for messages.
func leanError(c *CRAM, i int) error {
	st, err := c.acquire()
	if err != nil {
		return err
	}
	defer c.release(st)
	d := st.f.NewDecoder(st.dopt)
	return d.ContainerShapes(i, func(int, *decode.Shape) error { return nil })
}

func firstDiff(a, b []source.RecordLayout) string {
	for j := range min(len(a), len(b)) {
		if a[j] != b[j] {
			return fmt.Sprintf("record %d: lean %+v, full %+v", j, a[j], b[j])
		}
	}
	return fmt.Sprintf("lean has %d records, full %d", len(a), len(b))
}

// TestScanLayoutLeanFixtures proves the lean layout scan exact: for every
// CRAM of the test fixtures and the corpus that samtools decodes, with and
// without MD/NM generation, each container's records (length, reference,
// span, unmapped flag) and length equal those of the full build.
func TestScanLayoutLeanFixtures(t *testing.T) {
	dirs := []struct{ dir, manifest string }{
		{filepath.Join(corpus.Root(), "testdata"), filepath.Join("cram", "manifest.tsv")},
	}
	if dir := corpus.Dir(t); dir != "" {
		dirs = append(dirs, struct{ dir, manifest string }{dir, "cram_manifest.tsv"})
	}
	for _, d := range dirs {
		for _, e := range corpus.CRAMManifest(t, filepath.Join(d.dir, d.manifest)) {
			if e.RC != "0" || strings.Contains(e.Path, "truncated") {
				continue
			}
			t.Run(e.Path, func(t *testing.T) {
				var fastas []string
				if e.Ref != "" {
					fastas = []string{filepath.Join(d.dir, e.Ref)}
				}
				for _, noMD := range []bool{false, true} {
					compareLeanLayout(t, filepath.Join(d.dir, e.Path), fastas, noMD)
				}
			})
		}
	}
}

// TestScanLayoutLeanBenchData is TestScanLayoutLeanFixtures for every CRAM
// of the benchmark dataset (../shared/bench/make-data.sh) in
// $CRAMFS_BENCH_DATA; it skips when that is not set.
func TestScanLayoutLeanBenchData(t *testing.T) {
	dir := os.Getenv("CRAMFS_BENCH_DATA")
	if dir == "" {
		t.Skip("CRAMFS_BENCH_DATA is not set (see ../shared/bench/make-data.sh)")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.cram"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRAM in %s (%v)", dir, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			n := compareLeanLayout(t, f, []string{filepath.Join(dir, "ref.fa")}, false)
			t.Logf("%d records", n)
		})
	}
}

// BenchmarkScanLayout measures the layout scan of each CRAM of the
// benchmark dataset in $CRAMFS_BENCH_DATA (every container, one goroutine):
// lean is ScanLayout, full the full build it replaces. Bytes are the
// CRAM's.
func BenchmarkScanLayout(b *testing.B) {
	dir := os.Getenv("CRAMFS_BENCH_DATA")
	if dir == "" {
		b.Skip("CRAMFS_BENCH_DATA is not set (see ../shared/bench/make-data.sh)")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.cram"))
	if err != nil || len(files) == 0 {
		b.Fatalf("no CRAM in %s (%v)", dir, err)
	}
	for _, f := range files {
		for _, lean := range []bool{true, false} {
			name := strings.TrimSuffix(filepath.Base(f), ".cram") + "/full"
			if lean {
				name = strings.TrimSuffix(name, "full") + "lean"
			}
			b.Run(name, func(b *testing.B) {
				b.Setenv("CRAMFS_BENCH_CRAM", filepath.Base(f))
				c := benchDataCRAM(b)
				b.SetBytes(c.Stat().Size())
				b.ReportAllocs()
				count := func(source.RecordLayout) error { return nil }
				var recs []source.RecordLayout
				for b.Loop() {
					for i := 0; i < c.NumContainers(); i++ {
						var err error
						if lean {
							_, _, err = c.ScanLayout(context.Background(), i, count)
						} else {
							recs, _, _, err = c.fullLayout(context.Background(), i, recs[:0])
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// TestScanLayoutErrorsAreFullBuilds scans damaged copies of a fixture
// (internal/hostile): where ScanLayout fails, its error is the full
// build's, naming the file and the container once; where the full build
// succeeds, ScanLayout reports its records. Damage to blocks the lean pass
// leaves compressed (qualities, bases) shows only when the container is
// built.
func TestScanLayoutErrorsAreFullBuilds(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata", "cram", "ce_1000.3.0-multislice.cram"))
	if err != nil {
		t.Fatal(err)
	}
	vs, err := hostile.Variants(orig, 5, hostile.Options{PerKind: 40})
	if err != nil {
		t.Fatal(err)
	}
	store, err := reference.Open([]string{filepath.Join(corpus.Root(), "testdata", "ref", "ce.fa")}, reference.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	failed := 0
	for k, v := range vs {
		p := filepath.Join(t.TempDir(), fmt.Sprintf("v%d.cram", k))
		if err := os.WriteFile(p, v.Data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Open(p, Path(p), Options{Reference: store, AllowMissingEOF: true})
		if err != nil {
			continue
		}
		for i := 0; i < c.NumContainers(); i++ {
			var got []source.RecordLayout
			full, fullTotal, _, ferr := c.fullLayout(context.Background(), i, nil)
			total, _, err := c.ScanLayout(context.Background(), i, func(r source.RecordLayout) error { got = append(got, r); return nil })
			if ferr != nil && err == nil {
				continue // damage the lean pass does not read
			}
			if ferr != nil {
				failed++
				if err.Error() != ferr.Error() {
					t.Fatalf("%s: container %d: ScanLayout gives %v, the full build %v", v.Name, i, err, ferr)
				}
				if msg := err.Error(); strings.Count(msg, filepath.Base(p)) != 1 {
					t.Errorf("%s: error %q does not name the file once", v.Name, msg)
				}
				continue
			}
			if err != nil || total != fullTotal || !slices.Equal(got, full) {
				t.Fatalf("%s: container %d: ScanLayout gives %d bytes (%v), the full build %d", v.Name, i, total, err, fullTotal)
			}
		}
		c.Close()
	}
	if failed < 20 {
		t.Fatalf("only %d damaged containers failed to build", failed)
	}
}

// refEdgesSAM writes a reference with runs of N (upper and lower case)
// and a coordinate-sorted SAM of reads over it: matches, mismatches,
// deletions, insertions, skips and soft clips, many across the Ns, where
// the generated MD and NM count the reference's N as a mismatch.
func refEdgesSAM(t *testing.T, dir string) (fasta, sam string) {
	r := rand.New(rand.NewPCG(22, 1))
	base := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = "ACGT"[r.IntN(4)]
		}
		return b
	}
	r1 := base(3000)
	copy(r1[500:], bytes.Repeat([]byte("N"), 60))
	r1[1000] = 'N'
	copy(r1[1500:], "acgtnnacgt")
	r2 := base(400)
	copy(r2[100:], "NNNNN")
	// Lines of 60 bases, so that runs of N cross line ends.
	fasta = filepath.Join(dir, "ref.fa")
	if err := os.WriteFile(fasta, []byte(">r1\n"+wrap(r1, 60)+">r2\n"+wrap(r2, 60)), 0o644); err != nil {
		t.Fatal(err)
	}
	refs := []struct {
		name string
		seq  []byte
	}{{"r1", bytes.ToUpper(r1)}, {"r2", r2}}
	var b strings.Builder
	b.WriteString("@HD\tVN:1.6\tSO:coordinate\n")
	for _, ref := range refs {
		fmt.Fprintf(&b, "@SQ\tSN:%s\tLN:%d\n", ref.name, len(ref.seq))
	}
	n := 0
	for _, ref := range refs {
		L := len(ref.seq)
		pos := 1
		for pos < L-120 {
			pos += r.IntN(8)
			var cig strings.Builder
			var seq []byte
			rp := pos - 1
			match := func(k int) {
				for range k {
					c := ref.seq[rp]
					if c == 'N' || r.IntN(20) == 0 {
						c = "ACGTN"[r.IntN(5)]
					}
					seq = append(seq, c)
					rp++
				}
				fmt.Fprintf(&cig, "%dM", k)
			}
			if r.IntN(5) == 0 {
				k := 1 + r.IntN(5)
				seq = append(seq, base(k)...)
				fmt.Fprintf(&cig, "%dS", k)
			}
			match(5 + r.IntN(30))
			switch x := r.IntN(10); {
			case x < 3:
				k := 1 + r.IntN(8)
				fmt.Fprintf(&cig, "%dD", k)
				rp += k
				match(5 + r.IntN(30))
			case x < 5:
				k := 1 + r.IntN(4)
				seq = append(seq, base(k)...)
				fmt.Fprintf(&cig, "%dI", k)
				match(5 + r.IntN(30))
			case x < 6:
				k := 1 + r.IntN(40)
				fmt.Fprintf(&cig, "%dN", k)
				rp += k
				match(5 + r.IntN(20))
			}
			fmt.Fprintf(&b, "q%d\t0\t%s\t%d\t40\t%s\t*\t0\t0\t%s\t%s\n", n, ref.name, pos, cig.String(), seq, bytes.Repeat([]byte("I"), len(seq)))
			n++
		}
	}
	sam = filepath.Join(dir, "x.sam")
	if err := os.WriteFile(sam, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return fasta, sam
}

// wrap is seq as FASTA lines of n bases.
func wrap(seq []byte, n int) string {
	var b strings.Builder
	for len(seq) > 0 {
		k := min(n, len(seq))
		b.Write(seq[:k])
		b.WriteByte('\n')
		seq = seq[k:]
	}
	return b.String()
}

// TestScanLayoutLeanReferenceN is TestScanLayoutLeanFixtures for CRAMs
// whose reads lie over reference Ns (samtools writes them, 3.0 and 3.1,
// with the reference or embedding it), where the length of each generated
// MD and NM depends on the reference's bases under the matches.
func TestScanLayoutLeanReferenceN(t *testing.T) {
	dir := t.TempDir()
	fasta, sam := refEdgesSAM(t, dir)
	for _, v := range []struct{ name, opt string }{{"3.0", "version=3.0"}, {"3.1", "version=3.1"}, {"embed", "embed_ref=1"}} {
		p := filepath.Join(dir, v.name+".cram")
		cramtest.Samtools(t, "view", "-C", "--output-fmt-option", v.opt, "-T", fasta, "-o", p, sam)
		for _, noMD := range []bool{false, true} {
			if n := compareLeanLayout(t, p, []string{fasta}, noMD); n < 100 {
				t.Fatalf("%s: %d records", v.name, n)
			}
		}
	}
	// Multi-reference slices (scramble -M makes every slice one), whose
	// records are measured against a window of the reference that moves.
	scr, err := exec.LookPath("scramble")
	if err != nil {
		corpus.Missing(t, "scramble: %v", err)
	}
	multi := filepath.Join(dir, "multi.cram")
	cmd := exec.Command(scr, "-r", fasta, "-O", "cram", "-s", "40", "-M", sam, multi)
	cmd.Env = corpus.NoRefEnv(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scramble: %v\n%s", err, out)
	}
	for _, noMD := range []bool{false, true} {
		if n := compareLeanLayout(t, multi, []string{fasta}, noMD); n < 100 {
			t.Fatalf("multi: %d records", n)
		}
	}
	// With the reference embedded, a FASTA whose r2 is shorter than its
	// @SQ line only shortens r2 for MD and NM (htslib's length
	// sanitising): matches and deletions run past its end.
	fa, err := os.ReadFile(fasta)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(fa, []byte(">r2\n"))
	short := filepath.Join(dir, "short.fa")
	if err := os.WriteFile(short, append(fa[:i+4:i+4], fa[i+4:i+4+250]...), 0o644); err != nil {
		t.Fatal(err)
	}
	compareLeanLayout(t, filepath.Join(dir, "embed.cram"), []string{short}, false)
}

// major is the CRAM major version of c's file.
func (c *CRAM) major() int {
	st, err := c.acquire()
	if err != nil {
		return 0
	}
	defer c.release(st)
	return st.f.Def.Major
}

// TestScanLayoutLeanReferenceMD5: the lean pass checks each slice's
// reference MD5 against the bases it reads in place. With a reference
// whose r1 differs by one base, it fails with the full decode's error
// (ErrReference, the same message); with the reference all in lower case
// (uppercased for the MD5, its 'n's still Ns), it measures every
// container as the full build does.
func TestScanLayoutLeanReferenceMD5(t *testing.T) {
	dir := t.TempDir()
	fasta, sam := refEdgesSAM(t, dir)
	p := filepath.Join(dir, "x.cram")
	cramtest.Samtools(t, "view", "-C", "-T", fasta, "-o", p, sam)
	fa, err := os.ReadFile(fasta)
	if err != nil {
		t.Fatal(err)
	}
	lower := filepath.Join(dir, "lower.fa")
	if err := os.WriteFile(lower, bytes.ToLower(fa), 0o644); err != nil {
		t.Fatal(err)
	}
	if n := compareLeanLayout(t, p, []string{lower}, false); n < 100 {
		t.Fatalf("lower case: %d records", n)
	}
	// Base 2000 of r1 (60-base lines), far from its Ns, changed.
	wrong := bytes.Clone(fa)
	i := bytes.Index(wrong, []byte(">r1\n")) + 4 + 2000/60*61 + 2000%60
	if wrong[i] == 'A' {
		wrong[i] = 'C'
	} else {
		wrong[i] = 'A'
	}
	bad := filepath.Join(dir, "wrong.fa")
	if err := os.WriteFile(bad, wrong, 0o644); err != nil {
		t.Fatal(err)
	}
	store, err := reference.Open([]string{bad}, reference.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c, err := Open(p, Path(p), Options{Reference: store})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	failed := 0
	for i := 0; i < c.NumContainers(); i++ {
		lerr := leanError(c, i)
		_, _, _, ferr := c.fullLayout(context.Background(), i, nil)
		if (lerr == nil) != (ferr == nil) || lerr != nil && !strings.Contains(ferr.Error(), lerr.Error()) {
			t.Fatalf("container %d: lean pass %v, full build %v", i, lerr, ferr)
		}
		if lerr != nil {
			if !errors.Is(lerr, decode.ErrReference) {
				t.Fatalf("container %d: %v does not wrap ErrReference", i, lerr)
			}
			failed++
		}
	}
	if failed == 0 {
		t.Fatal("no container failed its reference MD5")
	}
}
