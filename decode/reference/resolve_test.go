package reference

import (
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestResolveThroughUR checks that an @SQ line's UR: field is followed to
// a local FASTA (a path or a file: URL), shared between lookups, and that
// every way it can fail says why in a MissingError.
func TestResolveThroughUR(t *testing.T) {
	dir := t.TempDir()
	fa := write(t, filepath.Join(dir, "my ref.fa"), ">chrA desc\nACGTACGTAC\nGT\n>chrB\nTTTT\n")
	s := open(t, nil, Options{})
	fileURL := (&url.URL{Scheme: "file", Path: fa}).String() // spaces escaped
	for _, ur := range []string{fa, fileURL, "file://localhost" + (&url.URL{Path: fa}).EscapedPath()} {
		c, err := s.Resolve(SQ{Name: "chrA", Length: 12, M5: md5hex("ACGTACGTACGT"), UR: ur})
		if err != nil {
			t.Fatalf("UR:%s: %v", ur, err)
		}
		got, err := c.Bases(nil, 0, c.Len())
		if err != nil || string(got) != "ACGTACGTACGT" || c.Path() != fa {
			t.Errorf("UR:%s: bases %q of %s, %v", ur, got, c.Path(), err)
		}
	}
	a, _ := s.Resolve(SQ{Name: "chrB", Length: 4, UR: fa})
	b, _ := s.Resolve(SQ{Name: "chrB", Length: 4, UR: fileURL})
	if a == nil || a != b {
		t.Errorf("the UR: file was not shared: %p %p", a, b)
	}

	for _, tc := range []struct {
		name string
		q    SQ
		err  error
		want []string
	}{
		{"missing file", SQ{Name: "chrA", Length: 12, UR: filepath.Join(dir, "nope.fa")}, ErrNotFound, []string{"nope.fa: no such file", "no -T FASTA given"}},
		{"no such contig", SQ{Name: "chrZ", Length: 12, UR: fa}, ErrNotFound, []string{"has no contig chrZ"}},
		{"other length", SQ{Name: "chrA", Length: 13, UR: fa}, ErrMismatch, []string{"chrA in UR:" + fa + " has 12 bases", "does not match"}},
		{"network", SQ{Name: "chrA", Length: 12, UR: "https://example.org/ref.fa"}, ErrNotFound, []string{"never reads a reference over a network"}},
		{"ftp", SQ{Name: "chrA", Length: 12, UR: "ftp://example.org/ref.fa"}, ErrNotFound, []string{"network"}},
		{"other host", SQ{Name: "chrA", Length: 12, UR: "file://elsewhere" + fa}, ErrNotFound, []string{"host elsewhere"}},
		{"no UR", SQ{Name: "chrA", Length: 12, M5: md5hex("ACGTACGTACGT")}, ErrNotFound, []string{"REF_CACHE and REF_PATH not set"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := s.Resolve(tc.q)
			var me *MissingError
			if !errors.As(err, &me) || !errors.Is(err, tc.err) {
				t.Fatalf("Resolve = %v, %v; want a MissingError wrapping %v", c, err, tc.err)
			}
			if me.Name != tc.q.Name {
				t.Errorf("MissingError names %q", me.Name)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

// TestResolveOrder checks htslib's order: a -T contig of that name first,
// whatever its MD5, and before any M5-named file; M5-named files (REF_CACHE
// before REF_PATH, the first found whatever its content) before the UR:
// file, for names the -T files lack.
func TestResolveOrder(t *testing.T) {
	dir := t.TempDir()
	seq := "ACGTTGCA"
	m5 := md5hex(seq)
	ur := write(t, filepath.Join(dir, "ur.fa"), ">c\n"+seq+"\n")
	m5dir := filepath.Join(dir, "m5")
	write(t, filepath.Join(m5dir, m5), seq)
	s := open(t, nil, Options{RefPath: m5dir})
	c, err := s.Resolve(SQ{Name: "c", Length: 8, M5: m5, UR: ur})
	if err != nil || c.Path() != filepath.Join(m5dir, m5) {
		t.Errorf("Resolve = %v, %v; want the REF_PATH file before the UR: file", c, err)
	}

	other := write(t, filepath.Join(dir, "t.fa"), ">c\nTTTTTTTT\n>alias\n"+seq+"\n")
	s = open(t, []string{other}, Options{RefPath: m5dir, RefCache: m5dir})
	c, err = s.Resolve(SQ{Name: "c", Length: 8, M5: m5, UR: ur})
	if err != nil || c.Path() != other || c.Name() != "c" {
		t.Errorf("Resolve = %v, %v; want the -T contig c before the M5-named file and UR:", c, err)
	}
	c, err = s.Resolve(SQ{Name: "d", Length: 8, M5: m5})
	if err != nil || c.Path() != filepath.Join(m5dir, m5) {
		t.Errorf("Resolve = %v, %v; want the M5-named file for a name -T lacks, not the -T contig alias", c, err)
	}

	// The first M5-named file found is the one used: REF_CACHE's, of
	// other content, is refused, not passed over for REF_PATH's.
	cache := filepath.Join(dir, "cache")
	write(t, filepath.Join(cache, m5), "GGGGGGGG")
	s = open(t, nil, Options{RefPath: m5dir, RefCache: cache})
	c, err = s.Resolve(SQ{Name: "c", Length: 8, M5: m5, UR: filepath.Join(dir, "gone.fa")})
	var me *MissingError
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "the M5-named file "+filepath.Join(cache, m5)+" (REF_CACHE) has M5 "+md5hex("GGGGGGGG")) ||
		!errors.As(err, &me) || me.WrongM5File != (Origin{filepath.Join(cache, m5), ViaRefCache}) {
		t.Errorf("Resolve = %v, %v; want ErrMismatch naming the REF_CACHE file", c, err)
	}
}
