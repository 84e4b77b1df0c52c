// Package reference finds and reads the reference sequences that CRAM
// decoding needs (CRAMv3 §11): contigs of FASTA files (with their .fai
// index, or an index built in memory), and M5-named sequence files found
// through REF_CACHE and REF_PATH the way htslib 1.16 looks for them.
// Files are memory-mapped and read in place; no genome is loaded into the
// heap.
package reference

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Errors returned (wrapped, with context) by this package.
var (
	// ErrNotFound: no FASTA contig or M5-named file holds the sequence.
	ErrNotFound = errors.New("reference: sequence not found")
	// ErrMismatch: the M5-named file found has another MD5, or the UR:
	// FASTA's contig of that name another length, than the @SQ line says.
	ErrMismatch = errors.New("reference: sequence does not match @SQ")
	// ErrCorrupt: a FASTA file or .fai index is malformed.
	ErrCorrupt = errors.New("reference: malformed FASTA or index")
	// ErrUnsupported: a file this package cannot read: gzip (not bgzip)
	// compression, a bgzip FASTA without its .fai and .gzi index.
	ErrUnsupported = errors.New("reference: unsupported file")
	// ErrOutOfRange: bases requested outside the contig.
	ErrOutOfRange = errors.New("reference: position out of range")
	// ErrClosed: the Store was closed.
	ErrClosed = errors.New("reference: store closed")
	// ErrChanged: a mapped file was truncated while in use.
	ErrChanged = errors.New("reference: file changed while mapped")
)

// Options says where M5-named sequence files are looked for.
type Options struct {
	// RefPath is a colon-separated list of directories or templates, as
	// htslib's REF_PATH: %s stands for the (rest of the) M5, %Ns for its
	// next N characters, and an element without % is a directory holding
	// files named by the M5. "::" is a literal colon. Elements that are
	// URLs (http:, https:, ftp:, URL=) are ignored: nothing is fetched
	// from a network. Empty means the environment's REF_PATH.
	RefPath string
	// RefCache is one such template for a local cache, searched first, as
	// htslib's REF_CACHE. Empty means the environment's REF_CACHE, or,
	// when neither REF_PATH nor REF_CACHE is set, htslib's default cache
	// ($XDG_CACHE_HOME/hts-ref/%2s/%2s/%s, else $HOME/.cache/hts-ref/...).
	// It is only read, never written.
	RefCache string
	// NoEnv ignores the environment: only the fields above are used.
	NoEnv bool
}

// mapping is one read-only memory-mapped file, shared by its contigs.
type mapping struct {
	path string
	info os.FileInfo  // the file mapped, as it was then
	mu   sync.RWMutex // held for reading while data is read; Close takes it
	data []byte       // nil once unmapped
	mmap bool         // data came from mmap (an empty file is not mapped)

	rmu    sync.Mutex // guards recent
	recent regions    // the regions read whose pages were not dropped yet
}

// regionSize is the unit in which a mapping's pages leave the resident
// set (dropAround): aligned 2 MiB of the file.
const regionSize = 2 << 20

// keptRegions is how many regions of a mapping stay mapped after a read
// (regions): the windows of successive reads (the containers of a
// sorted file, the workers' at once) mostly fall in the same few, and
// dropping a region after each read would map it again, fault by fault,
// at the next, for files of small slices at every slice.
const keptRegions = 4

// regions is the least recently read regions of a mapping, by number
// (offset / regionSize), most recent first.
type regions struct {
	r [keptRegions]int64
	n int
}

// touch makes region r the most recent and returns the region that left
// to make room for it, or -1.
func (rs *regions) touch(r int64) int64 {
	i := 0
	for i < rs.n && rs.r[i] != r {
		i++
	}
	out := int64(-1)
	switch {
	case i < rs.n: // held: moves to the front
	case rs.n < keptRegions:
		rs.n++
	default:
		i, out = keptRegions-1, rs.r[keptRegions-1]
	}
	copy(rs.r[1:i+1], rs.r[:i])
	rs.r[0] = r
	return out
}

