package reference

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash"
	"runtime/debug"
	"sort"
)

// Scan reads the bases of [start,end), as Bases would return them
// (uppercased), without copying them out (for h, those that need
// uppercasing, or are read from BGZF, pass through a scratch buffer of at
// most 8 KiB): it writes them to h when h
// is not nil, and appends to runs the maximal runs [from,to) of 'N' among
// them (a lowercase 'n' is an 'N' once uppercased), in ascending order, a
// run that continues the last one of runs extending it. Its errors are
// those of Bases. It serves the decoder's lean pass, which needs the
// slice's reference MD5 and where the 'N's lie, not the bases.
func (c *Contig) Scan(start, end int64, h hash.Hash, runs [][2]int64) (out [][2]int64, err error) {
	// As in Bases: a fault reading a mapping truncated under us is an
	// error, not a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); faulted(r) {
			out, err = runs, changed(c.m.path, fmt.Sprintf("reading bases [%d,%d) of %s", start, end, c.name))
		}
	}()
	if start < 0 || end < start || end > c.length {
		return runs, fmt.Errorf("%w: bases [%d,%d) of %s (length %d)", ErrOutOfRange, start, end, c.name, c.length)
	}
	s := scanner{h: h, runs: runs, start: start, size: int(min(end-start, scanChunk))}
	s.rawMarked = true
	if fits, err := c.markRuns(start, end, &s); fits || err != nil {
		s.flush()
		return s.runs, err
	}
	s.runs, s.rawMarked = runs, false // walk gives the error
	err = c.walk(start, end, &s)
	s.flush()
	return s.runs, err
}

// markRuns is walk for a plain file: each run's bytes from start to end,
// line ends included, are searched for Ns at once, rather than line by
// line, and hashed from the mapping where they need no uppercasing
// (hashRaw). It reports false, having read nothing, for a range that
// does not fit the mapping, walk then giving the exact error, and for a
// BGZF file, whose bytes walk reads a block at a time.
func (c *Contig) markRuns(start, end int64, s *scanner) (bool, error) {
	if start == end {
		return true, nil
	}
	if c.z != nil {
		return false, nil
	}
	c.m.mu.RLock()
	defer c.m.mu.RUnlock()
	data := c.m.data
	if data == nil {
		return true, fmt.Errorf("%w: bases of %s", ErrClosed, c.name)
	}
	first := sort.Search(len(c.runs), func(i int) bool { return c.runs[i].base+c.runs[i].n > start })
	var spans [2][2]int64 // file bytes [lo, hi) of the first and last run read
	pos := start
	for pass := range 2 {
		// The first pass checks that every run's bytes lie in the mapping,
		// the second searches them.
		pos = start
		for ri := first; ri < len(c.runs) && pos < end; ri++ {
			r := c.runs[ri]
			i := pos - r.base
			stop := min(end, r.base+r.n) - r.base
			lo := r.off + i/r.lineBases*r.lineWidth + i%r.lineBases
			hi := r.off + (stop-1)/r.lineBases*r.lineWidth + (stop-1)%r.lineBases + 1
			if pass == 0 && (lo < 0 || hi > int64(len(data)) || lo > hi) {
				return false, nil
			}
			if pass == 1 {
				if s.h != nil {
					s.hashRaw(r, lo, data[lo:hi])
				} else {
					s.markChunks(r, lo, data[lo:hi])
				}
				if ri == first {
					spans[0] = [2]int64{lo, hi}
				}
				spans[1] = [2]int64{lo, hi}
			}
			pos = r.base + stop
		}
	}
	if pos != end {
		return true, fmt.Errorf("%w: %s: bases [%d,%d) not covered by the index", ErrCorrupt, c.name, pos, end)
	}
	c.m.dropAround(spans[0][0], spans[1][1])
	return true, nil
}

