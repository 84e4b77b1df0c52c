package reference

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// md5hex is the SAM M5 of an already uppercased sequence without blanks.
func md5hex(s string) string {
	h := md5.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

func write(t testing.TB, path, content string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// resolve is Resolve of an @SQ line without UR:.
func resolve(s *Store, name string, length int64, m5 string) (*Contig, error) {
	return s.Resolve(SQ{Name: name, Length: length, M5: m5})
}

func open(t testing.TB, fastas []string, opts Options) *Store {
	t.Helper()
	opts.NoEnv = true
	s, err := Open(fastas, opts)
	if err != nil {
		t.Fatalf("Open(%v): %v", fastas, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// irregular is a FASTA whose lines change length within contigs, with
// lowercase bases, CRLF line ends, an empty contig and no final newline.
const irregular = ">one first contig\n" +
	"ACGTacgt\n" +
	"ACGTACGT\n" +
	"NNn\n" +
	"GGGGGGGGGGGG\n" +
	"TT\n" +
	"\n" +
	"ca\n" +
	">two\r\n" +
	"acgta\r\n" +
	"CCCCC\r\n" +
	"GG\r\n" +
	">empty\n" +
	">three\n" +
	"A\n" +
	"CC\n" +
	"GGG"

var irregularSeqs = map[string]string{
	"one":   "ACGTACGTACGTACGTNNNGGGGGGGGGGGGTTCA",
	"two":   "ACGTACCCCCGG",
	"empty": "",
	"three": "ACCGGG",
}

func TestIrregularFastaWithoutFai(t *testing.T) {
	dir := t.TempDir()
	fa := write(t, filepath.Join(dir, "irr.fa"), irregular)
	s := open(t, []string{fa}, Options{})
	if _, err := os.Stat(fa + ".fai"); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open wrote or found %s.fai: %v", fa, err)
	}
	if got := len(s.Contigs()); got != len(irregularSeqs) {
		t.Fatalf("%d contigs, want %d", got, len(irregularSeqs))
	}
	for name, want := range irregularSeqs {
		c, err := resolve(s, name, int64(len(want)), "")
		if err != nil {
			t.Fatalf("Resolve(%s): %v", name, err)
		}
		if c.Len() != int64(len(want)) {
			t.Errorf("%s: Len %d, want %d", name, c.Len(), len(want))
		}
		// Every sub-range, including empty ones.
		for start := 0; start <= len(want); start++ {
			for end := start; end <= len(want); end++ {
				got, err := c.Bases([]byte("x"), int64(start), int64(end))
				if err != nil {
					t.Fatalf("%s.Bases(%d,%d): %v", name, start, end, err)
				}
				if string(got) != "x"+want[start:end] {
					t.Fatalf("%s.Bases(%d,%d) = %q, want %q", name, start, end, got[1:], want[start:end])
				}
			}
		}
		if got := c.MD5(); got != md5hex(want) {
			t.Errorf("%s: MD5 %s, want %s", name, got, md5hex(want))
		}
		// Found again by its M5.
		if c2, err := resolve(s, name, int64(len(want)), strings.ToUpper(md5hex(want))); err != nil || c2 != c {
			t.Errorf("Resolve(%s) by M5: %v, %v", name, c2, err)
		}
	}
}

// sqLines reads the @SQ lines (name, length, M5) that samtools wrote into a
// fixture's expected SAM.
func sqLines(t *testing.T, samPath string) [][3]string {
	t.Helper()
	f, err := os.Open(samPath)
	if err != nil {
		corpus.Missing(t, "fixture %s: %v", samPath, err)
	}
	defer f.Close()
	var out [][3]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "@SQ\t") {
			continue
		}
		var sq [3]string
		for _, f := range strings.Split(line, "\t")[1:] {
			switch {
			case strings.HasPrefix(f, "SN:"):
				sq[0] = f[3:]
			case strings.HasPrefix(f, "LN:"):
				sq[1] = f[3:]
			case strings.HasPrefix(f, "M5:"):
				sq[2] = f[3:]
			}
		}
		out = append(out, sq)
	}
	return out
}

// TestFixtureFaiAndScanAgree checks the bundled ce.fa read through its .fai
// and through an in-memory index (a copy without .fai): same bases, and
// MD5s equal to the M5 tags samtools put in the fixtures.
func TestFixtureFaiAndScanAgree(t *testing.T) {
	ref := filepath.Join(corpus.Root(), "testdata", "ref", "ce.fa")
	data, err := os.ReadFile(ref)
	if err != nil {
		corpus.Missing(t, "fixture %s: %v", ref, err)
	}
	noFai := write(t, filepath.Join(t.TempDir(), "ce.fa"), string(data))
	withFai := open(t, []string{ref}, Options{})
	scanned := open(t, []string{noFai}, Options{})
	sq := sqLines(t, filepath.Join(corpus.Root(), "testdata", "cram", "ce_unmap2.3.0.expected.sam"))
	if len(sq) != 7 {
		t.Fatalf("fixture has %d @SQ lines, want 7", len(sq))
	}
	for _, l := range sq {
		n, _ := strconv.ParseInt(l[1], 10, 64)
		a, err := resolve(withFai, l[0], n, l[2])
		if err != nil {
			t.Fatalf("with .fai: %v", err)
		}
		b, err := resolve(scanned, l[0], n, l[2])
		if err != nil {
			t.Fatalf("scanned: %v", err)
		}
		if a.Path() != ref || b.Path() != noFai {
			t.Errorf("%s: paths %s, %s", l[0], a.Path(), b.Path())
		}
		for _, r := range [][2]int64{{0, n}, {0, 1}, {n - 1, n}, {49, 51}, {n / 3, n/3 + 777}} {
			x, err := a.Bases(nil, r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			y, err := b.Bases(nil, r[0], r[1])
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(x, y) || int64(len(x)) != r[1]-r[0] {
				t.Fatalf("%s %v: .fai and scan differ (%d vs %d bytes)", l[0], r, len(x), len(y))
			}
			if bytes.ContainsAny(x, "\nacgtn") {
				t.Fatalf("%s %v: line ends or lowercase in output", l[0], r)
			}
		}
	}
}

func TestRefPathAndCache(t *testing.T) {
	dir := t.TempDir()
	seq := "ACGTNACGTNGGGCCCAAATTT"
	m5 := md5hex(seq)
	// Lowercase and a final newline are tolerated in an M5 file.
	write(t, filepath.Join(dir, "path", m5[:2], m5[2:4], m5[4:]), strings.ToLower(seq)+"\n")
	cacheSeq := "TTTTGGGG"
	cm5 := md5hex(cacheSeq)
	write(t, filepath.Join(dir, "cache", cm5[:2], cm5[2:]), cacheSeq)
	fa := write(t, filepath.Join(dir, "x.fa"), ">x\nAC\n")

	tests := []struct {
		name, refPath, refCache string
		m5, want                string
		wantErr                 error
	}{
		{"pattern %2s/%2s/%s", dir + "/absent:" + dir + "/path/%2s/%2s/%s", "", m5, seq, nil},
		{"URL elements ignored", "http://example.invalid:8080/%s:https://example.invalid/x/%s:" + dir + "/path/%2s/%2s/%s:ftp://h/%s", "", m5, seq, nil},
		{"pattern without rest", "URL=http://example.invalid/%s:" + dir + "/path/%2s/%2s", "", m5, seq, nil},
		{"cache %2s/%s", "", dir + "/cache/%2s/%s", cm5, cacheSeq, nil},
		{"cache first, then path", dir + "/path/%2s/%2s/%s", dir + "/cache/%2s/%s", m5, seq, nil},
		{"plain directory misses", dir + "/path", "", m5, "", ErrNotFound},
		{"nothing configured", "", "", m5, "", ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t, []string{fa}, Options{RefPath: tt.refPath, RefCache: tt.refCache})
			c, err := resolve(s, "chrQ", int64(len(tt.want)), tt.m5)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Resolve: %v, want %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), "chrQ") || !strings.Contains(err.Error(), tt.m5) {
					t.Errorf("error %q does not name the contig and M5", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			got, err := c.Bases(nil, 0, c.Len())
			if err != nil || string(got) != tt.want {
				t.Fatalf("Bases = %q, %v; want %q", got, err, tt.want)
			}
			if c.MD5() != tt.m5 {
				t.Errorf("MD5 %s, want %s", c.MD5(), tt.m5)
			}
			again, err := resolve(s, "other", 0, tt.m5)
			if err != nil || again != c {
				t.Errorf("second Resolve: %p %v, want the cached %p", again, err, c)
			}
		})
	}
}

func TestEnvironmentDefaults(t *testing.T) {
	dir := t.TempDir()
	seq := "GATTACA"
	m5 := md5hex(seq)
	write(t, filepath.Join(dir, m5[:2], m5[2:]), seq)
	t.Setenv("REF_PATH", "")
	t.Setenv("REF_CACHE", dir+"/%2s/%s")
	s, err := Open(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := resolve(s, "g", 7, m5); err != nil {
		t.Fatalf("REF_CACHE from the environment: %v", err)
	}
	s2, err := Open(nil, Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if _, err := resolve(s2, "g", 7, m5); !errors.Is(err, ErrNotFound) {
		t.Fatalf("NoEnv: %v, want ErrNotFound", err)
	}
}

// TestResolveOutcomes checks what an @SQ line resolves to, as in htslib:
// the -T contig of that name whatever its M5 and length, M5-named files
// only for names the -T files lack, and never another -T contig, not even
// one with the M5.
func TestResolveOutcomes(t *testing.T) {
	dir := t.TempDir()
	fa := write(t, filepath.Join(dir, "a.fa"), ">chr1\nACGTACGT\n>alias\nCCCCGGGG\n>chr2\nTTTT\n")
	bad := "AAAACCCC"
	badM5 := md5hex(bad)
	// An M5-named file whose content is something else.
	write(t, filepath.Join(dir, "m5", badM5), "TTTTTTTT")
	s := open(t, []string{fa}, Options{RefPath: filepath.Join(dir, "m5")})

	tests := []struct {
		name    string
		sqName  string
		length  int64
		m5      string
		want    string // contig name found
		wantErr error
	}{
		{"by name", "chr1", 8, "", "chr1", nil},
		{"by name, no length", "chr2", 0, "", "chr2", nil},
		{"by name and M5", "chr1", 8, md5hex("ACGTACGT"), "chr1", nil},
		{"by name, other M5", "chr2", 4, md5hex("TTTA"), "chr2", nil},
		{"by name, another contig has the M5", "chr1", 8, md5hex("CCCCGGGG"), "chr1", nil},
		{"by name, other length", "chr2", 5, "", "chr2", nil},
		{"no -T contig of the name, another has the M5", "1", 8, md5hex("CCCCGGGG"), "", ErrNotFound},
		{"M5 file with other content", "chrX", 8, badM5, "", ErrMismatch},
		{"missing", "chrZ", 10, md5hex("ACGTACGTAC"), "", ErrNotFound},
		{"missing without M5", "chrZ", 10, "", "", ErrNotFound},
		{"malformed M5", "chrZ", 8, "../../etc/passwd", "", ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := resolve(s, tt.sqName, tt.length, tt.m5)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Resolve: %v, %v; want %v", c, err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.sqName) {
					t.Errorf("error %q does not name %s", err, tt.sqName)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if c.Name() != tt.want || c.Path() != fa {
				t.Fatalf("found %s of %s, want %s of %s", c.Name(), c.Path(), tt.want, fa)
			}
		})
	}
}

func TestBasesRange(t *testing.T) {
	fa := write(t, filepath.Join(t.TempDir(), "r.fa"), ">r\nACGTA\nCG\n")
	s := open(t, []string{fa}, Options{})
	c, err := resolve(s, "r", 7, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range [][2]int64{{-1, 2}, {0, 8}, {7, 8}, {5, 4}, {8, 8}} {
		got, err := c.Bases([]byte("keep"), r[0], r[1])
		if !errors.Is(err, ErrOutOfRange) {
			t.Errorf("Bases(%d,%d): %v, want ErrOutOfRange", r[0], r[1], err)
		}
		if string(got) != "keep" {
			t.Errorf("Bases(%d,%d) changed dst to %q", r[0], r[1], got)
		}
	}
	if got, err := c.Bases(nil, 7, 7); err != nil || len(got) != 0 {
		t.Errorf("Bases(7,7) = %q, %v", got, err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	gz := write(t, filepath.Join(dir, "g.fa.gz"), "\x1f\x8b\x08\x04rest")
	fa := write(t, filepath.Join(dir, "s.fa"), ">s\nACGT\nACGT\nAC\n")
	stale := write(t, filepath.Join(dir, "stale.fa"), ">s\nACGT\nACGT\nAC\n")
	write(t, stale+".fai", "s\t10\t3\t3\t4\n")
	short := write(t, filepath.Join(dir, "short.fa"), ">s\nACGT\n")
	write(t, short+".fai", "s\t100\t3\t4\t5\n")
	fq := write(t, filepath.Join(dir, "q.fa"), ">s\nACGT\n")
	write(t, fq+".fai", "s\t4\t3\t4\t5\t10\n")
	junk := write(t, filepath.Join(dir, "junk.fa"), "ACGT\n>s\nAC\n")
	space := write(t, filepath.Join(dir, "space.fa"), ">s\nAC GT\n")
	tests := []struct {
		name  string
		files []string
		want  error
	}{
		{"bgzip FASTA", []string{gz}, ErrUnsupported},
		{"missing file", []string{filepath.Join(dir, "nope.fa")}, os.ErrNotExist},
		{"stale fai", []string{stale}, ErrCorrupt},
		{"fai past the end", []string{short}, ErrCorrupt},
		{"FASTQ fai", []string{fq}, ErrUnsupported},
		{"sequence before header", []string{junk}, ErrCorrupt},
		{"blank inside a line", []string{space}, ErrCorrupt},
		{"good then bad", []string{fa, gz}, ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(tt.files, Options{NoEnv: true})
			if !errors.Is(err, tt.want) {
				if s != nil {
					s.Close()
				}
				t.Fatalf("Open: %v, want %v", err, tt.want)
			}
		})
	}
}

func TestCloseAndConcurrency(t *testing.T) {
	fa := write(t, filepath.Join(t.TempDir(), "c.fa"), irregular)
	s, err := Open([]string{fa}, Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	c, err := resolve(s, "one", 0, "")
	if err != nil {
		t.Fatal(err)
	}
	want := irregularSeqs["one"]
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for i := 0; i < 200; i++ {
				var err error
				buf, err = c.Bases(buf[:0], int64(i%10), int64(len(want)))
				if err != nil || string(buf) != want[i%10:] {
					errs <- err
					return
				}
				if c.MD5() != md5hex(want) {
					errs <- errors.New("MD5 differs")
					return
				}
				if _, err := resolve(s, "two", 0, md5hex(irregularSeqs["two"])); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent use: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := c.Bases(nil, 0, 1); !errors.Is(err, ErrClosed) {
		t.Errorf("Bases after Close: %v, want ErrClosed", err)
	}
	if _, err := resolve(s, "one", 0, ""); !errors.Is(err, ErrClosed) {
		t.Errorf("Resolve after Close: %v, want ErrClosed", err)
	}
}

func TestExpandM5(t *testing.T) {
	const m5 = "0123456789abcdef0123456789abcdef"
	tests := []struct{ tmpl, want string }{
		{"/ref/%2s/%2s/%s", "/ref/01/23/456789abcdef0123456789abcdef"},
		{"/ref/%s", "/ref/" + m5},
		{"/ref", "/ref/" + m5},
		{"/ref/", "/ref/" + m5},
		{"/ref/%2s", "/ref/01/23456789abcdef0123456789abcdef"},
		{"/ref/%2s/%2s/", "/ref/01/23/456789abcdef0123456789abcdef"},
		{"/ref/%40s.fa", "/ref/" + m5 + ".fa"},
		{"/ref/%x/%%/%s", "/ref/%x/%%/" + m5},
		{"/ref/%0s", "/ref/" + m5},
	}
	for _, tt := range tests {
		if got := expandM5(tt.tmpl, m5); got != tt.want {
			t.Errorf("expandM5(%q) = %q, want %q", tt.tmpl, got, tt.want)
		}
	}
}

func TestSplitRefPath(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"/a:/b", []string{"/a", "/b"}},
		{"/a::b:/c", []string{"/a:b", "/c"}},
		{"::/a", []string{":/a"}},
		{"/a::::/c", []string{"/a::/c"}},
		{"http://h/%s:/a", []string{"/a"}},
		{"https://h:8080/x/%s:/a:ftp://h/%s", []string{"/a"}},
		{"/a:URL=http://h/%s:|/b", []string{"/a", "/b"}},
		{"|http://h/%s:/a", []string{"/a"}},
		{":/a::", []string{"/a:"}},
		{"/a:::/b", []string{"/a:", "/b"}},
	}
	for _, tt := range tests {
		got := splitRefPath(tt.in)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("splitRefPath(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func BenchmarkBases(b *testing.B) {
	ref := filepath.Join(corpus.Root(), "testdata", "ref", "ce.fa")
	if _, err := os.Stat(ref); err != nil {
		corpus.Missing(b, "fixture %s: %v", ref, err)
	}
	s := open(b, []string{ref}, Options{})
	c, err := resolve(s, "CHROMOSOME_I", 1009800, "")
	if err != nil {
		b.Fatal(err)
	}
	const window = 10000
	buf := make([]byte, 0, window)
	b.SetBytes(window)
	b.ReportAllocs()
	b.ResetTimer()
	start := int64(0)
	for i := 0; i < b.N; i++ {
		if start+window > c.Len() {
			start = 0
		}
		buf, err = c.Bases(buf[:0], start, start+window)
		if err != nil {
			b.Fatal(err)
		}
		start += 7919
	}
}

func BenchmarkMD5(b *testing.B) {
	ref := filepath.Join(corpus.Root(), "testdata", "ref", "ce.fa")
	if _, err := os.Stat(ref); err != nil {
		corpus.Missing(b, "fixture %s: %v", ref, err)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := open(b, []string{ref}, Options{})
		c, err := resolve(s, "CHROMOSOME_I", 1009800, "")
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(c.Len())
		b.StartTimer()
		if c.MD5() != "8ede36131e0dbf3417807e48f77f3ebd" {
			b.Fatal("wrong MD5")
		}
	}
}

// TestUpper uppercases in place (copyUpper with dst src), as the scan
// does: every byte value at every position of an 8-byte word and its
// tail, and of a 32-byte vector step and its overlapping tail.
func TestUpper(t *testing.T) {
	for _, n := range []int{11, 40} {
		for pos := 0; pos < n; pos++ {
			for c := 0; c < 256; c++ {
				b := bytes.Repeat([]byte{'A'}, n)
				b[pos] = byte(c)
				copyUpper(b, b)
				want := byte(c)
				if want >= 'a' && want <= 'z' {
					want -= 'a' - 'A'
				}
				if b[pos] != want || bytes.Count(b, []byte{'A'}) < n-1 {
					t.Fatalf("upper: byte 0x%02x at %d of %d became 0x%02x", c, pos, n, b[pos])
				}
			}
		}
	}
}

// TestFastaContigByName checks which -T contig a name resolves to: the
// first of each file; of several files', the one with the M5, else the
// first file's; and that a name in one file alone costs no MD5.
func TestFastaContigByName(t *testing.T) {
	dir := t.TempDir()
	a := write(t, filepath.Join(dir, "a.fa"), ">chr1\nACGTACGT\n>dup\nAC\n>rep\nAA\n>rep\nCC\n")
	b := write(t, filepath.Join(dir, "b.fa"), ">dup\nGG\n>rep\nTT\n")
	s := open(t, []string{a, b}, Options{})
	for _, tt := range []struct {
		name, m5   string
		want, path string // bases of the contig found, and its file
	}{
		{"chr1", md5hex("TTTTTTTT"), "ACGTACGT", a},
		{"chr1", "", "ACGTACGT", a},
		{"dup", md5hex("GG"), "GG", b},
		{"dup", md5hex("AC"), "AC", a},
		{"dup", md5hex("TT"), "AC", a},
		{"dup", "", "AC", a},
		{"rep", md5hex("CC"), "AA", a}, // CC is a's second rep: not a candidate
		{"rep", md5hex("TT"), "TT", b},
	} {
		c, err := resolve(s, tt.name, 0, tt.m5)
		if err != nil {
			t.Fatalf("Resolve(%s, M5 %q): %v", tt.name, tt.m5, err)
		}
		if tt.name == "chr1" && c.md5 != "" {
			t.Errorf("Resolve(chr1, M5 %q) hashed the contig", tt.m5)
		}
		got, err := c.Bases(nil, 0, c.Len())
		if err != nil || string(got) != tt.want || c.Path() != tt.path {
			t.Errorf("Resolve(%s, M5 %q) = %q of %s, %v; want %q of %s", tt.name, tt.m5, got, c.Path(), err, tt.want, tt.path)
		}
	}
}