// mapFile maps path read-only.
func mapFile(path string) (*mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrUnsupported, path)
	}
	size := st.Size()
	if size == 0 {
		return &mapping{path: path, info: st, data: []byte{}}, nil
	}
	if size != int64(int(size)) {
		return nil, fmt.Errorf("%w: %s: %d bytes is too large to map", ErrUnsupported, path, size)
	}
	data, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	return &mapping{path: path, info: st, data: data, mmap: true}, nil
}

// changed reports whether the file at m's path is no longer the one
// mapped, as it was then: another file, or its size or mtime changed.
func (m *mapping) changed() bool {
	st, err := os.Stat(m.path)
	return err != nil || !os.SameFile(st, m.info) || st.Size() != m.info.Size() || !st.ModTime().Equal(m.info.ModTime())
}

// dropPages tells the kernel that the whole pages of data[from:to] are
// not needed for now (the caller holds m.mu for reading and has copied the
// bytes out). They stay in the page cache, shared with every other reader
// of the file, but leave this process's resident set, so that reading a
// large reference from end to end does not grow the process by the size
// of the reference: a later read of the same bytes maps them again from
// the page cache (a minor fault, no I/O).
func (m *mapping) dropPages(from, to int64) {
	if !m.mmap || from < 0 {
		return
	}
	page := int64(pageSize)
	lo := (from + page - 1) / page * page
	hi := to / page * page
	if hi <= lo || hi > int64(len(m.data)) {
		return
	}
	// Advice only: a failure leaves the pages resident, nothing else.
	_ = unix.Madvise(m.data[lo:hi], unix.MADV_DONTNEED)
}

// dropAround is dropPages for bytes read (the bases of a window, a BGZF
// block once inflated), by regions of regionSize: a fault maps, beside
// the page read, what the page cache holds around it (the kernel's
// fault-around, and the whole of a large folio, which can be as large as a
// region and lies within it), so dropping only the bytes read would leave
// the pages mapped with them in the resident set. The regions of the
// bytes read become the mapping's most recent ones, and those that leave
// the keptRegions most recent are dropped: at most that many regions of a
// mapping stay resident. Pages are mapped again from the page cache when
// read. The caller holds m.mu for reading.
func (m *mapping) dropAround(from, to int64) {
	if !m.mmap || from < 0 || to <= from {
		return
	}
	m.rmu.Lock()
	defer m.rmu.Unlock()
	for r := from / regionSize; r <= (to-1)/regionSize; r++ {
		if old := m.recent.touch(r); old >= 0 {
			m.dropPages(old*regionSize, min((old+1)*regionSize, int64(len(m.data))))
		}
	}
}

var pageSize = unix.Getpagesize()

// unmap releases the mapping, waiting for readers in progress.
func (m *mapping) unmap() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	data := m.data
	m.data = nil
	if data == nil || !m.mmap {
		return nil
	}
	return unix.Munmap(data)
}

// Store holds mapped FASTA files; one mmap per file, shared by all users;
// safe for concurrent use.
type Store struct {
	fastas []*Contig            // all FASTA contigs, in file order
	byName map[string][]*Contig // by name, the first contig of each file, in file order
	maps   []*mapping
	path   []string // local REF_PATH templates
	cache  string   // REF_CACHE template
	blocks *blockCache

	mu     sync.Mutex // guards the fields below
	closed bool
	byM5   map[string]*Contig  // M5-named files mapped so far
	byUR   map[string]*urFasta // FASTA files named by @SQ UR:, by path
}

