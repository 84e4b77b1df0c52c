package bai

import (
	"fmt"
	"iter"
	"slices"
)

// This file generalises the BAI machinery to a binning scheme of any
// min_shift and depth (SAMv1 §5.1.1, CSIv1), so that other index formats
// (encode/csi) share htslib's bin, chunk and linear-index logic instead of
// copying it; Builder is the scheme of min_shift 14 and depth 5.

// MaxDepth is the deepest binning scheme Index supports: with depth 9 the
// largest bin number, ((1<<30)-1)/7, still fits htslib's int bin numbers.
const MaxDepth = 9

// Chunk is a [Beg, End) pair of BGZF virtual offsets in a bin's chunk list
// (SAMv1 §5.2); in a pseudo-bin it holds two offsets or two counts.
type Chunk struct{ Beg, End uint64 }

// BinFirst is the number of the first bin of level l (SAMv1 §5.3, CSIv1).
func BinFirst(l int) uint32 { return binFirst(l) }

// BinLimit is the number of real bins of a scheme of the given depth:
// valid bins are [0, BinLimit(depth)) and the pseudo-bin is
// BinLimit(depth)+1 (CSIv1 bin_limit).
func BinLimit(depth int) uint32 { return binFirst(depth + 1) }

// BinLevel is the level of a bin, 0 for the root (CSIv1; htslib's
// hts_bin_level).
func BinLevel(bin uint32) int {
	l := 0
	for ; bin != 0; bin = binParent(bin) {
		l++
	}
	return l
}

// Reg2Bin is the bin of the 0-based region [beg, end) in a scheme of the
// given min_shift and depth (CSIv1 reg2bin).
func Reg2Bin(beg, end int64, minShift, depth int) uint32 {
	end--
	s := uint(minShift)
	for l := depth; l > 0; l-- {
		if beg>>s == end>>s {
			return binFirst(l) + uint32(beg>>s)
		}
		s += 3
	}
	return 0
}

// BinIndex is the binning index of one reference: bin numbers mapped to
// chunk lists, iterated in the bucket order of htslib's khash map (the
// order in which htslib writes bins). The zero value is empty and ready.
type BinIndex struct {
	h     binHash
	lists [][]Chunk
}

// Append adds c to the chunk list of bin.
func (x *BinIndex) Append(bin uint32, c Chunk) {
	k, isNew := x.h.put(bin)
	if isNew {
		x.h.vals[k] = int32(len(x.lists))
		x.lists = append(x.lists, nil)
	}
	i := x.h.vals[k]
	x.lists[i] = append(x.lists[i], c)
}

// Len is the number of bins.
func (x *BinIndex) Len() int { return int(x.h.size) }

// All yields each bin and its chunk list in htslib's bucket order.
func (x *BinIndex) All() iter.Seq2[uint32, []Chunk] {
	return func(yield func(uint32, []Chunk) bool) {
		for k := uint32(0); k < x.h.buckets(); k++ {
			if x.h.state[k] == stateUsed && !yield(x.h.keys[k], x.lists[x.h.vals[k]]) {
				return
			}
		}
	}
}

func sortChunkList(c []Chunk) {
	slices.SortFunc(c, func(a, b Chunk) int {
		switch {
		case a.Beg < b.Beg:
			return -1
		case a.Beg > b.Beg:
			return 1
		}
		return 0
	})
}

// Compress is htslib's compress_binning for a scheme of the given depth:
// from the deepest level up, a bin whose chunks span less than 64 KiB of
// compressed file moves them into its parent (when the parent exists);
// then, in every real bin, chunks starting in the BGZF block where the
// previous one ends are merged. Bins at or beyond BinLimit(depth) (the
// pseudo-bin) are left alone.
func (x *BinIndex) Compress(depth int) {
	h := &x.h
	limit := BinLimit(depth)
	for l := depth; l > 0; l-- {
		start := binFirst(l)
		for k := uint32(0); k < h.buckets(); k++ {
			if h.state[k] != stateUsed || h.keys[k] >= limit || h.keys[k] < start {
				continue
			}
			p := &x.lists[h.vals[k]]
			if l < depth && len(*p) > 1 {
				sortChunkList(*p)
			}
			pl := *p
			if (pl[len(pl)-1].End>>16)-(pl[0].Beg>>16) < markerGap {
				kp, ok := h.get(binParent(h.keys[k]))
				if !ok {
					continue
				}
				q := &x.lists[h.vals[kp]]
				*q = append(*q, pl...)
				*p = nil
				h.del(k)
			}
		}
	}
	if k, ok := h.get(0); ok {
		sortChunkList(x.lists[h.vals[k]])
	}
	for k := uint32(0); k < h.buckets(); k++ {
		if h.state[k] != stateUsed || h.keys[k] >= limit {
			continue
		}
		p := &x.lists[h.vals[k]]
		c := *p
		m := 0
		for l := 1; l < len(c); l++ {
			if c[m].End>>16 >= c[l].Beg>>16 {
				c[m].End = max(c[m].End, c[l].End)
			} else {
				m++
				c[m] = c[l]
			}
		}
		*p = c[:m+1]
	}
}

