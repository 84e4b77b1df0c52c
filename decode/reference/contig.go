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
	if cap(a.dst)-n < len(b) {
		a.dst = slices.Grow(a.dst, len(b))
	}
	a.dst = a.dst[:n+len(b)]
	copyUpper(a.dst[n:], b)
}

// copyUpperGo copies src to dst, of the same length, with ASCII letters
// uppercased: the copy and the case in one pass over the bytes, eight at
// a time, the last eight of a segment longer than eight overlapping the
// ones before (their bytes are computed again from src, so the same).
// copyUpper is this, or a vector version of it where the CPU has one.
func copyUpperGo(dst, src []byte) {
	n := len(src)
	if n < 8 {
		for i, c := range src {
			dst[i] = upperByte(c)
		}
		return
	}
	dst = dst[:n]
	for i := 0; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], upper8(binary.LittleEndian.Uint64(src[i:])))
	}
	if n%8 != 0 {
		binary.LittleEndian.PutUint64(dst[n-8:], upper8(binary.LittleEndian.Uint64(src[n-8:])))
	}
}

// upper8 uppercases the ASCII letters among the eight bytes of x. A byte
// b is a lowercase letter when its low seven bits are at least 'a' and at
// most 'z' and its top bit is clear; adding 0x80-'a' and 0x80-'z'-1 to the
// low seven bits sets the top bit for the two bounds, without a carry
// into the next byte (0x7f+0x1f < 0x100). Letters lose their 0x20 bit.
func upper8(x uint64) uint64 {
	const ones, low7, top = 0x0101010101010101, 0x7f7f7f7f7f7f7f7f, 0x8080808080808080
	a := x & low7
	geA := a + (0x80-'a')*ones
	gtZ := a + (0x80-'z'-1)*ones
	lower := geA &^ gtZ &^ x & top
	return x &^ (lower >> 2)
}

// upperByte is upper8 for one byte.
func upperByte(c byte) byte {
	if c >= 'a' && c <= 'z' {
		return c - ('a' - 'A')
	}
	return c
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
		// The line and column of the first base; the segments after it
		// start their lines, a line width further on each.
		col := i % r.lineBases
		off := r.off + i/r.lineBases*r.lineWidth + col
		for i < stop {
			k := min(r.lineBases-col, stop-i)
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
			off += r.lineWidth - col
			col = 0
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
