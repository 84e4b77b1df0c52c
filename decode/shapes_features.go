package decode

import "fmt"

// leanSink is the Decoder as the lean walker's reader of the series of
// bases and qualities (the featureSink methods, called directly): it
// reads the stored bases and qualities past, by its lean plan, measuring
// the arrays whose lengths the shapes need. The walker reads the
// reference only where MD and NM depend on it ('N' bases) and where the
// full decode checks its extent.
type leanSink Decoder

// shapeSeq is decodeSeq for the shapes: it reads the features, the mapping
// quality and the preserved qualities of a mapped record past, counting
// its CIGAR into c rather than keeping it, and returns the bytes of the MD
// and NM tags generated and the CIGAR's number of operations.
func (d *Decoder) shapeSeq(s *sliceState, cr *crec, c *cigarSum, hasMD, hasNM bool) (int, int, error) {
	ch := s.ch
	genMD := !d.opt.NoMD && s.hasRef && cr.refID >= 0 && cr.cf&cfNoSeq == 0
	// Set field by field: a composite literal of this size is built
	// aside and copied, a stall per record.
	var r leanWalker
	r.st, r.ds, r.fx, r.view, r.k = &d.st, &ch.DataSeries, &s.fx, s.view, (*leanSink)(d)
	r.n, r.hasRef, r.placed = int64(cr.length), s.hasRef, cr.refID >= 0
	r.refPos, r.seqPos, r.cigOp = cr.apos-1, 1, cigM
	r.md.md, r.md.nm = genMD && !hasMD, genMD && !hasNM
	if r.placed {
		r.refLen = d.refLength(int(cr.refID))
	}
	if err := r.walk(); err != nil {
		return 0, 0, err
	}
	c.ref, c.query = r.refSum, r.querySum
	cr.aend = max(r.refPos, cr.apos)
	if err := d.skipInt(&ch.DataSeries, DSMQ); err != nil {
		return 0, 0, err
	}
	if cr.cf&cfPreserveQual != 0 {
		if err := d.skipByte(&ch.DataSeries, DSQS, int(cr.length)); err != nil {
			return 0, 0, err
		}
	}
	if cr.cf&cfNoSeq != 0 {
		cr.length = 0
	}
	return r.md.tagLen(), r.ops, nil
}

// byteOf is featureSink.byteOf: the value is read past (skipByte).
func (k *leanSink) byteOf(ds *[numDataSeries]*Encoding, s DataSeries) (byte, error) {
	if !k.lean.read[s] {
		return 0, nil
	}
	return 0, (*Decoder)(k).skipByte(ds, s, 1)
}

// arrayOf is featureSink.arrayOf: the length alone (arrayLen).
func (k *leanSink) arrayOf(ds *[numDataSeries]*Encoding, s DataSeries) ([]byte, int64, error) {
	e := ds[s]
	if e == nil {
		return nil, 0, noEncoding(s)
	}
	n, err := e.arrayLen(&k.st)
	if err != nil {
		return nil, 0, fmt.Errorf("%v: %w", s, err)
	}
	return nil, int64(n), nil
}

// qualsOf is featureSink.qualsOf: QQ is read only when the lean plan says so.
func (k *leanSink) qualsOf(ds *[numDataSeries]*Encoding) ([]byte, int64, error) {
	if !k.lean.read[DSQQ] {
		return nil, 0, nil
	}
	return k.arrayOf(ds, DSQQ)
}
