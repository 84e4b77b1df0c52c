package decode

import (
	"bytes"
	"fmt"
)

// SliceHeader is the header block of a slice (CRAMv3 §8.5).
type SliceHeader struct {
	RefSeqID      int32
	RefStart      int64
	RefSpan       int64
	NumRecords    int32
	RecordCounter int64
	NumBlocks     int32
	ContentIDs    []int32
	EmbeddedRefID int32
	RefMD5        [16]byte
	OptionalTags  []byte
}

// parseSliceHeader parses the raw bytes of a slice header block. From
// CRAM 4.0 on its integers are uint7 (the reference id a sint7), its
// positions 64-bit, and an embedded reference id of 0 means none (htslib
// 1.16's cram_decode_slice): EmbeddedRefID is then -1, as in CRAM 3.
func parseSliceHeader(b []byte, major int) (SliceHeader, error) {
	var h SliceHeader
	r := varintsFor(major)
	pos := 0
	var err error
	var v int32
	if h.RefSeqID, err = r.s32(b, &pos); err != nil {
		return h, err
	}
	if major >= 4 {
		if h.RefStart, err = r.u64(b, &pos); err != nil {
			return h, err
		}
		if h.RefSpan, err = r.u64(b, &pos); err != nil {
			return h, err
		}
	} else {
		if v, err = readITF8(b, &pos); err != nil {
			return h, err
		}
		h.RefStart = int64(v)
		if v, err = readITF8(b, &pos); err != nil {
			return h, err
		}
		h.RefSpan = int64(v)
	}
	if h.RefStart < 0 || h.RefSpan < 0 {
		return h, corruptf("slice header: reference start %d, span %d", h.RefStart, h.RefSpan)
	}
	if h.NumRecords, err = r.u32(b, &pos); err != nil {
		return h, err
	}
	if h.NumRecords < 0 {
		return h, corruptf("slice header: %d records", h.NumRecords)
	}
	if major >= 3 {
		if h.RecordCounter, err = r.u64(b, &pos); err != nil {
			return h, err
		}
	} else {
		if v, err = readITF8(b, &pos); err != nil {
			return h, err
		}
		h.RecordCounter = int64(v)
	}
	if h.NumBlocks, err = r.u32(b, &pos); err != nil {
		return h, err
	}
	if h.ContentIDs, err = r.array32(b, &pos, nil); err != nil {
		return h, err
	}
	if h.EmbeddedRefID, err = r.u32(b, &pos); err != nil {
		return h, err
	}
	if major >= 4 && h.EmbeddedRefID == 0 {
		h.EmbeddedRefID = -1
	}
	if pos+16 > len(b) {
		return h, corruptf("slice header: reference MD5 missing")
	}
	copy(h.RefMD5[:], b[pos:pos+16])
	pos += 16
	if pos < len(b) {
		h.OptionalTags = b[pos:]
	}
	if h.NumBlocks < 0 {
		return h, corruptf("slice header: %d blocks", h.NumBlocks)
	}
	return h, nil
}

// errBeyondSlice is htslib's "CIGAR extends beyond slice reference extents".
func errBeyondSlice(pos int64) error {
	return corruptf("alignment at reference position %d extends beyond the slice's reference extents", pos+1)
}

// refView gives reference bases to the record decoder. A fixed view holds
// the span of a single-reference slice. A window view (src set) serves the
// records of multi-reference slices: it loads bases of one contig on
// demand as a window that follows the records forward, so the bases loaded
// stay proportional to those the records cover. A marks view, of the lean
// pass, holds no bases: only how many it covers and where the 'N's among
// them lie, all that the shapes of records depend on (shapes_ref.go).
type refView struct {
	// src and id name the contig a window view loads from; src is nil for
	// a fixed view. scan is src's scanner in a marks window view.
	src  ReferenceSource
	scan ReferenceScanner
	id   int
	// marks: the view holds size bases' runs of 'N' in runs, not buf.
	marks bool

	buf   []byte
	start int64 // 0-based position of buf[0]
	size  int64 // a marks view's bases from start
	runs  [][2]int64
	nRun  int // firstRun's last answer
	// limit is the exclusive 0-based end the decoder may read (htslib's ref_end).
	limit int64
	// nFrom and nNext remember hasN's last scan of buf, or of runs (when
	// nScanned): no 'N' in [nFrom, nNext), and nNext is an 'N' or the end.
	nFrom, nNext int64
	nScanned     bool
}

// A window view loads at least minWindow bases when it starts afresh. While
// records come in order it doubles each time it moves on, or jumps ahead
// by no more than its size (long reads lie apart by about their length),
// up to maxWindow, so that a run of records costs few loads and a slice of
// one read only a little more than the read.
const (
	minWindow = 1 << 10
	maxWindow = 1 << 20
)

