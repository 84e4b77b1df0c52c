// Package bai builds BAI indexes (SAMv1 §5.2) byte-identical to those
// that htslib 1.16 (samtools index: min_shift 14, 5 levels) writes for the
// same coordinate-sorted BAM.
package bai

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// ErrUnsorted is returned, wrapped, when records are not coordinate-sorted
// or references are not contiguous.
var ErrUnsorted = errors.New("bai: records not coordinate-sorted")

// ErrInvalid is returned, wrapped, for a record that cannot be indexed.
var ErrInvalid = errors.New("bai: record cannot be indexed")

const (
	minShift  = 14
	nLevels   = 5
	nBins     = ((1 << (3*nLevels + 3)) - 1) / 7 // 37449
	metaBin   = nBins + 1                        // 37450, the pseudo-bin
	maxPos    = int64(1) << (minShift + 3*nLevels)
	noBin     = ^uint32(0)
	markerGap = 0x10000 // chunks closer than this many compressed bytes merge into the parent bin
)

// chunk is a [u, v) pair of virtual offsets (or, in the pseudo-bin, two
// counts).
type chunk struct{ u, v uint64 }

// refIndex is the index of one reference.
type refIndex struct {
	bins   *binHash // nil until the reference has a record
	linear []uint64 // 16 kbp windows; ^0 marks a window not yet set
}

// Builder accumulates alignments in file order and produces a BAI, like
// htslib's hts_idx_push and hts_idx_finish (SAMv1 §5.2).
type Builder struct {
	refs    []refIndex
	lists   [][]chunk // chunk lists, indexed by binHash values
	noCoor  uint64
	started bool

	lastBin, saveBin   uint32
	lastTid, saveTid   int32
	lastCoor           int64
	lastOff, saveOff   uint64
	offBeg, offEnd     uint64
	nMapped, nUnmapped uint64
	finished           bool
	err                error
}

// NewBuilder returns a Builder for a BAM whose header has nRef references.
func NewBuilder(nRef int) *Builder {
	if nRef < 0 {
		nRef = 0
	}
	return &Builder{
		refs:     make([]refIndex, nRef),
		lastBin:  noBin,
		saveBin:  noBin,
		lastTid:  -1,
		saveTid:  -1,
		lastCoor: 0xffffffff,
	}
}

// reg2bin is htslib's hts_reg2bin for min_shift 14 and 5 levels (SAMv1
// §5.3).
func reg2bin(beg, end int64) uint32 {
	end--
	s, t := uint(minShift), int64(((1<<(3*nLevels))-1)/7)
	for l := nLevels; l > 0; l-- {
		if beg>>s == end>>s {
			return uint32(t + beg>>s)
		}
		s += 3
		t -= 1 << (3 * (l - 1))
	}
	return 0
}

// insert appends the chunk [u, v) to bin of reference tid.
func (b *Builder) insert(tid int32, bin uint32, u, v uint64) {
	if tid < 0 || int(tid) >= len(b.refs) {
		return // unreachable: add never saves an unplaced bin
	}
	r := &b.refs[tid]
	if r.bins == nil {
		r.bins = &binHash{}
	}
	x, isNew := r.bins.put(bin)
	if isNew {
		r.bins.vals[x] = int32(len(b.lists))
		b.lists = append(b.lists, nil)
	}
	k := r.bins.vals[x]
	b.lists[k] = append(b.lists[k], chunk{u, v})
}

// Add records one alignment in file order: its refID (-1 when unplaced),
// 0-based [beg, end) (end as htslib's bam_endpos gives it), whether it is
// unmapped (flag 0x4), and the BGZF virtual offsets of its first byte and
// of the byte after it. samtools index sees a record that ends a block as
// ending at the next block's start (in-block offset 0); a vStart beyond the
// previous record's vEnd is taken as such a block change (as htslib's
// hts_idx_amend_last does when indexing while writing), so both forms
// give the same index. vStart must not go backwards. Unmapped
// reads that have a position are indexed at [beg, end) and counted as
// unmapped; unplaced reads (refID -1) must come last and are only counted
// in n_no_coor.
func (b *Builder) Add(refID int32, beg, end int64, unmapped bool, vStart, vEnd uint64) error {
	if b.err != nil {
		return b.err
	}
	if b.finished {
		return fmt.Errorf("%w: Add after Finish", ErrInvalid)
	}
	if err := b.add(refID, beg, end, unmapped, vStart, vEnd); err != nil {
		b.err = err
		return err
	}
	return nil
}

