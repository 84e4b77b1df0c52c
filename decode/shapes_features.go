package decode

import "fmt"

// shapeReader is featureReader for the shapes: it reads the read features
// of one mapped record (CRAMv3 §10.6) and resolves them into the CIGAR,
// the alignment end and the lengths of the MD and NM tags it generates,
// without the read's bases or qualities. Stored bases and qualities are
// read past (skipByte, arrayLen); the reference is read only where MD and
// NM depend on it ('N' bases) and where the full decode checks its extent.
type shapeReader struct {
	// Dependencies: the Decoder (its streams, lean plan and CIGAR
	// buffer), the slice's encodings and its reference.
	d    *Decoder
	ds   *[numDataSeries]*Encoding
	view *refView

	// Constant for the record.
	n            int64 // read length
	refLen       int64 // length of the record's reference (0 if unplaced)
	hasRef       bool  // the slice has reference bases
	placed       bool  // the record has a reference
	preserveQual bool  // CF: qualities are stored (QS) for the whole read

	// Mutable, feature by feature.
	refPos, seqPos, prevPos int64
	cigOp                   uint32 // the CIGAR operation being extended
	cigLen                  int64  // its length so far
	cig                     []uint32
	md                      mdRules[*mdCount]
}

// shapeSeq is decodeSeq for the shapes: it reads the features, the mapping
// quality and the preserved qualities of a mapped record past, leaving the
// CIGAR in the Decoder's buffer, and returns the bytes of the MD and NM
// tags generated.
func (d *Decoder) shapeSeq(s *sliceState, cr *crec, hasMD, hasNM bool) (int, error) {
	ch := s.ch
	genMD := !d.opt.NoMD && s.hasRef && cr.refID >= 0 && cr.cf&cfNoSeq == 0
	r := shapeReader{
		d: d, ds: &ch.DataSeries, view: s.view,
		n: int64(cr.length), hasRef: s.hasRef, placed: cr.refID >= 0, preserveQual: cr.cf&cfPreserveQual != 0,
		refPos: cr.apos - 1, seqPos: 1, cigOp: cigM, cig: d.cigars,
		md: mdRules[*mdCount]{out: &d.lean.md, md: genMD && !hasMD, nm: genMD && !hasNM},
	}
	d.lean.md = mdCount{}
	if r.placed {
		r.refLen = d.refLength(int(cr.refID))
	}
	if err := r.readFeatures(); err != nil {
		return 0, err
	}
	d.cigars = r.cig
	cr.aend = max(r.refPos, cr.apos)
	if err := d.skipInt(&ch.DataSeries, DSMQ); err != nil {
		return 0, err
	}
	if r.preserveQual {
		if err := d.skipByte(&ch.DataSeries, DSQS, int(cr.length)); err != nil {
			return 0, err
		}
	}
	if cr.cf&cfNoSeq != 0 {
		cr.length = 0
	}
	return d.lean.md.tagLen(&r.md), nil
}

// readFeatures is featureReader.readFeatures.
func (r *shapeReader) readFeatures() error {
	e := r.ds[DSFN]
	if e == nil {
		return noEncoding(DSFN)
	}
	st := &r.d.st
	fn, err := e.decodeInt(st)
	if err != nil {
		return fmt.Errorf("FN: %w", err)
	}
	if fn < 0 || int64(fn) > r.n+int64(st.maxArray)+1 {
		return corruptf("%d read features", fn)
	}
	for range fn {
		if err := r.feature(); err != nil {
			return err
		}
	}
	if r.n >= r.seqPos {
		rest := r.n - r.seqPos + 1
		if r.hasRef && r.placed {
			inside, err := r.match(rest)
			if err != nil {
				return err
			}
			if inside {
				r.refPos += rest
			}
		} else if r.placed {
			r.refPos += rest
		}
		r.extend(cigM, rest)
	}
	if r.cigLen != 0 {
		r.cig = append(r.cig, uint32(r.cigLen)<<4|r.cigOp)
	}
	return nil
}