// Open maps the FASTA files and indexes them, from FASTA.fai when present
// next to each file, otherwise by scanning the mapped file (nothing is
// written next to it). A bgzip-compressed FASTA is read through its .fai
// and .gzi (bgzf.go), which must both be there; one compressed with plain
// gzip is an ErrUnsupported error.
func Open(fastas []string, opts Options) (*Store, error) {
	s := &Store{
		byName: make(map[string][]*Contig),
		byM5:   make(map[string]*Contig),
		byUR:   make(map[string]*urFasta),
		blocks: newBlockCache(),
	}
	refPath, refCache := opts.RefPath, opts.RefCache
	if !opts.NoEnv {
		envPath, envCache := os.Getenv("REF_PATH"), os.Getenv("REF_CACHE")
		if refPath == "" {
			refPath = envPath
		}
		if refCache == "" {
			refCache = envCache
		}
		if refCache == "" && envPath == "" && opts.RefPath == "" {
			refCache = defaultCache()
		}
	}
	s.path = splitRefPath(refPath)
	s.cache = refCache
	for _, fn := range fastas {
		if err := s.addFasta(fn); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// defaultCache is htslib's REF_CACHE when neither REF_PATH nor REF_CACHE
// is set, or "" when no base directory is known.
func defaultCache() string {
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		if home := os.Getenv("HOME"); home != "" {
			base = filepath.Join(home, ".cache")
		}
	}
	if base == "" {
		return ""
	}
	return filepath.Join(base, "hts-ref") + "/%2s/%2s/%s"
}

// addFasta maps and indexes one FASTA file given with -T.
func (s *Store) addFasta(fn string) error {
	m, contigs, err := loadFasta(fn, ViaFasta, s.blocks)
	if m != nil {
		s.maps = append(s.maps, m)
	}
	if err != nil {
		return err
	}
	seen := make(map[string]bool, len(contigs))
	for _, c := range contigs {
		s.fastas = append(s.fastas, c)
		if !seen[c.name] {
			// A name repeated within the file: the first counts, as in
			// the .fai samtools builds and in htslib's reading of one.
			seen[c.name] = true
			s.byName[c.name] = append(s.byName[c.name], c)
		}
	}
	return nil
}

// loadFasta maps one FASTA file, found via, and indexes it, from
// FASTA.fai when present, else by scanning it; a BGZF file's blocks are
// cached in blocks. The mapping is returned (for the caller to unmap) even
// with an error.
func loadFasta(fn string, via Via, blocks *blockCache) (*mapping, []*Contig, error) {
	m, err := mapFile(fn)
	if err != nil {
		return nil, nil, fmt.Errorf("reference FASTA: %w", err)
	}
	fai, err := os.ReadFile(fn + ".fai")
	haveFai := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return m, nil, fmt.Errorf("reference index: %w", err)
	}
	entries, z, err := indexFasta(m, fai, haveFai, blocks)
	if err != nil {
		return m, nil, err
	}
	contigs := make([]*Contig, len(entries))
	for i, e := range entries {
		contigs[i] = &Contig{name: e.name, length: e.length, runs: e.runs, m: m, z: z, via: via}
	}
	return m, contigs, nil
}

// indexFasta indexes the FASTA file mapped in m, from its .fai index fai
// when haveFai, else by scanning it; for a BGZF file it returns its text
// too, read through its .gzi, with its blocks cached in blocks. A fault
// reading the mapping is an ErrChanged error (fault.go).
func indexFasta(m *mapping, fai []byte, haveFai bool, blocks *blockCache) (entries []entry, z *bgzfText, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); faulted(r) {
			entries, z, err = nil, nil, changed(m.path, "indexing the FASTA")
		}
	}()
	var t text = plainText(m.data)
	switch {
	case isGzip(m.data) && !isBGZF(m.data):
		return nil, nil, fmt.Errorf("%w: %s is compressed with gzip, not bgzip: recompress it with bgzip (gzip -dc %s | bgzip > NEW.fa.gz) and index that with samtools faidx, as samtools needs",
			ErrUnsupported, m.path, m.path)
	case isGzip(m.data):
		if !haveFai {
			return nil, nil, fmt.Errorf("%w: %s is compressed with bgzip and has no %s.fai: make its .fai and .gzi index with samtools faidx %s",
				ErrUnsupported, m.path, m.path, m.path)
		}
		if z, err = openBGZF(m, blocks); err != nil {
			return nil, nil, err
		}
		t = z
	case !haveFai:
		entries, err = scanFasta(m.data)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", m.path, err)
		}
		return entries, nil, nil
	}
	entries, err = parseFai(fai, t)
	if err != nil {
		return nil, nil, fmt.Errorf("%s.fai: %w", m.path, err)
	}
	return entries, z, nil
}

