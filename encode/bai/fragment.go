package bai

import (
	"fmt"
)

// A file's index can be built in pieces: a Fragment holds what one run of
// consecutive records (a CRAM container's, say) adds to an Index, computed
// apart from it (on another goroutine, with virtual offsets relative to
// where the run's blocks start), and Index.Merge adds the fragments in
// file order. The result is byte for byte what Push gives record by
// record: a fragment keeps, per run of records sharing a reference and a
// bin, only what Push's state carries from one record to the next (where
// the run starts and ends, its last position, its mapped and unmapped
// counts), and the linear-index windows its records newly set.

// Scheme is the binning scheme of an index: its reference count,
// min_shift and depth (SAMv1 §5.1.1, CSIv1). The zero Scheme is the one
// of an index that is not built.
type Scheme struct {
	NRef, MinShift, Depth int
}

// binRun is a run of consecutive records on one reference in one bin:
// Push inserts no chunk between them.
type binRun struct {
	tid              int32
	bin              uint32
	vStart, vEnd     uint64 // the first record's start, the last one's end
	lastBeg          int64  // the last record's position, as Push keeps it
	mapped, unmapped uint64
}

// linearEntry is a run of linear-index windows a record newly set.
type linearEntry struct {
	tid int32
	linearRun
}

// Fragment is what a run of records adds to an index of a Scheme. It is
// built by one goroutine (Add) and then merged by another (Index.Merge);
// it is not safe for concurrent use.
type Fragment struct {
	// Constant.
	s      Scheme
	maxPos int64

	// Mutable, by Add. firstBeg is the first record's position as given
	// (what Push compares with the previous record's); seen holds the
	// references the fragment entered, once it has entered two.
	runs     []binRun
	lin      []linearEntry
	firstBeg int64
	lastOff  uint64
	lastCoor int64
	linLast  int64 // last window set on the current reference, -1 for none
	noCoor   bool  // an unplaced record was added
	seen     map[int32]bool
	err      error
}

// NewFragment returns an empty Fragment of scheme s, an Index's Scheme.
func NewFragment(s Scheme) *Fragment {
	return &Fragment{s: s, maxPos: int64(1) << (s.MinShift + 3*s.Depth)}
}

// Add adds one record, with Push's arguments and checks among the
// fragment's own records, its virtual offsets relative to the fragment's
// start. After an error the fragment refuses every record, and Merge
// refuses it: push its records one by one instead, to get the error Push
// gives in the whole file.
func (f *Fragment) Add(refID int32, beg, end int64, unmapped bool, vStart, vEnd uint64) error {
	if f.err != nil {
		return f.err
	}
	if err := f.add(refID, beg, end, unmapped, vStart, vEnd); err != nil {
		f.err = err
		return err
	}
	return nil
}

func (f *Fragment) add(tid int32, beg, end int64, unmapped bool, vStart, vEnd uint64) error {
	if tid < -1 || int(tid) >= f.s.NRef {
		return fmt.Errorf("%w: refID %d outside [-1, %d)", ErrInvalid, tid, f.s.NRef)
	}
	n := len(f.runs)
	if n > 0 && vStart < f.lastOff {
		return fmt.Errorf("%w: record starts at fragment offset %#x, before the previous one ended (%#x)", ErrInvalid, vStart, f.lastOff)
	}
	if tid < 0 {
		beg, end = -1, 0
	} else if beg > f.maxPos || end > f.maxPos {
		return fmt.Errorf("%w: region %d..%d on reference %d exceeds the index limit %d", ErrInvalid, beg, end, tid, f.maxPos)
	}
	newRef := n == 0 || f.runs[n-1].tid != tid
	switch {
	case n == 0:
		f.firstBeg = beg
	case newRef:
		if err := f.enter(tid); err != nil {
			return err
		}
	case tid >= 0 && f.lastCoor > beg:
		return fmt.Errorf("%w: position %d after %d on reference %d", ErrUnsorted, beg, f.lastCoor, tid)
	}
	if end < beg {
		return fmt.Errorf("%w: end %d before begin %d on reference %d", ErrInvalid, end, beg, tid)
	}
	if newRef {
		f.linLast = -1
	}
	if tid >= 0 {
		beg = max(beg, 0)
		if end <= 0 {
			end = 1
		}
		if lo, hi := beg>>f.s.MinShift, (end-1)>>f.s.MinShift; hi > f.linLast {
			f.lin = append(f.lin, linearEntry{tid, linearRun{max(lo, f.linLast+1), hi, vStart}})
			f.linLast = hi
		}
	} else {
		f.noCoor = true
	}
	bin := Reg2Bin(beg, end, f.s.MinShift, f.s.Depth)
	if newRef || f.runs[n-1].bin != bin {
		f.runs = append(f.runs, binRun{tid: tid, bin: bin, vStart: vStart})
	}
	r := &f.runs[len(f.runs)-1]
	r.vEnd, r.lastBeg = vEnd, beg
	if unmapped {
		r.unmapped++
	} else {
		r.mapped++
	}
	f.lastOff, f.lastCoor = vEnd, beg
	return nil
}