func (b *Builder) add(tid int32, beg, end int64, unmapped bool, vStart, vEnd uint64) error {
	if tid < -1 || int(tid) >= len(b.refs) {
		return fmt.Errorf("%w: refID %d outside [-1, %d)", ErrInvalid, tid, len(b.refs))
	}
	if !b.started {
		// htslib starts from the offset just after the header, which is
		// the first record's start.
		b.started = true
		b.lastOff, b.saveOff, b.offBeg, b.offEnd = vStart, vStart, vStart, vStart
	}
	if vStart < b.lastOff {
		return fmt.Errorf("%w: record starts at virtual offset %#x, before the previous one ended (%#x)", ErrInvalid, vStart, b.lastOff)
	}
	// Like hts_idx_amend_last: a record that starts a new block rather
	// than at the previous record's end offset is indexed from its start.
	b.lastOff = vStart
	if tid < 0 {
		beg, end = -1, 0
	} else if beg > maxPos || end > maxPos {
		return fmt.Errorf("%w: region %d..%d on reference %d exceeds the BAI limit %d", ErrInvalid, beg, end, tid, maxPos)
	}
	if b.lastTid != tid {
		if tid >= 0 && b.noCoor != 0 {
			return fmt.Errorf("%w: reads on reference %d after unplaced reads", ErrUnsorted, tid)
		}
		if tid >= 0 && b.refs[tid].bins != nil {
			return fmt.Errorf("%w: reference %d is not contiguous", ErrUnsorted, tid)
		}
		b.lastTid = tid
		b.lastBin = noBin
	} else if tid >= 0 && b.lastCoor > beg {
		return fmt.Errorf("%w: position %d after %d on reference %d", ErrUnsorted, beg, b.lastCoor, tid)
	}
	if end < beg {
		return fmt.Errorf("%w: end %d before begin %d on reference %d", ErrInvalid, end, beg, tid)
	}
	if tid >= 0 {
		r := &b.refs[tid]
		if r.bins == nil {
			r.bins = &binHash{}
		}
		if beg < 0 {
			beg = 0
		}
		if end <= 0 {
			end = 1
		}
		lo, hi := beg>>minShift, (end-1)>>minShift
		for int64(len(r.linear)) <= hi {
			r.linear = append(r.linear, ^uint64(0))
		}
		for i := lo; i <= hi; i++ {
			if r.linear[i] == ^uint64(0) {
				r.linear[i] = b.lastOff
			}
		}
	} else {
		b.noCoor++
	}
	bin := reg2bin(beg, end)
	if b.lastBin != bin {
		if b.saveBin != noBin {
			b.insert(b.saveTid, b.saveBin, b.saveOff, b.lastOff)
		}
		if b.lastBin == noBin && b.saveBin != noBin {
			// Change of reference: close the previous one's pseudo-bin.
			b.offEnd = b.lastOff
			b.insert(b.saveTid, metaBin, b.offBeg, b.offEnd)
			b.insert(b.saveTid, metaBin, b.nMapped, b.nUnmapped)
			b.nMapped, b.nUnmapped = 0, 0
			b.offBeg = b.offEnd
		}
		b.saveOff = b.lastOff
		b.saveBin, b.lastBin = bin, bin
		b.saveTid = tid
	}
	if unmapped {
		b.nUnmapped++
	} else {
		b.nMapped++
	}
	b.lastOff = vEnd
	b.lastCoor = beg
	return nil
}