// window makes v a window view of contig id of src, a marks view loaded
// through scan when scan is not nil. It keeps what it holds when that is
// of the same contig and kind: consecutive slices of a container usually
// lie close together. The caller sets limit.
func (v *refView) window(src ReferenceSource, id int, scan ReferenceScanner) {
	if v.src == nil || v.id != id || v.marks != (scan != nil) {
		*v = refView{src: src, scan: scan, marks: scan != nil, id: id, buf: v.buf[:0], runs: v.runs[:0]}
	}
}

// drop forgets the source and bases of v, keeping its buffers.
func (v *refView) drop() { *v = refView{buf: v.buf[:0], runs: v.runs[:0]} }

// end is the exclusive end of the bases v holds.
func (v *refView) end() int64 {
	if v.marks {
		return v.start + v.size
	}
	return v.start + int64(len(v.buf))
}

// slice returns the bases of [from, to) (nil for a marks view). Callers
// check the range against limit first, as htslib does.
func (v *refView) slice(from, to int64) ([]byte, error) {
	if b, ok := v.held(from, to); ok {
		return b, nil
	}
	return v.sliceSlow(from, to)
}

// held returns the bases of [from, to) when the view holds them (nil
// from a marks view that covers them): slice's common case, small enough
// to inline.
func (v *refView) held(from, to int64) ([]byte, bool) {
	i, j := uint64(from-v.start), uint64(to-v.start)
	if v.marks {
		return nil, i <= j && j <= uint64(v.size)
	}
	if i > j || j > uint64(len(v.buf)) {
		return nil, false
	}
	return v.buf[i:j], true
}

// sliceSlow is slice past held.
func (v *refView) sliceSlow(from, to int64) ([]byte, error) {
	if from >= v.start && to <= v.end() && from <= to {
		if v.marks {
			return nil, nil
		}
		return v.buf[from-v.start : to-v.start], nil
	}
	if v.src == nil || from < 0 || to > v.limit || from > to {
		return nil, errBeyondSlice(to)
	}
	if err := v.load(from, to); err != nil {
		return nil, err
	}
	if v.marks {
		return nil, nil
	}
	return v.buf[:to-from], nil
}

// load moves the window to start at from and cover at least to. When from
// lies inside the current window, the bases from there on are kept and
// only the rest is read.
func (v *refView) load(from, to int64) error {
	end := v.end()
	size, at := int64(minWindow), from
	if from >= v.start && from-end <= end-v.start {
		// Moving on, or forward past the window by at most its size:
		// records dense enough for a window twice as large.
		size = min(max(2*(end-v.start), minWindow), maxWindow)
	}
	keep := from >= v.start && from <= end
	if keep {
		at = end
	}
	stop := min(max(to, from+size), v.limit)
	if v.marks {
		return v.loadMarks(from, to, at, stop, keep)
	}
	k := 0
	if keep {
		k = copy(v.buf, v.buf[from-v.start:])
	}
	v.reserve(k, k+int(stop-at))
	buf, err := v.src.Bases(v.buf[:k], v.id, at, stop)
	v.start, v.nScanned = from, false
	if err != nil {
		v.buf = buf[:0]
		return err
	}
	v.buf = buf
	if int64(len(buf)) < to-from {
		return fmt.Errorf("%w: reference returned %d bases for [%d,%d)", ErrReference, len(buf)-k, at, stop)
	}
	return nil
}

// reserve makes room in v's buffer for n bases, keeping its first k.
// The first growth is to a window of maxWindow and a quarter: grown by
// Bases instead, a window doubling up to maxWindow was made anew at each
// step, and each new buffer was fresh memory to fault in.
func (v *refView) reserve(k, n int) {
	if cap(v.buf) >= n {
		return
	}
	b := make([]byte, k, max(n+n/4, maxWindow+maxWindow/4))
	copy(b, v.buf[:k])
	v.buf = b
}

// hasN reports whether the bases of [from, to), which a call of slice has
// just returned, hold an 'N'. Records come sorted, so one scan ahead to
// the next 'N' answers the checks of many reads.
func (v *refView) hasN(from, to int64) bool {
	if !v.nScanned || from < v.nFrom || from > v.nNext {
		v.scanN(from)
	}
	return v.nNext < to
}

// scanN is hasN's scan ahead from from, kept apart so that hasN inlines.
func (v *refView) scanN(from int64) {
	if v.marks {
		v.nextN(from)
		return
	}
	rest := v.buf[from-v.start:]
	v.nFrom, v.nNext, v.nScanned = from, from+int64(len(rest)), true
	if i := bytes.IndexByte(rest, 'N'); i >= 0 {
		v.nNext = from + int64(i)
	}
}

// at returns the base at pos (0 from a marks view, which checks only that
// the view covers it).
func (v *refView) at(pos int64) (byte, error) {
	if b, ok := v.held(pos, pos+1); ok {
		if v.marks {
			return 0, nil
		}
		return b[0], nil
	}
	b, err := v.slice(pos, pos+1)
	if err != nil || v.marks {
		return 0, err
	}
	return b[0], nil
}
