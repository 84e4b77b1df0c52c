package reference

import (
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"sync"
)

// Contig is one reference sequence: a FASTA record or an M5-named file,
// read in place from the shared mapping of its file (CRAMv3 §11). It is
// safe for concurrent use; it must not be used after its Store is closed
// (calls then return ErrClosed).
type Contig struct {
	name   string
	length int64
	runs   []run
	m      *mapping
	z      *bgzfText // the text of m when it is BGZF, nil when plain
	via    Via

	md5Once sync.Once
	md5     string
	md5Err  error // why md5 could not be computed
}

// Name returns the contig's name: the FASTA header's first word, or the M5
// for a file found by its checksum.
func (c *Contig) Name() string { return c.name }

// Path returns the file the contig is read from.
func (c *Contig) Path() string { return c.m.path }

// Origin returns the file the contig is read from and how it was found.
func (c *Contig) Origin() Origin { return Origin{Path: c.m.path, Via: c.via} }

// Via is how a Store found the file a contig is read from.
type Via int

const (
	ViaFasta    Via = iota // a FASTA file given to Open (samtools -T)
	ViaRefCache            // a file named by the M5 under REF_CACHE
	ViaRefPath             // a file named by the M5 under a REF_PATH element
	ViaUR                  // the FASTA file an @SQ UR: field names
)

// Origin says where a contig's bases are read from, for messages.
type Origin struct {
	Path string
	Via  Via
}

// String names the file and how it was found, as in "the -T FASTA
// /refs/hg38.fa".
func (o Origin) String() string {
	switch o.Via {
	case ViaRefCache:
		return "the M5-named file " + o.Path + " (REF_CACHE)"
	case ViaRefPath:
		return "the M5-named file " + o.Path + " (REF_PATH)"
	case ViaUR:
		return "the FASTA " + o.Path + " (@SQ UR:)"
	}
	return "the -T FASTA " + o.Path
}

// Len returns the number of bases.
func (c *Contig) Len() int64 { return c.length }

// Bases appends to dst the bases of [start,end) (0-based, end exclusive),
// uppercased, without line ends. A range that is empty is fine; one that
// is reversed or extends past the contig's end is an ErrOutOfRange error.
// Bases of a file truncated while mapped are an ErrChanged error: the
// memory fault (SIGBUS) of reading them is caught, not fatal.
func (c *Contig) Bases(dst []byte, start, end int64) (out []byte, err error) {
	// A fault on the mapping is an error (fault.go).
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); faulted(r) {
			out, err = dst, changed(c.m.path, fmt.Sprintf("reading bases [%d,%d) of %s", start, end, c.name))
		}
	}()
	return c.bases(dst, start, end)
}

func (c *Contig) bases(dst []byte, start, end int64) ([]byte, error) {
	if start < 0 || end < start || end > c.length {
		return dst, fmt.Errorf("%w: bases [%d,%d) of %s (length %d)", ErrOutOfRange, start, end, c.name, c.length)
	}
	// The range lies within the contig (checked above), so the bases
	// exist: grow dst once rather than line by line.
	a := appender{dst: slices.Grow(dst, int(end-start))}
	err := c.walk(start, end, &a)
	return a.dst, err
}

// A segmentSink takes the bases of a range one line segment at a time,
// as they lie in the mapping (not uppercased): b holds bases pos... of
// the contig and is valid only during the call.
type segmentSink interface {
	segment(pos int64, b []byte)
}

// appender is the segmentSink of bases: it appends the bases uppercased.
type appender struct{ dst []byte }

func (a *appender) segment(_ int64, b []byte) {
	n := len(a.dst)
	a.dst = append(a.dst, b...)
	upper(a.dst[n:])
}