// Finish closes the index at finalVOffset (the virtual offset after the
// last record, normally the EOF block's start << 16) and returns the .bai
// bytes (SAMv1 §5.2): magic, n_ref, per reference its bins in htslib's
// hash order (the pseudo-bin 37450 holding the reference's start and end
// offsets and its mapped and unmapped counts) and its linear index, and
// finally n_no_coor.
func (b *Builder) Finish(finalVOffset uint64) ([]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.finished {
		return nil, fmt.Errorf("%w: Finish called twice", ErrInvalid)
	}
	b.finished = true
	if b.saveTid >= 0 {
		b.insert(b.saveTid, b.saveBin, b.saveOff, finalVOffset)
		b.insert(b.saveTid, metaBin, b.offBeg, finalVOffset)
		b.insert(b.saveTid, metaBin, b.nMapped, b.nUnmapped)
	}
	for i := range b.refs {
		fillLinear(b.refs[i].linear)
		b.compress(&b.refs[i])
	}
	return b.encode(), nil
}

// fillLinear gives each unset window the offset of the next set one.
func fillLinear(l []uint64) {
	for i := len(l) - 2; i >= 0; i-- {
		if l[i] == ^uint64(0) {
			l[i] = l[i+1]
		}
	}
}

func binParent(bin uint32) uint32 { return (bin - 1) >> 3 }

// binFirst is the first bin of level l.
func binFirst(l int) uint32 { return ((1 << (3 * l)) - 1) / 7 }

func sortChunks(c []chunk) {
	slices.SortFunc(c, func(a, b chunk) int {
		switch {
		case a.u < b.u:
			return -1
		case a.u > b.u:
			return 1
		}
		return 0
	})
}

// compress merges small bins into their parents and adjacent chunks that
// start in the same BGZF block, like htslib's compress_binning.
func (b *Builder) compress(r *refIndex) {
	h := r.bins
	if h == nil {
		return
	}
	for l := nLevels; l > 0; l-- {
		start := binFirst(l)
		for k := uint32(0); k < h.buckets(); k++ {
			if h.state[k] != stateUsed || h.keys[k] >= nBins || h.keys[k] < start {
				continue
			}
			p := &b.lists[h.vals[k]]
			if l < nLevels && len(*p) > 1 {
				sortChunks(*p)
			}
			pl := *p
			if (pl[len(pl)-1].v>>16)-(pl[0].u>>16) < markerGap {
				kp, ok := h.get(binParent(h.keys[k]))
				if !ok {
					continue
				}
				q := &b.lists[h.vals[kp]]
				*q = append(*q, pl...)
				*p = nil
				h.del(k)
			}
		}
	}
	if k, ok := h.get(0); ok {
		sortChunks(b.lists[h.vals[k]])
	}
	for k := uint32(0); k < h.buckets(); k++ {
		if h.state[k] != stateUsed || h.keys[k] >= nBins {
			continue
		}
		p := &b.lists[h.vals[k]]
		c := *p
		m := 0
		for l := 1; l < len(c); l++ {
			if c[m].v>>16 >= c[l].u>>16 {
				if c[m].v < c[l].v {
					c[m].v = c[l].v
				}
			} else {
				m++
				c[m] = c[l]
			}
		}
		*p = c[:m+1]
	}
}

// encode serialises the finished index.
func (b *Builder) encode() []byte {
	le := binary.LittleEndian
	out := []byte{'B', 'A', 'I', 1}
	out = le.AppendUint32(out, uint32(len(b.refs)))
	for i := range b.refs {
		r := &b.refs[i]
		h := r.bins
		if h == nil {
			out = le.AppendUint32(out, 0)
		} else {
			out = le.AppendUint32(out, h.size)
			for k := uint32(0); k < h.buckets(); k++ {
				if h.state[k] != stateUsed {
					continue
				}
				c := b.lists[h.vals[k]]
				out = le.AppendUint32(out, h.keys[k])
				out = le.AppendUint32(out, uint32(len(c)))
				for _, x := range c {
					out = le.AppendUint64(out, x.u)
					out = le.AppendUint64(out, x.v)
				}
			}
		}
		out = le.AppendUint32(out, uint32(len(r.linear)))
		for _, x := range r.linear {
			out = le.AppendUint64(out, x)
		}
	}
	return le.AppendUint64(out, b.noCoor)
}