// enter checks a change of reference within the fragment, to tid, as Push
// does: placed reads may not follow unplaced ones, nor come back to a
// reference left.
func (f *Fragment) enter(tid int32) error {
	if tid < 0 {
		return nil
	}
	if f.noCoor {
		return fmt.Errorf("%w: reads on reference %d after unplaced reads", ErrUnsorted, tid)
	}
	if f.seen == nil {
		f.seen = map[int32]bool{}
		for _, r := range f.runs {
			f.seen[r.tid] = true
		}
	}
	if f.seen[tid] {
		return fmt.Errorf("%w: reference %d is not contiguous", ErrUnsorted, tid)
	}
	f.seen[tid] = true
	return nil
}

// Scheme is the index's binning scheme.
func (x *Index) Scheme() Scheme {
	return Scheme{NRef: len(x.refs), MinShift: x.minShift, Depth: x.depth}
}

// Merge adds the records of f, its virtual offsets shifted by shift (the
// virtual offset of where the fragment starts), as Push would have added
// them one by one. It returns false, changing nothing, when f cannot be
// merged whole: Add refused one of its records, or its records do not
// follow the index's last one in order (they start before it ends, or go
// back to a reference already left or after unplaced reads). Push the
// fragment's records one by one then: that gives the same index, or the
// error Push gives. An error is Push's: the index failed before, or is
// finished.
func (x *Index) Merge(f *Fragment, shift uint64) (bool, error) {
	if x.err != nil {
		return false, x.err
	}
	if x.finished {
		return false, fmt.Errorf("%w: Merge after Finish", ErrInvalid)
	}
	if f.s != x.Scheme() {
		return false, fmt.Errorf("%w: fragment of scheme %+v merged into an index of %+v", ErrInvalid, f.s, x.Scheme())
	}
	if f.err != nil || !x.follows(f, shift) {
		return false, nil
	}
	for _, e := range f.lin {
		x.refs[e.tid].linear.set(e.lo, e.hi, e.off+shift)
	}
	for i := range f.runs {
		x.pushRun(&f.runs[i], shift)
	}
	return true, nil
}

// follows reports whether the records of f pass Push's checks against the
// records pushed so far; Add has checked them among themselves.
func (x *Index) follows(f *Fragment, shift uint64) bool {
	if len(f.runs) == 0 {
		return true
	}
	first := &f.runs[0]
	if x.started && first.vStart+shift < x.lastOff {
		return false
	}
	for i := range f.runs {
		tid := f.runs[i].tid
		switch {
		case i > 0 && tid == f.runs[i-1].tid:
		case i == 0 && tid == x.lastTid:
			if tid >= 0 && x.lastCoor > f.firstBeg {
				return false
			}
		case tid >= 0 && (x.noCoor != 0 || x.refs[tid].bins != nil):
			return false
		}
	}
	return true
}

// pushRun is Push of the run's records, checked already.
func (x *Index) pushRun(r *binRun, shift uint64) {
	vs := r.vStart + shift
	if !x.started {
		x.started = true
		x.saveOff, x.offBeg = vs, vs
	}
	x.lastOff = vs
	if x.lastTid != r.tid {
		x.lastTid = r.tid
		x.lastBin = noBin
	}
	if r.tid >= 0 {
		if ref := &x.refs[r.tid]; ref.bins == nil {
			ref.bins = &BinIndex{}
		}
	} else {
		x.noCoor += r.mapped + r.unmapped
	}
	x.enterBin(r.tid, r.bin)
	x.nMapped += r.mapped
	x.nUnmapped += r.unmapped
	x.lastOff = r.vEnd + shift
	x.lastCoor = r.lastBeg
}

// Scheme is the BAI's binning scheme (min_shift 14, depth 5).
func (b *Builder) Scheme() Scheme { return b.idx.Scheme() }

// Merge adds a fragment's records as Add would one by one (Index.Merge).
func (b *Builder) Merge(f *Fragment, shift uint64) (bool, error) {
	if b.finished {
		return false, fmt.Errorf("%w: Merge after Finish", ErrInvalid)
	}
	return b.idx.Merge(f, shift)
}