// isGzip reports whether b starts with the gzip magic (as bgzip does).
func isGzip(b []byte) bool { return len(b) >= 2 && b[0] == 0x1f && b[1] == 0x8b }

// Close unmaps every file. Contigs from the Store return ErrClosed after.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.blocks.lru.Purge()
	maps := s.maps
	for _, c := range s.byM5 {
		maps = append(maps, c.m)
	}
	for _, u := range s.byUR {
		if u.m != nil {
			maps = append(maps, u.m)
		}
	}
	s.mu.Unlock()
	var errs []error
	for _, m := range maps {
		if err := m.unmap(); err != nil {
			errs = append(errs, fmt.Errorf("munmap %s: %w", m.path, err))
		}
	}
	return errors.Join(errs...)
}

// Contigs returns the FASTA contigs, in file order.
func (s *Store) Contigs() []*Contig { return append([]*Contig(nil), s.fastas...) }

// isClosed reports whether the Store was closed.
func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// lookupM5File returns the sequence of the first file named by m5 under
// REF_CACHE then REF_PATH, as htslib takes the first it finds, mapped on
// first use and shared. A file found whose content has another MD5 is not
// used (nor any later one): where it is and its MD5 are returned instead,
// for the caller to report.
func (s *Store) lookupM5File(m5 string) (c *Contig, other *wrongM5File, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, nil, fmt.Errorf("%w: looking up M5 %s", ErrClosed, m5)
	}
	if c, ok := s.byM5[m5]; ok {
		return c, nil, nil
	}
	templates := s.path
	if s.cache != "" {
		templates = append([]string{s.cache}, s.path...)
	}
	for i, t := range templates {
		fn := expandM5(t, m5)
		st, err := os.Stat(fn)
		if err != nil || !st.Mode().IsRegular() {
			continue
		}
		via := ViaRefPath
		if s.cache != "" && i == 0 {
			via = ViaRefCache
		}
		m, err := mapFile(fn)
		if err != nil {
			return nil, nil, fmt.Errorf("reference %s: %w", fn, err)
		}
		c, err := m5Contig(m, m5)
		var got string
		if err == nil {
			c.via = via
			got, err = c.digest()
		}
		if err != nil {
			m.unmap()
			return nil, nil, err
		}
		if got != m5 {
			m.unmap()
			return nil, &wrongM5File{Origin{Path: fn, Via: via}, got}, nil
		}
		s.byM5[m5] = c
		return c, nil, nil
	}
	return nil, nil, nil
}

// wrongM5File is an M5-named file whose content has another MD5.
type wrongM5File struct {
	Origin
	m5 string // of its content
}

func (w *wrongM5File) String() string { return fmt.Sprintf("%s has M5 %s", w.Origin, w.m5) }

// m5Contig makes the contig named name of the M5-named sequence file
// mapped in m: raw sequence, no header, no line ends; a final line end is
// tolerated and not counted. A compressed file is an ErrUnsupported error,
// a fault reading the mapping an ErrChanged one (fault.go).
func m5Contig(m *mapping, name string) (c *Contig, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); faulted(r) {
			c, err = nil, changed(m.path, "reading the M5-named sequence file")
		}
	}()
	data := m.data
	if isGzip(data) {
		return nil, fmt.Errorf("%s: %w: compressed M5 sequence file", m.path, ErrUnsupported)
	}
	n := int64(len(data))
	for n > 0 && (data[n-1] == '\n' || data[n-1] == '\r') {
		n--
	}
	c = &Contig{name: name, length: n, m: m}
	if n > 0 {
		c.runs = []run{{lineBases: n, lineWidth: n, n: n}}
	}
	return c, nil
}