// walk gives the bases of [start,end), which the caller has checked lie
// within the contig, to sink line segment by line segment (split further
// at BGZF block ends), in order, then drops the pages read from the
// process with those the kernel mapped around them (dropAround; a BGZF
// block's are dropped once it is inflated).
func (c *Contig) walk(start, end int64, sink segmentSink) error {
	if start == end {
		return nil
	}
	c.m.mu.RLock()
	defer c.m.mu.RUnlock()
	data := c.m.data
	if data == nil {
		return fmt.Errorf("%w: bases of %s", ErrClosed, c.name)
	}
	size := int64(len(data))
	var z *bgzfCursor
	if c.z != nil {
		z, size = &bgzfCursor{z: c.z, i: -1}, c.z.size
	}
	// First run that ends after start.
	ri := sort.Search(len(c.runs), func(i int) bool { return c.runs[i].base+c.runs[i].n > start })
	pos := start
	from, to := int64(-1), int64(0) // the file bytes read
	for ; ri < len(c.runs) && pos < end; ri++ {
		r := c.runs[ri]
		i := pos - r.base // index within the run
		stop := min(end, r.base+r.n) - r.base
		for i < stop {
			line, col := i/r.lineBases, i%r.lineBases
			k := min(r.lineBases-col, stop-i)
			off := r.off + line*r.lineWidth + col
			if off < 0 || off+k > size {
				return fmt.Errorf("%w: %s: base %d maps to offset %d past the end of %s (%d bytes)",
					ErrCorrupt, c.name, r.base+i, off, c.m.path, size)
			}
			if from < 0 {
				from = off
			}
			to = off + k
			if z == nil {
				sink.segment(r.base+i, data[off:off+k])
			} else if err := z.emit(r.base+i, off, k, sink); err != nil {
				return err
			}
			i += k
		}
		pos = r.base + stop
	}
	if pos != end {
		return fmt.Errorf("%w: %s: bases [%d,%d) not covered by the index", ErrCorrupt, c.name, pos, end)
	}
	if z == nil {
		c.m.dropAround(from, to)
	}
	return nil
}

// upper uppercases ASCII letters in place. Eight bytes at a time it only
// looks for a lowercase letter (bit 0x20 set in a byte of 0x60..0x7f, a
// superset tested exactly per byte), so uppercase references pass quickly.
func upper(b []byte) {
	const hi, six = 0x8080808080808080, 0x4040404040404040
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		// A byte has 0x40 and 0x20 set and 0x80 clear only in 0x60..0x7f.
		if x&(x<<1)&six&^(x&hi>>1) == 0 {
			continue
		}
		lowerRun(b[i : i+8])
	}
	lowerRun(b[i:])
}

// lowerRun uppercases ASCII letters of b, one byte at a time.
func lowerRun(b []byte) {
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
}

// md5Chunk is how many bases MD5 reads at a time.
const md5Chunk = 1 << 20

// MD5 returns the lower-case hex MD5 of the uppercased sequence, with any
// byte outside '!'..'~' left out (SAMv1 §1.3.2). It is computed on first
// use and cached; it returns "" when the sequence cannot be read (its
// Store closed, its file truncated).
func (c *Contig) MD5() string {
	m5, _ := c.digest()
	return m5
}

// digest is MD5 with the error that kept it from being computed.
func (c *Contig) digest() (string, error) {
	c.md5Once.Do(func() {
		h := md5.New()
		buf := make([]byte, 0, min(c.length, md5Chunk))
		for pos := int64(0); pos < c.length; pos += md5Chunk {
			buf, c.md5Err = c.Bases(buf[:0], pos, min(pos+md5Chunk, c.length))
			if c.md5Err != nil {
				return
			}
			h.Write(printable(buf))
		}
		c.md5 = hex.EncodeToString(h.Sum(nil))
	})
	return c.md5, c.md5Err
}

// printable drops in place the bytes outside '!'..'~' and returns the rest.
func printable(b []byte) []byte {
	for i, c := range b {
		if !isBase(c) {
			out := b[:i]
			for _, c := range b[i+1:] {
				if isBase(c) {
					out = append(out, c)
				}
			}
			return out
		}
	}
	return b
}
