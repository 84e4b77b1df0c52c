// Package csi builds CSI indexes (CSIv1) of coordinate-sorted BAM files
// identical, once decompressed, to those samtools index -c (htslib 1.16,
// min_shift 14) writes.
//
// The binning, chunk merging and linear-index logic is htslib's
// hts_idx_push/hts_idx_finish and is shared with the BAI builder through
// encode/bai's Index; this package chooses the depth, computes the per-bin
// loffset and serialises the CSI.
package csi

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cramfs/cramfs/encode/bai"
	"github.com/cramfs/cramfs/encode/bgzf"
)

// ErrUnsorted is returned, wrapped, when records are not coordinate-sorted
// or references are not contiguous.
var ErrUnsorted = errors.New("csi: records not coordinate-sorted")

// ErrInvalid is returned, wrapped, for a record that cannot be indexed or
// a reference too long for the scheme.
var ErrInvalid = errors.New("csi: record cannot be indexed")

// MinShift is the min_shift samtools index -c uses by default (CSIv1).
const MinShift = 14

// Level is the BGZF compression level Finish uses, htslib's default for
// index files.
const Level = 6

// Depth is the depth htslib's sam_index chooses for min_shift 14 (CSIv1):
// the number of times 2^14 must be multiplied by 8 to reach the longest
// reference's length plus 256.
func Depth(maxRefLen int64) int {
	maxLen := max(maxRefLen, 0) + 256
	n := 0
	for s := int64(1) << MinShift; maxLen > s && n <= bai.MaxDepth; s <<= 3 {
		n++
	}
	return n
}

// Builder accumulates alignments in file order and produces a CSI, like
// htslib's hts_idx_push and hts_idx_finish with fmt HTS_FMT_CSI (CSIv1).
type Builder struct {
	idx      *bai.Index
	err      error // set at construction (depth out of range) or by a failed Add
	finished bool
}

// NewBuilder returns a Builder for a BAM whose header has nRef references,
// the longest maxRefLen bases long (its @SQ LN). The depth is Depth
// (maxRefLen); a reference so long that it would exceed bai.MaxDepth
// makes every later call fail with ErrInvalid.
func NewBuilder(nRef int, maxRefLen int64) *Builder {
	d := Depth(maxRefLen)
	if d > bai.MaxDepth {
		return &Builder{err: fmt.Errorf("%w: reference length %d needs depth %d, beyond %d", ErrInvalid, maxRefLen, d, bai.MaxDepth)}
	}
	idx, err := bai.NewIndex(nRef, MinShift, d)
	if err != nil {
		return &Builder{err: fmt.Errorf("%w: %w", ErrInvalid, err)}
	}
	return &Builder{idx: idx}
}

// Depth is the depth of the binning scheme (0 when construction failed).
func (b *Builder) Depth() int {
	if b.idx == nil {
		return 0
	}
	return b.idx.Depth()
}

// wrap gives an error from encode/bai this package's sentinel.
func wrap(err error) error {
	if errors.Is(err, bai.ErrUnsorted) {
		return fmt.Errorf("%w (%w)", ErrUnsorted, err)
	}
	return fmt.Errorf("%w (%w)", ErrInvalid, err)
}

// Add records one alignment in file order: its refID (-1 when unplaced),
// 0-based [beg, end) (end as htslib's bam_endpos gives it), whether it is
// unmapped (flag 0x4), and the BGZF virtual offsets of its first byte and
// of the byte after it. The rules are bai.Builder.Add's, with the limit
// 2^(14+3*depth) instead of 2^29.
func (b *Builder) Add(refID int32, beg, end int64, unmapped bool, vStart, vEnd uint64) error {
	if b.err != nil {
		return b.err
	}
	if b.finished {
		return fmt.Errorf("%w: Add after Finish", ErrInvalid)
	}
	if err := b.idx.Push(refID, beg, end, unmapped, vStart, vEnd); err != nil {
		b.err = wrap(err)
		return b.err
	}
	return nil
}

