package decode

import (
	"crypto/md5"
	"fmt"
	"hash"
	"sort"
)

// ReferenceScanner is a ReferenceSource that can also tell the lean pass
// (ContainerShapes) what the shapes of records depend on in the bases of
// a range without copying them out: how many there are, the MD5 the slice
// header is checked against, and where the 'N's lie (MD and NM count an
// 'N' of the reference as a mismatch; no other base changes a length).
type ReferenceScanner interface {
	// ScanBases reads the bases of [start, end) of reference refID that
	// Bases would append (the range clamped alike, uppercased): it returns
	// how many there are, writes them to h when h is not nil, and appends
	// to runs the maximal runs [from, to) of 'N' among them, ascending, a
	// run continuing the last one of runs extending it.
	ScanBases(refID int, start, end int64, h hash.Hash, runs [][2]int64) (n int64, out [][2]int64, err error)
}

// markSliceRef is sliceRef's reading of [from, end) of the reference into
// a marks view whose limit is end, checking the slice's MD5 on the way.
func (d *Decoder) markSliceRef(sc ReferenceScanner, sh *SliceHeader, v *refView, from, end int64) error {
	id := sh.RefSeqID
	l := &d.lean
	var h hash.Hash
	if sh.RefMD5 != [16]byte{} && !d.opt.IgnoreMD5 {
		if l.md5 == nil {
			l.md5 = md5.New()
		}
		l.md5.Reset()
		h = l.md5
	}
	// checkMD5 hashes at most the span's bases: the range never holds
	// more, as sliceRef sets it.
	to := max(min(end, from+sh.RefSpan), from)
	n, runs, err := sc.ScanBases(int(id), from, to, h, l.runs[:0])
	l.runs = runs
	if err != nil {
		return fmt.Errorf("%w: %s:%d-%d: %w", ErrReference, d.f.Refs[id].Name, max(sh.RefStart, 0), end, err)
	}
	*v = refView{marks: true, start: from, size: n, runs: runs, limit: end}
	if h != nil {
		var got [16]byte
		h.Sum(got[:0])
		if got != sh.RefMD5 {
			return d.md5Error(sh, got)
		}
	}
	return nil
}

// loadMarks is load for a marks window: its runs are so small that it
// keeps all it has read of the contig (records sorted by position may
// start before the last load's from), and when from lies within them
// reads on from their end, at; else it starts afresh at from. Which
// bases a window holds changes no answer, only what is read again.
func (v *refView) loadMarks(from, to, at, stop int64, keep bool) error {
	if !keep {
		v.start, v.size, v.runs = from, 0, v.runs[:0]
	}
	n, runs, err := v.scan.ScanBases(v.id, at, stop, nil, v.runs)
	v.runs, v.nScanned = runs, false
	if err != nil {
		v.size = 0
		v.runs = v.runs[:0]
		return err
	}
	v.size = at - v.start + n
	if v.start+v.size < to {
		return fmt.Errorf("%w: reference returned %d bases for [%d,%d)", ErrReference, n, at, stop)
	}
	return nil
}

// nextN is hasN's look ahead in a marks view: the first 'N' at or after
// from, or the end of the view, remembered as hasN's scan.
func (v *refView) nextN(from int64) int64 {
	next := v.end()
	if i := v.firstRun(from); i < len(v.runs) {
		next = max(v.runs[i][0], from)
	}
	v.nFrom, v.nNext, v.nScanned = from, next, true
	return next
}

// firstRun is the index of the first run of 'N' of v that ends after pos.
// Records come sorted: it walks on from the last answer when pos has not
// gone back past it.
func (v *refView) firstRun(pos int64) int {
	i := v.nRun
	if i > len(v.runs) || i > 0 && v.runs[i-1][1] > pos {
		i = sort.Search(len(v.runs), func(i int) bool { return v.runs[i][1] > pos })
	}
	for i < len(v.runs) && v.runs[i][1] <= pos {
		i++
	}
	v.nRun = i
	return i
}

// matchMarks is matchN for the k matching bases at pos of a marks view.
func (m *mdRules) matchMarks(v *refView, pos, k int64) {
	end := pos + k
	for i := v.firstRun(pos); i < len(v.runs) && v.runs[i][0] < end && pos < end; i++ {
		a, b := max(v.runs[i][0], pos), min(v.runs[i][1], end)
		m.dist += a - pos
		for range b - a {
			m.mismatch('N')
			m.edits++
		}
		pos = b
	}
	m.dist += end - pos
}
