// Package bai builds BAI indexes (SAMv1 §5.2) byte-identical to those
// that htslib 1.16 (samtools index: min_shift 14, 5 levels) writes for the
// same coordinate-sorted BAM. The binning scheme itself (Index, in
// scheme.go) serves any min_shift and depth, so encode/csi shares it.
package bai

import (
	"encoding/binary"
	"errors"
	"fmt"
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

// Builder accumulates alignments in file order and produces a BAI, like
// htslib's hts_idx_push and hts_idx_finish (SAMv1 §5.2).
type Builder struct {
	idx      *Index
	finished bool
}

// NewBuilder returns a Builder for a BAM whose header has nRef references.
func NewBuilder(nRef int) *Builder {
	idx, err := NewIndex(max(nRef, 0), minShift, nLevels)
	if err != nil { // unreachable: the BAI scheme is valid
		panic(err)
	}
	return &Builder{idx: idx}
}

// reg2bin is htslib's hts_reg2bin for min_shift 14 and 5 levels (SAMv1
// §5.3).
func reg2bin(beg, end int64) uint32 { return Reg2Bin(beg, end, minShift, nLevels) }

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
	if b.finished {
		return fmt.Errorf("%w: Add after Finish", ErrInvalid)
	}
	return b.idx.Push(refID, beg, end, unmapped, vStart, vEnd)
}

// Finish closes the index at finalVOffset (the virtual offset after the
// last record, normally the EOF block's start << 16) and returns the .bai
// bytes: per reference its bins in htslib's hash order (the pseudo-bin
// 37450 with the reference's offsets and mapped/unmapped counts among
// them) and its linear index, then n_no_coor.
func (b *Builder) Finish(finalVOffset uint64) ([]byte, error) {
	if b.finished {
		return nil, fmt.Errorf("%w: Finish called twice", ErrInvalid)
	}
	b.finished = true
	if err := b.idx.Finish(finalVOffset); err != nil {
		return nil, err
	}
	return encode(b.idx), nil
}

// encode writes a finished Index of the BAI scheme (SAMv1 §5.2): bins in
// hash order, then the linear index, each unset window holding the offset
// of the next set one.
func encode(x *Index) []byte {
	le := binary.LittleEndian
	out := []byte{'B', 'A', 'I', 1}
	out = le.AppendUint32(out, uint32(x.NRef()))
	for i := range x.NRef() {
		if bins := x.Bins(i); bins == nil {
			out = le.AppendUint32(out, 0)
		} else {
			out = le.AppendUint32(out, uint32(bins.Len()))
			for bin, chunks := range bins.All() {
				out = le.AppendUint32(out, bin)
				out = le.AppendUint32(out, uint32(len(chunks)))
				for _, c := range chunks {
					out = le.AppendUint64(out, c.Beg)
					out = le.AppendUint64(out, c.End)
				}
			}
		}
		lin := x.Linear(i)
		out = le.AppendUint32(out, uint32(lin.Len()))
		for w := range lin.Len() {
			off, _ := lin.At(w)
			out = le.AppendUint64(out, off)
		}
	}
	return le.AppendUint64(out, x.NoCoor())
}

func binParent(bin uint32) uint32 { return (bin - 1) >> 3 }

// binFirst is the first bin of level l (level 0 is the root bin 0).
func binFirst(l int) uint32 { return ((1 << (3 * l)) - 1) / 7 }