// markRaw adds the runs of N of raw, the bytes of run r from file offset
// lo on, skipping the bytes of line ends, and those of n too when lower.
func (s *scanner) markRaw(r run, lo int64, raw []byte, lower bool) {
	f := nFinder{b: raw, nextN: -2, nextn: -2}
	if !lower {
		f.nextn = -1 // no 'n' looked for
	}
	for i := 0; i < len(raw); {
		j := f.next(i)
		if j < 0 {
			return
		}
		rel := lo + int64(j) - r.off
		line, col := rel/r.lineWidth, rel%r.lineWidth
		if col >= r.lineBases {
			i = j + 1 // a line end's byte, not a base
			continue
		}
		k := j + 1
		for k < len(raw) && (raw[k] == 'N' || lower && raw[k] == 'n') && col+int64(k-j) < r.lineBases {
			k++
		}
		base := r.base + line*r.lineBases + col
		s.add(base, base+int64(k-j))
		i = k
	}
}

// markChunks is markRaw a chunk at a time, so that the search for n
// finds the bytes the search for N read in the cache.
func (s *scanner) markChunks(r run, lo int64, raw []byte) {
	for len(raw) > 0 {
		n := min(len(raw), rawChunk)
		s.markRaw(r, lo, raw[:n], true)
		lo, raw = lo+int64(n), raw[n:]
	}
}

// rawChunk is how many bytes of a run hashRaw looks at at a time: whether
// they may hold a lowercase letter is decided per chunk, so that a
// soft-masked stretch sends only its own lines through the gathering,
// and a chunk's passes after the first find its bytes in the cache.
const rawChunk = 16 << 10

// hashRaw is markRaw for a scanner with a digest: the Ns and ns of raw
// (the bytes of run r from file offset lo on) are found in place, a chunk
// at a time (bytes.IndexByte is the cheapest first reading of bytes not
// in the cache yet), then the chunk's lines are hashed straight from the
// mapping, a line at a time, where it holds no lowercase letter; one that
// may hold one goes through gather, which uppercases its bases (their Ns
// already marked: rawMarked). A line is a call of the digest, but a
// digest's calls cost it little more than the copying into a buffer of
// their bases would.
func (s *scanner) hashRaw(r run, lo int64, raw []byte) {
	for len(raw) > 0 {
		n := min(len(raw), rawChunk)
		chunk := raw[:n]
		s.markRaw(r, lo, chunk, true)
		direct := !mayLower(chunk)
		if direct {
			s.flush() // the bases gathered before come first
		}
		s.lines(r, lo, chunk, direct)
		lo, raw = lo+int64(n), raw[n:]
	}
}

// lines gives the bases of raw, the bytes of run r from file offset lo
// on, line segment by line segment, to the digest when direct (their Ns
// marked by the caller), else to gather.
func (s *scanner) lines(r run, lo int64, raw []byte, direct bool) {
	col := (lo - r.off) % r.lineWidth
	for i := int64(0); i < int64(len(raw)); {
		if col < r.lineBases {
			k := min(r.lineBases-col, int64(len(raw))-i)
			b := raw[i : i+k]
			if direct {
				s.h.Write(b)
				s.start += k
			} else {
				s.gather(b)
			}
			i += k
			col += k
			continue
		}
		i += r.lineWidth - col // past the line end's bytes
		col = 0
	}
}

// mayLower reports whether b may hold an ASCII lowercase letter: whether a
// byte of it has the bit 0x20 set, which uppercase letters and line ends
// lack (digits and some signs have it: they answer true).
func mayLower(b []byte) bool {
	var acc uint64
	i := 0
	for ; i+32 <= len(b); i += 32 {
		acc |= binary.LittleEndian.Uint64(b[i:]) | binary.LittleEndian.Uint64(b[i+8:]) |
			binary.LittleEndian.Uint64(b[i+16:]) | binary.LittleEndian.Uint64(b[i+24:])
	}
	for ; i < len(b); i++ {
		acc |= uint64(b[i])
	}
	return acc&0x2020202020202020 != 0
}

// scanChunk is how many bases scanner gathers before it hashes them and
// looks for Ns: FASTA lines are short, and a digest's per-line calls would
// cost more than the copy.
const scanChunk = 8 << 10

