// Package layout is what the engine persists of a virtual BAM: its
// Layout (the segments of BGZF blocks, one per container) with its index,
// as a File in the layout index format, kept in a cache directory (Dir)
// under the trust model of docs/trust.md.
package layout

import (
	"sort"

	"github.com/cramfs/cramfs/encode/bgzf"
)

// HeaderSegment is the segment number of the header's blocks.
const HeaderSegment = -1

// Segment is one contiguous run of BGZF blocks in the virtual BAM: the
// header's blocks, or the records of one CRAM data container (CRAMv3 §7)
// compressed to BGZF (SAMv1 §4.1). No BGZF block spans two segments.
type Segment struct {
	Offset  int64  // byte offset of the first block in the virtual BAM
	CompLen int64  // length of the BGZF blocks; 0 for a container without records
	RawLen  int64  // length of the BAM data the blocks hold
	Digest  uint32 // segmentDigest of the BGZF blocks, unless NoDigest
	// NoDigest marks a segment measured, not built, by the scan (level 0,
	// a source.LayoutScanner): its lengths follow from its records' lengths, its
	// digest is learned from its first build (see layoutState.learn).
	NoDigest bool
	// Sum is the content sum of the container the scan measured (see
	// source.Sum), when HasSum: a measured segment's first build must
	// be decoded from bytes of the same sum. A measured segment without
	// one (an index of format 5) is checked against the file's identity.
	Sum    uint32
	HasSum bool
}

// End returns the offset just past the segment.
func (s Segment) End() int64 { return s.Offset + s.CompLen }

// Layout is the shape of a virtual BAM (SAMv1 §4): the BGZF blocks of the
// header, one segment per CRAM data container, then the BGZF EOF block.
//
// INVARIANT: contiguous: Header.Offset == 0 < Header.CompLen, each
// segment begins where the one before ends (the first at Header.CompLen),
// and Size is where the last ends plus the EOF block; SegmentAt's search
// relies on it (the scan and Parse derive the offsets so)
// INVARIANT: !Header.NoDigest; a segment with NoDigest has Digest 0
// INVARIANT: a segment's CompLen is 0 exactly when its RawLen is
// INVARIANT: HasSum => NoDigest (a content sum is a measured segment's);
// !HasSum => Sum == 0
type Layout struct {
	Level    int       // deflate level of the blocks; 0 = stored
	Header   Segment   // the BAM header's blocks, at offset 0
	Segments []Segment // one per data container, in file order
	Size     int64     // total size including the 28-byte EOF block
}

// Clone returns a deep copy of l.
func (l Layout) Clone() Layout {
	l.Segments = append([]Segment(nil), l.Segments...)
	return l
}

// EOFOffset returns the offset of the BGZF EOF block.
func (l *Layout) EOFOffset() int64 { return l.Size - int64(len(bgzf.EOF)) }

// MaxSegment returns the size of the largest segment's BGZF bytes.
func (l *Layout) MaxSegment() int64 {
	var n int64
	for _, s := range l.Segments {
		n = max(n, s.CompLen)
	}
	return n
}

// SegmentAt returns the segment holding offset off, which must lie
// between the header and the EOF block.
func (l *Layout) SegmentAt(off int64) int {
	segs := l.Segments
	return sort.Search(len(segs), func(i int) bool { return segs[i].End() > off })
}
