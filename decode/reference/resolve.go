package reference

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
)

// SQ is what an @SQ header line says about a reference sequence (SAMv1
// §1.3: SN, LN, M5, UR).
type SQ struct {
	Name   string
	Length int64
	M5     string // "" when the line has none
	UR     string // "" when the line has none
}

// MissingError says that no usable sequence was found for an @SQ line,
// and what was tried. It wraps ErrNotFound, or ErrMismatch when sequences
// of that name were found with another MD5 or length.
type MissingError struct {
	SQ
	Tried []string // one clause per place looked in, saying what was found
	Err   error
}

func (e *MissingError) Error() string {
	what := "not found"
	if errors.Is(e.Err, ErrMismatch) {
		what = "does not match"
	}
	m5 := e.M5
	if m5 == "" {
		m5 = "none"
	}
	return fmt.Sprintf("reference %s (M5 %s, %d bases) %s: %s", e.Name, m5, e.Length, what, strings.Join(e.Tried, "; "))
}

func (e *MissingError) Unwrap() error { return e.Err }

// urFasta is a FASTA file named by an @SQ UR: field, mapped on first use
// and shared by every CRAM file naming it.
type urFasta struct {
	m      *mapping // nil when it could not be mapped
	byName map[string]*Contig
	err    error // why it could not be used
}

// Resolve finds the sequence for an @SQ line the way htslib 1.16 does
// without a network: the -T FASTA contigs (by name, checked by M5 when
// that contig could be confused with another, else by the slice MD5s the
// decoder checks), the M5-named files of REF_CACHE and REF_PATH, then the
// FASTA file that UR: names when it is a local path or a file: URL, and
// finally, as htslib does with -T, the FASTA contig of that name whatever
// its MD5 (the slice MD5s still guard every base used). The error is a
// *MissingError.
func (s *Store) Resolve(q SQ) (*Contig, error) {
	if c := s.Unambiguous(q.Name, q.Length); c != nil {
		return c, nil
	}
	c, err := s.Lookup(q.Name, q.Length, q.M5)
	if err == nil {
		return c, nil
	}
	if errors.Is(err, ErrClosed) || errors.Is(err, ErrUnsupported) {
		return nil, err
	}
	mismatch := errors.Is(err, ErrMismatch)
	tried := []string{s.fastaClause(q), s.m5Clause(q)}
	if q.UR != "" {
		c, clause, bad := s.fromUR(q)
		if c != nil {
			return c, nil
		}
		mismatch = mismatch || bad
		tried = append(tried, clause)
	}
	if cs := s.byName[q.Name]; len(cs) > 0 {
		return cs[0], nil
	}
	me := &MissingError{SQ: q, Tried: tried, Err: ErrNotFound}
	if mismatch {
		me.Err = ErrMismatch
	}
	return nil, me
}

// fastaClause says what the -T FASTA files hold under q's name.
func (s *Store) fastaClause(q SQ) string {
	if len(s.maps) == 0 {
		return "no -T FASTA given"
	}
	cs := s.byName[q.Name]
	if len(cs) == 0 {
		return fmt.Sprintf("no contig %s in the -T FASTA files", q.Name)
	}
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s in %s has %d bases and M5 %s", c.name, c.m.path, c.length, c.MD5()))
	}
	return strings.Join(parts, ", ")
}

// m5Clause says where M5-named files were looked for.
func (s *Store) m5Clause(q SQ) string {
	if !isMD5(strings.ToLower(q.M5)) {
		return "no M5 to look up in REF_CACHE or REF_PATH"
	}
	var where []string
	if s.cache != "" {
		where = append(where, "REF_CACHE "+s.cache)
	}
	if len(s.path) > 0 {
		where = append(where, "REF_PATH "+strings.Join(s.path, ":"))
	}
	if len(where) == 0 {
		return "REF_CACHE and REF_PATH not set"
	}
	return "no file named by the M5 under " + strings.Join(where, " or ")
}

// fromUR looks q up in the FASTA file its UR: names. It returns the contig,
// or a clause saying why not and whether a contig of that name mismatched.
func (s *Store) fromUR(q SQ) (*Contig, string, bool) {
	path, why := urPath(q.UR)
	if path == "" {
		return nil, fmt.Sprintf("UR:%s %s", q.UR, why), false
	}
	u, err := s.urFasta(path)
	if err != nil {
		return nil, fmt.Sprintf("UR:%s: %v", q.UR, err), false
	}
	if u.err != nil {
		return nil, fmt.Sprintf("UR:%s: %v", q.UR, u.err), false
	}
	c := u.byName[q.Name]
	switch {
	case c == nil:
		return nil, fmt.Sprintf("UR:%s has no contig %s", q.UR, q.Name), false
	case q.Length > 0 && c.length != q.Length:
		return nil, fmt.Sprintf("%s in UR:%s has %d bases", q.Name, q.UR, c.length), true
	}
	// The name and length match: as with -T, the slice MD5s check every
	// base used, so the whole contig is not hashed here.
	return c, "", false
}

// urFasta returns the FASTA file at path, mapping and indexing it on
// first use. Its error is that of a closed Store; a file that cannot be
// read is remembered in urFasta.err.
func (s *Store) urFasta(path string) (*urFasta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w: reading %s", ErrClosed, path)
	}
	if u, ok := s.byUR[path]; ok {
		return u, nil
	}
	u := &urFasta{byName: map[string]*Contig{}}
	m, contigs, err := loadFasta(path)
	u.m = m
	if err != nil {
		u.err = unwrapPathError(err)
	}
	for _, c := range contigs {
		if _, dup := u.byName[c.name]; !dup {
			u.byName[c.name] = c
		}
	}
	s.byUR[path] = u
	return u, nil
}

// unwrapPathError shortens "reference FASTA: open /x: no such file or
// directory" to "no such file or directory": the caller names the file.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// urPath returns the local file an @SQ UR: value names: a path as it is
// (relative ones from the current directory, as htslib), or the path of a
// file: URL on no host or localhost. For anything else it returns "" and
// why it is not read: nothing is fetched from a network.
func urPath(ur string) (path, why string) {
	if !strings.HasPrefix(ur, "file:") {
		if i := strings.Index(ur, "://"); i > 0 && isScheme(ur[:i]) {
			return "", "is not a local file (cramfs never reads a reference over a network)"
		}
		return ur, ""
	}
	u, err := url.Parse(ur)
	if err != nil {
		return "", fmt.Sprintf("is not a valid file: URL (%v)", err)
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Sprintf("names a file on host %s, not a local file", u.Host)
	}
	p := u.Path
	if p == "" {
		p = u.Opaque // file:relative/path
	}
	if p == "" {
		return "", "names no file"
	}
	return p, ""
}

// isScheme reports whether s is a URL scheme (RFC 3986 §3.1).
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
		case i > 0 && (c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return false
		}
	}
	return s != ""
}