// scanner is the segmentSink of Scan. For a digest it gathers the bases,
// uppercased, into buf, which holds those from start on; without one it
// looks for the Ns in the mapped lines.
type scanner struct {
	h     hash.Hash // nil: no digest
	runs  [][2]int64
	buf   []byte
	size  int // of buf, made on first use
	start int64
	// rawMarked: the Ns of the bases gathered are marked in the file's
	// bytes already (scanRaw), not by flush.
	rawMarked bool
}

func (s *scanner) segment(pos int64, b []byte) {
	if s.h == nil {
		// No digest: the Ns are looked for in place, 'n' too.
		s.mark(pos, b, true)
		return
	}
	s.gather(b)
}

// gather adds bases b, which follow those gathered, to the buffer, and
// hashes it (flush) each time it fills.
func (s *scanner) gather(b []byte) {
	for len(b) > 0 {
		if s.buf == nil {
			s.buf = make([]byte, 0, s.size)
		}
		k := min(len(b), s.size-len(s.buf))
		s.buf = append(s.buf, b[:k]...)
		b = b[k:]
		if len(s.buf) == s.size {
			s.flush()
		}
	}
}

// flush hashes the bases gathered and adds their runs of N.
func (s *scanner) flush() {
	b := s.buf
	if len(b) == 0 {
		return
	}
	if hasLower(b) {
		copyUpper(b, b)
	}
	s.h.Write(b)
	if !s.rawMarked {
		s.mark(s.start, b, false)
	}
	s.start += int64(len(b))
	s.buf = b[:0]
}

// mark adds the runs of 'N' in b, which holds bases pos..., and of 'n'
// too when lower.
func (s *scanner) mark(pos int64, b []byte, lower bool) {
	f := nFinder{b: b, nextN: -2, nextn: -2}
	if !lower {
		f.nextn = -1 // no 'n' looked for
	}
	for i := 0; i < len(b); {
		j := f.next(i)
		if j < 0 {
			return
		}
		k := j + 1
		for k < len(b) && (b[k] == 'N' || lower && b[k] == 'n') {
			k++
		}
		s.add(pos+int64(j), pos+int64(k))
		i = k
	}
}

// indexFrom is the index of the first c in b at or after i, or -1.
func indexFrom(b []byte, i int, c byte) int {
	if j := bytes.IndexByte(b[i:], c); j >= 0 {
		return i + j
	}
	return -1
}

func (s *scanner) add(from, to int64) {
	if n := len(s.runs); n > 0 && s.runs[n-1][1] == from {
		s.runs[n-1][1] = to
		return
	}
	s.runs = append(s.runs, [2]int64{from, to})
}

// hasLower reports whether b holds an ASCII lowercase letter, with upper's
// eight-byte test.
func hasLower(b []byte) bool {
	const hi, six = 0x8080808080808080, 0x4040404040404040
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if x&(x<<1)&six&^(x&hi>>1) != 0 && lowerIn(b[i:i+8]) {
			return true
		}
	}
	return lowerIn(b[i:])
}

// lowerIn reports whether b holds an ASCII lowercase letter, byte by byte.
func lowerIn(b []byte) bool {
	for _, c := range b {
		if c >= 'a' && c <= 'z' {
			return true
		}
	}
	return false
}

// nFinder finds the next 'N' or 'n' of b, searching b once for each:
// nextN and nextn are the next of each at or after the last position
// asked for, once looked for (-2: not yet, -1: none left).
type nFinder struct {
	b            []byte
	nextN, nextn int
}

// next returns the index of the first 'N' or 'n' of b at or after i, or
// -1; i never decreases from call to call.
func (f *nFinder) next(i int) int {
	if f.nextN != -1 && f.nextN < i {
		f.nextN = indexFrom(f.b, i, 'N')
	}
	if f.nextn != -1 && f.nextn < i {
		f.nextn = indexFrom(f.b, i, 'n')
	}
	j := f.nextN
	if j < 0 || (f.nextn >= 0 && f.nextn < j) {
		j = f.nextn
	}
	return j
}