// Scheme is the CSI's binning scheme, the zero Scheme when the builder
// failed at construction (a reference too long for any depth).
func (b *Builder) Scheme() bai.Scheme {
	if b.idx == nil {
		return bai.Scheme{}
	}
	return b.idx.Scheme()
}

// Merge adds the records of a fragment of b's Scheme as Add would one by
// one, its virtual offsets shifted by shift (bai.Index.Merge): false,
// changing nothing, when the fragment's records must be added one by one
// to get the same index or Add's error.
func (b *Builder) Merge(f *bai.Fragment, shift uint64) (bool, error) {
	if b.err != nil {
		return false, b.err
	}
	if b.finished {
		return false, fmt.Errorf("%w: Merge after Finish", ErrInvalid)
	}
	ok, err := b.idx.Merge(f, shift)
	if err != nil {
		return false, wrap(err)
	}
	return ok, nil
}

// Finish closes the index at finalVOffset (the virtual offset after the
// last record, normally the EOF block's start << 16) and returns the .csi
// file: the CSI (see Encode) BGZF-compressed at Level in blocks cut as
// htslib cuts them, followed by the EOF block. htslib compresses with
// libdeflate, so the compressed bytes differ from samtools'; the
// decompressed bytes are identical.
func (b *Builder) Finish(finalVOffset uint64) ([]byte, error) {
	raw, err := b.FinishRaw(finalVOffset)
	if err != nil {
		return nil, err
	}
	c, err := bgzf.NewCompressor(Level)
	if err != nil {
		return nil, err
	}
	out, err := c.AppendBlocks(make([]byte, 0, len(raw)/2+len(bgzf.EOF)+64), raw)
	if err != nil {
		return nil, err
	}
	return append(out, bgzf.EOF...), nil
}

// FinishRaw is Finish without the BGZF compression: the uncompressed CSI
// (CSIv1): magic "CSI\1", min_shift, depth, l_aux 0 (htslib writes no
// auxiliary data for BAM), n_ref, per reference its bins in htslib's hash
// order, each with its loffset (the linear-index offset of the bin's
// first 16 kbp window, 0 for the pseudo-bin and for bins beyond the last
// window) and chunks, and finally n_no_coor. CSI has no linear index.
func (b *Builder) FinishRaw(finalVOffset uint64) ([]byte, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.finished {
		return nil, fmt.Errorf("%w: Finish called twice", ErrInvalid)
	}
	b.finished = true
	if err := b.idx.Finish(finalVOffset); err != nil {
		return nil, wrap(err)
	}
	return encode(b.idx), nil
}

// loffset is the offset htslib's update_loff gives a bin: the back-filled
// linear index at the bin's first window, or 0.
func loffset(idx *bai.Index, lin *bai.Linear, bin uint32) uint64 {
	depth := idx.Depth()
	if bin >= bai.BinLimit(depth) {
		return 0
	}
	l := bai.BinLevel(bin)
	bot := int64(bin-bai.BinFirst(l)) << (3 * (depth - l))
	off, ok := lin.At(bot)
	if !ok {
		return 0
	}
	return off
}

func encode(idx *bai.Index) []byte {
	le := binary.LittleEndian
	out := []byte{'C', 'S', 'I', 1}
	out = le.AppendUint32(out, uint32(idx.MinShift()))
	out = le.AppendUint32(out, uint32(idx.Depth()))
	out = le.AppendUint32(out, 0) // l_aux
	out = le.AppendUint32(out, uint32(idx.NRef()))
	for i := range idx.NRef() {
		bins := idx.Bins(i)
		if bins == nil {
			out = le.AppendUint32(out, 0)
			continue
		}
		lin := idx.Linear(i)
		out = le.AppendUint32(out, uint32(bins.Len()))
		for bin, chunks := range bins.All() {
			out = le.AppendUint32(out, bin)
			out = le.AppendUint64(out, loffset(idx, lin, bin))
			out = le.AppendUint32(out, uint32(len(chunks)))
			for _, c := range chunks {
				out = le.AppendUint64(out, c.Beg)
				out = le.AppendUint64(out, c.End)
			}
		}
	}
	return le.AppendUint64(out, idx.NoCoor())
}
