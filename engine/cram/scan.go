package cram

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash"
	"sync"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/encode/bam"
	"github.com/cramfs/cramfs/engine/source"
)

// ScanLayout implements source.LayoutScanner: AppendLayout, with each
// called on the records.
func (c *CRAM) ScanLayout(ctx context.Context, i int, each func(r source.RecordLayout) error) (int64, source.Sum, error) {
	recs := layoutPool.Get().(*[]source.RecordLayout)
	defer layoutPool.Put(recs)
	var total int64
	var sum source.Sum
	var err error
	if *recs, total, sum, err = c.AppendLayout(ctx, i, (*recs)[:0]); err != nil {
		return 0, source.Sum{}, err
	}
	for _, r := range *recs {
		if err := each(r); err != nil {
			return 0, source.Sum{}, err
		}
	}
	return total, sum, nil
}

// layoutPool holds the record tables of ScanLayout, one per scan at work.
var layoutPool = sync.Pool{New: func() any { return new([]source.RecordLayout) }}

// AppendLayout appends the records of container i to dst and returns
// them with the container's BAM length and content sum. It measures the
// records with the decoder's lean pass (decode.ContainerShapes), which
// leaves qualities, bases and the other series no length depends on
// undecoded. When that pass fails, or a record's shape is one BAM cannot
// hold, it builds the records in full and measures them instead, so that
// the records reported and the errors are those of AppendContainer. The
// content sum is of the container's bytes the records were measured from.
// On error the records appended are unspecified.
func (c *CRAM) AppendLayout(ctx context.Context, i int, dst []source.RecordLayout) ([]source.RecordLayout, int64, source.Sum, error) {
	if err := ctx.Err(); err != nil {
		return dst, 0, source.Sum{}, err
	}
	start := len(dst)
	recs, total, sum, ok, err := c.leanLayout(i, dst)
	if err != nil || ok {
		return recs, total, sum, err
	}
	return c.fullLayout(ctx, i, recs[:start])
}

// leanLayout measures container i with the lean pass, appending its
// records to dst, and returns them with the container's content sum; ok is
// false when the pass could not (the caller then builds the container in
// full). err is only that of opening the file.
func (c *CRAM) leanLayout(i int, dst []source.RecordLayout) (recs []source.RecordLayout, total int64, sum source.Sum, ok bool, err error) {
	st, err := c.acquire()
	if err != nil {
		return dst, 0, source.Sum{}, false, err
	}
	defer c.release(st)
	pd := c.decoders.get(st.f, st.dopt)
	defer c.decoders.put(pd)
	err = pd.d.ContainerShapes(i, func(j int, s *decode.Shape) error {
		n, end, err := bam.ShapeLayout(s)
		if err != nil {
			return err
		}
		total += n
		dst = append(dst, source.RecordLayout{Len: n, RefID: s.RefID, Beg: s.Pos, End: end, Unmapped: s.Flags&4 != 0})
		return nil
	})
	return dst, total, source.Sum{CRC: pd.d.ContentSum(), OK: true}, err == nil, nil
}

// fullLayout is AppendLayout by building the container's BAM records in
// full.
func (c *CRAM) fullLayout(ctx context.Context, i int, dst []source.RecordLayout) ([]source.RecordLayout, int64, source.Sum, error) {
	raw, sum, err := c.appendContainer(ctx, i, false, nil, nil, source.BlockOptions{})
	if err != nil {
		return dst, 0, source.Sum{}, err
	}
	for off := 0; off < len(raw); {
		refID, pos, end, flags, err := bam.RecordInfo(raw[off:])
		if err != nil {
			return dst, 0, source.Sum{}, fmt.Errorf("%s: container at byte %d: record at BAM offset %d: %w", c.path, c.ContainerOffset(i), off, err)
		}
		n := 4 + int64(binary.LittleEndian.Uint32(raw[off:]))
		dst = append(dst, source.RecordLayout{Len: n, RefID: refID, Beg: pos, End: end, Unmapped: flags&4 != 0})
		off += int(n)
	}
	return dst, int64(len(raw)), sum, nil
}

// ScanBases implements decode.ReferenceScanner, for the lean pass: the
// bases of [start, end) as Bases clamps them, read in place.
func (r *refSource) ScanBases(id int, start, end int64, h hash.Hash, runs [][2]int64) (int64, [][2]int64, error) {
	c, err := r.contig(id)
	if err != nil {
		return 0, runs, err
	}
	end = min(end, c.Len())
	start = min(start, end)
	runs, err = c.Scan(start, end, h, runs)
	return end - start, runs, err
}

var (
	_ source.Source           = (*CRAM)(nil)
	_ source.BlockAppender    = (*CRAM)(nil)
	_ source.LayoutScanner    = (*CRAM)(nil)
	_ source.Estimator        = (*CRAM)(nil)
	_ decode.ReferenceScanner = (*refSource)(nil)
)