// isMD5 reports whether s is 32 lower-case hex digits.
func isMD5(s string) bool {
	if len(s) != 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// urlHead returns the length of the URL head (an optional '|' or "URL=",
// the scheme and its colon, "//", the host and an optional :port) that
// starts s, or 0 when s does not start with an http:, https: or ftp: URL.
func urlHead(s string) int {
	i := 0
	if strings.HasPrefix(s, "|") {
		i++
	}
	if strings.HasPrefix(s[i:], "URL=") {
		i += len("URL=")
	}
	scheme := ""
	for _, p := range []string{"http:", "https:", "ftp:"} {
		if strings.HasPrefix(s[i:], p) {
			scheme = p
		}
	}
	if scheme == "" {
		return 0
	}
	i += len(scheme)
	for k := 0; k < 2 && i < len(s) && s[i] == '/'; k++ {
		i++
	}
	for i < len(s) && s[i] != ':' && s[i] != '/' {
		i++
	}
	if i+1 < len(s) && s[i] == ':' && s[i+1] >= '0' && s[i+1] <= '9' {
		i++
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i
}

// splitRefPath splits a REF_PATH value into its local elements, following
// htslib: ':' separates, "::" is a literal ':', a leading '|' is dropped,
// empty elements are skipped, and URL elements (whose own colons,
// including a host:port, do not separate) are left out. htslib also tries
// the current directory last; this package does not.
func splitRefPath(p string) []string {
	var out []string
	var cur strings.Builder
	start, isURL := true, false
	flush := func() {
		if cur.Len() > 0 && !isURL {
			out = append(out, strings.TrimPrefix(cur.String(), "|"))
		}
		cur.Reset()
		start, isURL = true, false
	}
	for i := 0; i < len(p); {
		if start {
			start = false
			if n := urlHead(p[i:]); n > 0 {
				isURL = true
				i += n
				continue
			}
		}
		switch {
		case p[i] == ':' && i+1 < len(p) && p[i+1] == ':':
			cur.WriteByte(':')
			i += 2
		case p[i] == ':':
			flush()
			i++
		default:
			cur.WriteByte(p[i])
			i++
		}
	}
	flush()
	return out
}

// expandM5 turns a REF_PATH/REF_CACHE template and an M5 into a file name:
// %s is replaced by the rest of the M5, %Ns by its next N characters; a
// '%' not followed by digits and 's' stays as it is; what is left of the
// M5 afterwards is appended as a last path element.
func expandM5(tmpl, m5 string) string {
	var b strings.Builder
	rest := m5
	t := tmpl
	if len(t) > 1 && strings.HasSuffix(t, "/") && !strings.Contains(t, "%") {
		t = strings.TrimSuffix(t, "/")
	}
	for {
		i := strings.IndexByte(t, '%')
		if i < 0 {
			b.WriteString(t)
			break
		}
		b.WriteString(t[:i])
		j := i + 1
		n := 0
		for j < len(t) && t[j] >= '0' && t[j] <= '9' {
			if n < 1000 {
				n = n*10 + int(t[j]-'0')
			}
			j++
		}
		if j < len(t) && t[j] == 's' {
			if n == 0 || n > len(rest) {
				n = len(rest)
			}
			b.WriteString(rest[:n])
			rest = rest[n:]
			t = t[j+1:]
			continue
		}
		b.WriteString(t[i:j])
		t = t[j:]
	}
	if rest != "" {
		if s := b.String(); s != "" && !strings.HasSuffix(s, "/") {
			b.WriteByte('/')
		}
		b.WriteString(rest)
	}
	return b.String()
}
