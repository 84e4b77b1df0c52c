package reference

import (
	"bytes"
	"fmt"
	"strconv"
)

// run is a stretch of a contig laid out with a fixed line geometry: base
// i of the run (0 <= i < n) is at byte off + (i/lineBases)*lineWidth +
// i%lineBases of the file. A regular FASTA contig is one run; a contig whose
// lines change length part-way is several (samtools faidx refuses those).
type run struct {
	base      int64 // index in the contig of the run's first base
	off       int64 // file offset of the run's first base
	lineBases int64 // bases per full line
	lineWidth int64 // bytes per full line, newline included
	n         int64 // bases in the run
}

// span returns the number of file bytes from the run's first base to just
// past its last base.
func (r run) span() int64 {
	if r.n == 0 {
		return 0
	}
	last := r.n - 1
	return (last/r.lineBases)*r.lineWidth + last%r.lineBases + 1
}

// entry is one indexed sequence of a FASTA file.
type entry struct {
	name   string
	length int64
	runs   []run
}

// isBase reports whether c may appear in a sequence line: the printable
// ASCII range that SAMv1 §1.3.2 keeps for the MD5.
func isBase(c byte) bool { return c >= '!' && c <= '~' }

// scanFasta indexes a FASTA file held in data, the way an .fai would
// (faidx: name, length, and line geometry), without copying any bases.
// Names are the header text up to the first blank. Lines may end in \n or
// \r\n; the last line may lack its newline.
func scanFasta(data []byte) ([]entry, error) {
	if isGzip(data) {
		return nil, fmt.Errorf("%w: compressed (gzip/bgzip) FASTA; decompress it first", ErrUnsupported)
	}
	var (
		out []entry
		cur *entry
		// open run state
		open   bool // the last run of cur can take more lines
		lineNo int
	)
	finish := func() {
		if cur == nil {
			return
		}
		runs := cur.runs[:0]
		for _, r := range cur.runs {
			if r.n > 0 {
				runs = append(runs, r)
			}
		}
		cur.runs = runs
	}
	pos := 0
	for pos < len(data) {
		lineNo++
		start := pos
		nl := bytes.IndexByte(data[pos:], '\n')
		var end int // end of content (without newline)
		if nl < 0 {
			end = len(data)
			pos = len(data)
		} else {
			end = pos + nl
			pos = end + 1
		}
		content := data[start:end]
		if len(content) > 0 && content[len(content)-1] == '\r' {
			content = content[:len(content)-1]
		}
		if len(content) > 0 && content[0] == '>' {
			finish()
			name := content[1:]
			if i := bytes.IndexAny(name, " \t"); i >= 0 {
				name = name[:i]
			}
			if len(name) == 0 {
				return nil, fmt.Errorf("%w: FASTA line %d (offset %d): header without a name", ErrCorrupt, lineNo, start)
			}
			out = append(out, entry{name: string(name)})
			cur = &out[len(out)-1]
			open = false
			continue
		}
		if cur == nil {
			if len(bytes.TrimSpace(content)) == 0 {
				continue // blank lines before the first header
			}
			return nil, fmt.Errorf("%w: FASTA line %d (offset %d): sequence before the first '>' header", ErrCorrupt, lineNo, start)
		}
		for i, c := range content {
			if !isBase(c) {
				return nil, fmt.Errorf("%w: FASTA line %d (offset %d): byte 0x%02x in sequence %q", ErrCorrupt, lineNo, start+i, c, cur.name)
			}
		}
		b := int64(len(content))
		w := int64(pos - start)
		if open {
			r := &cur.runs[len(cur.runs)-1]
			if b <= r.lineBases {
				r.n += b
				cur.length += b
				if b < r.lineBases || w != r.lineWidth {
					open = false // a short or differently ended line ends the run
				}
				continue
			}
		}
		cur.runs = append(cur.runs, run{base: cur.length, off: int64(start), lineBases: b, lineWidth: w, n: b})
		cur.length += b
		open = b > 0
	}
	finish()
	return out, nil
}

// text is the bytes of a FASTA file as its .fai counts them: a plain
// file's mapped bytes, or the uncompressed text of a BGZF file.
type text interface {
	textSize() int64
	// byteAt returns byte off (0 <= off < textSize()).
	byteAt(off int64) (byte, error)
}

// plainText is the text of an uncompressed FASTA file: its bytes.
type plainText []byte

func (p plainText) textSize() int64                { return int64(len(p)) }
func (p plainText) byteAt(off int64) (byte, error) { return p[off], nil }

// parseFai reads a samtools .fai index (name, length, offset, line bases,
// line width, tab-separated) for the FASTA text fasta, and checks each
// entry against it: the sequence must fit in the text and full lines must
// end where the index says.
func parseFai(fai []byte, fasta text) ([]entry, error) {
	var out []entry
	lineNo := 0
	for len(fai) > 0 {
		lineNo++
		var line []byte
		if i := bytes.IndexByte(fai, '\n'); i >= 0 {
			line, fai = fai[:i], fai[i+1:]
		} else {
			line, fai = fai, nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(line) == 0 {
			continue
		}
		f := bytes.Split(line, []byte{'\t'})
		if len(f) == 6 {
			return nil, fmt.Errorf("%w: .fai line %d has 6 columns (a FASTQ index)", ErrUnsupported, lineNo)
		}
		if len(f) != 5 {
			return nil, fmt.Errorf("%w: .fai line %d: want 5 tab-separated columns, found %d", ErrCorrupt, lineNo, len(f))
		}
		if len(f[0]) == 0 {
			return nil, fmt.Errorf("%w: .fai line %d: empty name", ErrCorrupt, lineNo)
		}
		var v [4]int64
		for i := range v {
			n, err := strconv.ParseInt(string(f[i+1]), 10, 64)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("%w: .fai line %d column %d: want a non-negative integer, found %q", ErrCorrupt, lineNo, i+2, f[i+1])
			}
			v[i] = n
		}
		length, off, lb, lw := v[0], v[1], v[2], v[3]
		e := entry{name: string(f[0]), length: length}
		if length > 0 {
			if lb == 0 || lw < lb {
				return nil, fmt.Errorf("%w: .fai line %d: line bases %d and line width %d are not a valid layout", ErrCorrupt, lineNo, lb, lw)
			}
			r := run{off: off, lineBases: lb, lineWidth: lw, n: length}
			size := fasta.textSize()
			// Check without overflow that the sequence fits: whole lines
			// first, then the span.
			if off > size || (length-1)/lb > (size-off)/lw || r.span() > size-off {
				return nil, fmt.Errorf("%w: .fai line %d: %s (%d bases at offset %d) runs past the end of the FASTA (%d bytes); is the index stale?",
					ErrCorrupt, lineNo, e.name, length, off, size)
			}
			if length > lb {
				// The first full line must end where the index says.
				c, err := fasta.byteAt(off + lb)
				if err != nil {
					return nil, fmt.Errorf(".fai line %d: %s: reading the end of its first line: %w", lineNo, e.name, err)
				}
				if c != '\n' && c != '\r' {
					return nil, fmt.Errorf("%w: .fai line %d: %s: no line end at offset %d of the FASTA; is the index stale?",
						ErrCorrupt, lineNo, e.name, off+lb)
				}
			}
			e.runs = []run{r}
		}
		out = append(out, e)
	}
	return out, nil
}