// linearRun sets windows [lo, hi] of a linear index to off.
type linearRun struct {
	lo, hi int64
	off    uint64
}

// Linear is the linear index of one reference (SAMv1 §5.1.3), stored as
// the runs of windows each record newly set, so that its size follows the
// records rather than the reference length. The zero value is empty.
type Linear struct{ runs []linearRun }

// set records that the record starting at off covers windows [lo, hi].
// Records come sorted by start, so windows before the last set one are
// either set already or never will be.
func (li *Linear) set(lo, hi int64, off uint64) {
	if n := len(li.runs); n > 0 {
		last := li.runs[n-1].hi
		if hi <= last {
			return
		}
		lo = max(lo, last+1)
	}
	li.runs = append(li.runs, linearRun{lo, hi, off})
}

// Len is the number of windows, one more than the last one set.
func (li *Linear) Len() int64 {
	if len(li.runs) == 0 {
		return 0
	}
	return li.runs[len(li.runs)-1].hi + 1
}

// At is window w's offset after htslib's back-fill (an unset window takes
// the offset of the next set one); false when w >= Len().
func (li *Linear) At(w int64) (uint64, bool) {
	i, _ := slices.BinarySearchFunc(li.runs, w, func(r linearRun, w int64) int {
		if r.hi < w {
			return -1
		}
		return 1
	})
	if w < 0 || i == len(li.runs) {
		return 0, false
	}
	return li.runs[i].off, true
}

// Index accumulates alignments in file order for a binning scheme of any
// min_shift and depth, like htslib's hts_idx_push and hts_idx_finish
// (SAMv1 §5.2, CSIv1): per reference a BinIndex (with the pseudo-bin
// BinLimit(depth)+1 holding the reference's offsets and mapped and
// unmapped counts) and a Linear index, plus the unplaced read count.
type Index struct {
	minShift, depth int
	maxPos          int64
	refs            []indexRef
	noCoor          uint64
	started         bool

	lastBin, saveBin   uint32
	lastTid, saveTid   int32
	lastCoor           int64
	lastOff, saveOff   uint64
	offBeg             uint64
	nMapped, nUnmapped uint64
	finished           bool
	err                error
}

type indexRef struct {
	bins   *BinIndex // nil until the reference has a record
	linear Linear
}

// NewIndex returns an Index for nRef references with windows of
// 2^minShift bases and the given depth (0..MaxDepth).
func NewIndex(nRef, minShift, depth int) (*Index, error) {
	if depth < 0 || depth > MaxDepth || minShift < 0 || minShift+3*depth > 62 {
		return nil, fmt.Errorf("%w: min_shift %d, depth %d: want depth 0..%d and min_shift+3*depth <= 62", ErrInvalid, minShift, depth, MaxDepth)
	}
	return &Index{
		minShift: minShift,
		depth:    depth,
		maxPos:   int64(1) << (minShift + 3*depth),
		refs:     make([]indexRef, max(nRef, 0)),
		lastBin:  noBin,
		saveBin:  noBin,
		lastTid:  -1,
		saveTid:  -1,
		lastCoor: 0xffffffff,
	}, nil
}

// MinShift is the scheme's min_shift.
func (x *Index) MinShift() int { return x.minShift }

// Depth is the scheme's depth.
func (x *Index) Depth() int { return x.depth }

// NRef is the number of references.
func (x *Index) NRef() int { return len(x.refs) }

// Bins is the binning index of reference ref, nil when it has no records
// (or ref is out of range).
func (x *Index) Bins(ref int) *BinIndex {
	if ref < 0 || ref >= len(x.refs) {
		return nil
	}
	return x.refs[ref].bins
}

// Linear is the linear index of reference ref (empty when out of range).
func (x *Index) Linear(ref int) *Linear {
	if ref < 0 || ref >= len(x.refs) {
		return &Linear{}
	}
	return &x.refs[ref].linear
}

// NoCoor is the number of unplaced reads (n_no_coor).
func (x *Index) NoCoor() uint64 { return x.noCoor }

func (x *Index) insert(tid int32, bin uint32, u, v uint64) {
	if tid < 0 || int(tid) >= len(x.refs) {
		return // unreachable: push never saves an unplaced bin
	}
	r := &x.refs[tid]
	if r.bins == nil {
		r.bins = &BinIndex{}
	}
	r.bins.Append(bin, Chunk{u, v})
}

