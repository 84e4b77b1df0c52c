package engine

import (
	"context"
	"hash"
	"sync"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/encode/bam"
)

// ScanLayout implements LayoutScanner. It measures the container's
// records with the decoder's lean pass (decode.ContainerShapes), which
// leaves qualities, bases and the other series no length depends on
// undecoded. When that pass fails, or a record's shape is one BAM cannot
// hold, it builds the records in full and measures them instead, so that
// the records reported and the errors are those of AppendContainer.
func (c *CRAM) ScanLayout(ctx context.Context, i int, each func(r RecordLayout) error) (int64, error) {
	n, _, err := c.ScanLayoutSum(ctx, i, each)
	return n, err
}

// ScanLayoutSum implements ContentSummer: ScanLayout, with the content
// sum of the container's bytes the records were measured from.
func (c *CRAM) ScanLayoutSum(ctx context.Context, i int, each func(r RecordLayout) error) (int64, uint32, error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	recs := layoutPool.Get().(*[]RecordLayout)
	defer layoutPool.Put(recs)
	var total int64
	var sum uint32
	var ok bool
	var err error
	*recs, total, sum, ok, err = c.leanLayout(i, (*recs)[:0])
	if err != nil {
		return 0, 0, err
	}
	if !ok {
		return c.fullLayout(ctx, i, each)
	}
	for _, r := range *recs {
		if err := each(r); err != nil {
			return 0, 0, err
		}
	}
	return total, sum, nil
}

// layoutPool holds the record tables of leanLayout, one per scan at work.
var layoutPool = sync.Pool{New: func() any { return new([]RecordLayout) }}

// leanLayout measures container i with the lean pass, appending its
// records to dst, and returns them with the container's content sum; ok is
// false when the pass could not (the caller then builds the container in
// full). err is only that of opening the file.
func (c *CRAM) leanLayout(i int, dst []RecordLayout) (recs []RecordLayout, total int64, sum uint32, ok bool, err error) {
	st, err := c.acquire()
	if err != nil {
		return dst, 0, 0, false, err
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
		dst = append(dst, RecordLayout{Len: n, RefID: s.RefID, Beg: s.Pos, End: end, Unmapped: s.Flags&4 != 0})
		return nil
	})
	return dst, total, pd.d.ContentSum(), err == nil, nil
}

// fullLayout is ScanLayoutSum by building the container's BAM records in
// full.
func (c *CRAM) fullLayout(ctx context.Context, i int, each func(r RecordLayout) error) (int64, uint32, error) {
	raw, sum, err := c.appendContainer(ctx, i, false, nil, nil, nil)
	if err != nil {
		return 0, 0, err
	}
	n, err := measureRecords(raw, each)
	return n, sum, err
}

// measureRecords frames the BAM records of raw, calls each with every
// one's layout, and returns the length of raw.
func measureRecords(raw []byte, each func(r RecordLayout) error) (int64, error) {
	recs, err := walkRecords(nil, raw)
	if err != nil {
		return 0, err
	}
	for _, r := range recs {
		if err := each(RecordLayout{Len: r.uEnd - r.uStart, RefID: r.refID, Beg: r.beg, End: r.end, Unmapped: r.unmapped}); err != nil {
			return 0, err
		}
	}
	return int64(len(raw)), nil
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
	_ LayoutScanner           = (*CRAM)(nil)
	_ ContentSummer           = (*CRAM)(nil)
	_ decode.ReferenceScanner = (*refSource)(nil)
)