// feature is featureReader.feature.
func (r *shapeReader) feature() error {
	st := &r.d.st
	var op byte
	var fp int32
	var err error
	if e := r.ds[DSFC]; e == nil {
		return noEncoding(DSFC)
	} else if v, ok := e.byteFast(st); ok {
		op = v
	} else if op, err = readByteSlow(e, st, DSFC); err != nil {
		return err
	}
	if e := r.ds[DSFP]; e == nil {
		return noEncoding(DSFP)
	} else if v, ok := e.intFast(st); ok {
		fp = v
	} else if fp, err = readIntOf(e, st, DSFP); err != nil {
		return err
	}
	pos := int64(fp) + r.prevPos
	if pos <= 0 {
		return corruptf("feature position %d before the start of the read", pos)
	}
	if pos > r.seqPos {
		if pos > r.n+1 {
			return corruptf("feature position %d past the end of the %d-base read", pos, r.n)
		}
		gap := pos - r.seqPos
		if r.hasRef && r.placed {
			if _, err := r.match(gap); err != nil {
				return err
			}
		}
		r.extend(cigM, gap)
		r.refPos += gap
		r.seqPos = pos
	}
	r.prevPos = pos

	switch op {
	case 'S':
		return r.softClip(pos)
	case 'X':
		return r.substitution()
	case 'D':
		return r.deletion()
	case 'I':
		return r.insertion(pos)
	case 'i':
		return r.insertedBase(pos)
	case 'b':
		return r.bases(pos)
	case 'q':
		return r.qualities(pos)
	case 'B':
		return r.baseAndQuality(pos)
	case 'Q':
		return r.quality(pos)
	case 'H':
		return r.skip(DSHC, cigH)
	case 'P':
		return r.skip(DSPD, cigP)
	case 'N':
		return r.skip(DSRS, cigN)
	}
	return corruptf("unknown read feature code %q", op)
}

// readIntOf reads one integer of series s with encoding e.
func readIntOf(e *Encoding, st *streams, s DataSeries) (int32, error) {
	if e == nil {
		return 0, noEncoding(s)
	}
	v, err := e.decodeInt(st)
	if err != nil {
		return 0, fmt.Errorf("%v: %w", s, err)
	}
	return v, nil
}

func (r *shapeReader) flush(op uint32) {
	if r.cigLen != 0 && r.cigOp != op {
		r.cig = append(r.cig, uint32(r.cigLen)<<4|r.cigOp)
		r.cigLen = 0
	}
}

func (r *shapeReader) extend(op uint32, k int64) {
	r.flush(op)
	r.cigOp = op
	r.cigLen += k
}

// arrayLen reads past one byte array value of series s that the full
// decode writes at read position off of an n-byte buffer, with its
// bounds check, and returns its length.
func (r *shapeReader) arrayLen(s DataSeries, off int64) (int64, error) {
	e := r.ds[s]
	if e == nil {
		return 0, noEncoding(s)
	}
	k, err := e.arrayLen(&r.d.st)
	if err != nil {
		return 0, fmt.Errorf("%v: %w", s, err)
	}
	m := int64(k)
	if r.n == 0 {
		return m, nil
	}
	if off < 0 || off+m > r.n {
		return 0, corruptf("%v: %d bytes at read position %d overrun the %d-base read", s, m, off+1, r.n)
	}
	return m, nil
}

// skippedArray is arrayLen for a series the shapes do not need, which
// is read only when the lean plan says so.
func (r *shapeReader) skippedArray(s DataSeries, off int64) error {
	if !r.d.lean.read[s] {
		return nil
	}
	_, err := r.arrayLen(s, off)
	return err
}

func (r *shapeReader) softClip(pos int64) error {
	if r.cigLen != 0 {
		r.cig = append(r.cig, uint32(r.cigLen)<<4|r.cigOp)
		r.cigLen = 0
	}
	m, err := r.arrayLen(DSSC, pos-1)
	if err != nil {
		return err
	}
	r.cig = append(r.cig, uint32(m)<<4|cigS)
	r.cigOp = cigS
	r.seqPos += m
	return nil
}

// substitution is feature 'X': a mismatch for MD and NM whatever the base
// (BS, read past), the reference's base or 'N' for MD.
func (r *shapeReader) substitution() error {
	r.flush(cigM)
	if err := r.d.skipByte(r.ds, DSBS, 1); err != nil {
		return err
	}
	if !r.placed || r.refPos >= r.refLen || !r.hasRef {
		r.md.offReference()
	} else {
		if r.refPos < r.view.limit {
			if _, err := r.view.at(r.refPos); err != nil {
				return err
			}
		}
		r.md.mismatch('N')
	}
	r.md.edits++
	r.extend(cigM, 1)
	r.seqPos++
	r.refPos++
	return nil
}

