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
// and what was tried. It wraps ErrNotFound, or ErrMismatch when the
// M5-named file found has another MD5 or the UR: FASTA's contig another
// length.
type MissingError struct {
	SQ
	Tried []string // one clause per place looked in, saying what was found
	// WrongM5File is the M5-named file found whose content has another
	// MD5, the zero Origin for none.
	WrongM5File Origin
	Err         error
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

// Resolve finds the sequence for an @SQ line as htslib 1.16 does without
// a network (refs_load_fai, cram_get_ref, cram_populate_ref):
//
//   - a contig of that name in the -T FASTA files, whatever its MD5 and
//     length: htslib takes the -T contigs by name and checks nothing more,
//     so an M5-named file is never used instead (the decoder checks every
//     slice's reference MD5 against the bases used, and refuses the file
//     where they differ, as samtools does). Of a name repeated within one
//     file the first counts, as in a .fai; of a name in several -T files
//     (which samtools does not take), the contig whose MD5 is the M5, else
//     the first file's;
//   - for a name the -T files lack, the first file named by the M5 under
//     REF_CACHE, then each REF_PATH element (one whose content has another
//     MD5 is refused, not passed over for a later one);
//   - then the contig of that name in the FASTA file that UR: names, when
//     it is a local path or a file: URL.
//
// The error is a *MissingError, or one wrapping ErrClosed, ErrUnsupported
// or ErrChanged.
func (s *Store) Resolve(q SQ) (*Contig, error) {
	if s.isClosed() {
		return nil, fmt.Errorf("%w: looking up %s", ErrClosed, q.Name)
	}
	if c := s.fastaContig(q); c != nil {
		return c, nil
	}
	me := &MissingError{SQ: q, Tried: []string{s.fastaClause(q.Name)}, Err: ErrNotFound}
	mismatch := false
	if m5 := strings.ToLower(q.M5); isMD5(m5) {
		c, other, err := s.lookupM5File(m5)
		if c != nil || err != nil {
			return c, err
		}
		clause := s.m5Clause()
		if other != nil {
			clause, mismatch, me.WrongM5File = other.String(), true, other.Origin
		}
		me.Tried = append(me.Tried, clause)
	} else {
		me.Tried = append(me.Tried, "no M5 to look up in REF_CACHE or REF_PATH")
	}
	if q.UR != "" {
		c, clause, bad := s.fromUR(q)
		if c != nil {
			return c, nil
		}
		mismatch = mismatch || bad
		me.Tried = append(me.Tried, clause)
	}
	if mismatch {
		me.Err = ErrMismatch
	}
	return nil, me
}

// fastaContig returns the -T FASTA contig for q as Resolve chooses it, or
// nil when no -T file has a contig of its name. Only a name found in
// several files costs an MD5 of those contigs.
func (s *Store) fastaContig(q SQ) *Contig {
	cs := s.byName[q.Name]
	if len(cs) == 0 {
		return nil
	}
	if m5 := strings.ToLower(q.M5); len(cs) > 1 && isMD5(m5) {
		for _, c := range cs {
			if c.MD5() == m5 {
				return c
			}
		}
	}
	return cs[0]
}

// fastaClause says that the -T FASTA files lack the contig name.
func (s *Store) fastaClause(name string) string {
	if len(s.maps) == 0 {
		return "no -T FASTA given"
	}
	return fmt.Sprintf("no contig %s in the -T FASTA files", name)
}

// m5Clause says where M5-named files were looked for.
func (s *Store) m5Clause() string {
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
	m, contigs, err := loadFasta(path, ViaUR, s.blocks)
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