// Push records one alignment in file order, with the same arguments and
// rules as Builder.Add, against the scheme's limit, 2^(min_shift+3*depth).
func (x *Index) Push(refID int32, beg, end int64, unmapped bool, vStart, vEnd uint64) error {
	if x.err != nil {
		return x.err
	}
	if x.finished {
		return fmt.Errorf("%w: Push after Finish", ErrInvalid)
	}
	if err := x.push(refID, beg, end, unmapped, vStart, vEnd); err != nil {
		x.err = err
		return err
	}
	return nil
}

func (x *Index) push(tid int32, beg, end int64, unmapped bool, vStart, vEnd uint64) error {
	if tid < -1 || int(tid) >= len(x.refs) {
		return fmt.Errorf("%w: refID %d outside [-1, %d)", ErrInvalid, tid, len(x.refs))
	}
	if !x.started {
		x.started = true
		x.lastOff, x.saveOff, x.offBeg = vStart, vStart, vStart
	}
	if vStart < x.lastOff {
		return fmt.Errorf("%w: record starts at virtual offset %#x, before the previous one ended (%#x)", ErrInvalid, vStart, x.lastOff)
	}
	x.lastOff = vStart
	if tid < 0 {
		beg, end = -1, 0
	} else if beg > x.maxPos || end > x.maxPos {
		return fmt.Errorf("%w: region %d..%d on reference %d exceeds the index limit %d", ErrInvalid, beg, end, tid, x.maxPos)
	}
	if x.lastTid != tid {
		if tid >= 0 && x.noCoor != 0 {
			return fmt.Errorf("%w: reads on reference %d after unplaced reads", ErrUnsorted, tid)
		}
		if tid >= 0 && x.refs[tid].bins != nil {
			return fmt.Errorf("%w: reference %d is not contiguous", ErrUnsorted, tid)
		}
		x.lastTid = tid
		x.lastBin = noBin
	} else if tid >= 0 && x.lastCoor > beg {
		return fmt.Errorf("%w: position %d after %d on reference %d", ErrUnsorted, beg, x.lastCoor, tid)
	}
	if end < beg {
		return fmt.Errorf("%w: end %d before begin %d on reference %d", ErrInvalid, end, beg, tid)
	}
	if tid >= 0 {
		r := &x.refs[tid]
		if r.bins == nil {
			r.bins = &BinIndex{}
		}
		beg = max(beg, 0)
		if end <= 0 {
			end = 1
		}
		r.linear.set(beg>>x.minShift, (end-1)>>x.minShift, x.lastOff)
	} else {
		x.noCoor++
	}
	x.enterBin(tid, Reg2Bin(beg, end, x.minShift, x.depth))
	if unmapped {
		x.nUnmapped++
	} else {
		x.nMapped++
	}
	x.lastOff = vEnd
	x.lastCoor = beg
	return nil
}

// enterBin moves the index to bin of reference tid for a record starting
// at x.lastOff: when the bin changes, the previous bin's chunk ends there,
// and when the reference changes (lastBin reset), so does the previous
// reference's pseudo-bin, with its mapped and unmapped counts.
func (x *Index) enterBin(tid int32, bin uint32) {
	if x.lastBin == bin {
		return
	}
	if x.saveBin != noBin {
		x.insert(x.saveTid, x.saveBin, x.saveOff, x.lastOff)
	}
	if x.lastBin == noBin && x.saveBin != noBin {
		meta := BinLimit(x.depth) + 1
		x.insert(x.saveTid, meta, x.offBeg, x.lastOff)
		x.insert(x.saveTid, meta, x.nMapped, x.nUnmapped)
		x.nMapped, x.nUnmapped = 0, 0
		x.offBeg = x.lastOff
	}
	x.saveOff = x.lastOff
	x.saveBin, x.lastBin = bin, bin
	x.saveTid = tid
}

// Finish closes the index at finalVOffset (the virtual offset after the
// last record) and compresses every reference's bins (BinIndex.Compress).
// The linear indexes are left as they are: a format that stores per-bin
// offsets computes them from Linear.At.
func (x *Index) Finish(finalVOffset uint64) error {
	if x.err != nil {
		return x.err
	}
	if x.finished {
		return fmt.Errorf("%w: Finish called twice", ErrInvalid)
	}
	x.finished = true
	if x.saveTid >= 0 {
		meta := BinLimit(x.depth) + 1
		x.insert(x.saveTid, x.saveBin, x.saveOff, finalVOffset)
		x.insert(x.saveTid, meta, x.offBeg, finalVOffset)
		x.insert(x.saveTid, meta, x.nMapped, x.nUnmapped)
	}
	for i := range x.refs {
		if b := x.refs[i].bins; b != nil {
			b.Compress(x.depth)
		}
	}
	return nil
}