func (r *shapeReader) deletion() error {
	r.flush(cigD)
	dl, err := r.readLength(DSDL)
	if err != nil {
		return err
	}
	if r.md.active() {
		if err := r.md.deletion(r.view, r.refPos, dl, r.refLen); err != nil {
			return err
		}
	}
	r.extend(cigD, dl)
	r.refPos += dl
	return nil
}

func (r *shapeReader) insertion(pos int64) error {
	r.flush(cigI)
	m, err := r.arrayLen(DSIN, pos-1)
	if err != nil {
		return err
	}
	r.extend(cigI, m)
	r.seqPos += m
	r.md.edits += m
	return nil
}

func (r *shapeReader) insertedBase(pos int64) error {
	r.flush(cigI)
	if err := r.d.skipByte(r.ds, DSBA, 1); err != nil {
		return err
	}
	if r.n > 0 && pos-1 >= r.n {
		return corruptf("insertion at read position %d past the %d-base read", pos, r.n)
	}
	r.extend(cigI, 1)
	r.seqPos++
	r.md.edits++
	return nil
}

func (r *shapeReader) bases(pos int64) error {
	r.flush(cigM)
	m, err := r.arrayLen(DSBB, pos-1)
	if err != nil {
		return err
	}
	if r.md.active() {
		if err := r.md.bases(r.view, r.refPos, m, r.refLen, r.hasRef); err != nil {
			return err
		}
	}
	r.extend(cigM, m)
	r.seqPos += m
	r.refPos += m
	return nil
}

func (r *shapeReader) qualities(pos int64) error {
	r.flush(cigM)
	if err := r.skippedArray(DSQQ, pos-1); err != nil {
		return err
	}
	r.cigOp = cigM
	return nil
}

func (r *shapeReader) baseAndQuality(pos int64) error {
	r.flush(cigM)
	if err := r.d.skipByte(r.ds, DSBA, 1); err != nil {
		return err
	}
	if r.n > 0 && pos-1 >= r.n {
		return corruptf("base at read position %d past the %d-base read", pos, r.n)
	}
	if r.md.active() {
		if err := r.md.base(r.view, r.refPos, r.refLen, r.hasRef); err != nil {
			return err
		}
	}
	if err := r.d.skipByte(r.ds, DSQS, 1); err != nil {
		return err
	}
	r.extend(cigM, 1)
	r.seqPos++
	r.refPos++
	return nil
}

func (r *shapeReader) quality(pos int64) error {
	if err := r.d.skipByte(r.ds, DSQS, 1); err != nil {
		return err
	}
	if pos-1 >= r.n {
		return corruptf("quality at read position %d past the %d-base read", pos, r.n)
	}
	return nil
}

func (r *shapeReader) skip(s DataSeries, op uint32) error {
	r.flush(op)
	v, err := r.readLength(s)
	if err != nil {
		return err
	}
	r.extend(op, v)
	if op == cigN {
		r.refPos += v
	}
	return nil
}

func (r *shapeReader) readLength(s DataSeries) (int64, error) {
	if e := r.ds[s]; e != nil {
		if v, ok := e.intFast(&r.d.st); ok {
			return int64(v), nil // below 128
		}
	}
	return readLengthSlow(r.ds[s], &r.d.st, s)
}

// match is featureReader.match without the bases: it checks the extent
// of k matching bases at refPos and counts them for MD and NM, where an
// 'N' of the reference is a mismatch.
func (r *shapeReader) match(k int64) (bool, error) {
	v := r.view
	if r.refPos+k > r.refLen {
		if rlen := r.refLen - r.refPos; rlen > 0 {
			if r.refPos+rlen > v.limit {
				return false, errBeyondSlice(r.refPos + rlen)
			}
			if _, err := v.slice(r.refPos, r.refPos+rlen); err != nil {
				return false, err
			}
		}
		r.md.pastReference(k)
		return false, nil
	}
	if r.refPos+k > v.limit {
		return false, errBeyondSlice(r.refPos + k)
	}
	b, err := v.slice(r.refPos, r.refPos+k)
	if err != nil {
		return false, err
	}
	r.md.match(v, r.refPos, k, b)
	return true, nil
}
