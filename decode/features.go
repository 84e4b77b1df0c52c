package decode

import "fmt"

// l1 maps a reference base to its substitution matrix row.
var l1 = func() (t [256]byte) {
	for i := range t {
		t[i] = 4
	}
	t['A'], t['a'] = 0, 0
	t['C'], t['c'] = 1, 1
	t['G'], t['g'] = 2, 2
	t['T'], t['t'] = 3, 3
	return
}()

// featureWalker reads the read features of one mapped record (CRAMv3
// §10.6, DecodeMappedRead and DecodeFeature) and resolves them against
// the reference into the record's CIGAR and alignment end, its bases and
// qualities when it has buffers for them, and MD and NM (mdRules) when
// they are generated: htslib's cram_decode_seq. The full decode runs it,
// its sink S (fullSink) decoding the series of bases and qualities; the
// lean pass, which measures records, has a walker of its own with the same
// rules (leanWalker), which TestLeanWalkerEveryFixture and
// TestLeanWalkerBenchData hold to this one.
// Positions are 1-based in the read (seqPos) and 0-based on the
// reference (refPos).
//
// S is a type parameter, not an interface value: nothing is boxed. Go does
// not inline its methods (it calls them through the instantiation's
// dictionary), so the walker keeps the read's buffers itself and calls S
// only for the series of bases and qualities.
type featureWalker[S featureSink] struct {
	// Dependencies: the slice's blocks and encodings, its reference, and
	// what reads the series of bases and qualities.
	st   *streams
	ds   *[numDataSeries]*Encoding
	fx   featStreams
	sm   *[5][4]byte // substitution matrix
	view *refView
	sink S

	// Constant for the record.
	seq, qual    []byte // the read's bases and qualities: n bytes each, or none (lean)
	n            int64  // read length
	refLen       int64  // length of the record's reference (0 if unplaced)
	hasRef       bool   // the slice has reference bases
	placed       bool   // the record has a reference (RI/slice reference >= 0)
	preserveQual bool   // CF: qualities are stored (QS) for the whole read

	// Mutable, feature by feature.
	refPos, seqPos, prevPos int64
	cigOp                   uint32 // the CIGAR operation being extended
	cigLen                  int64  // its length so far
	cig                     []uint32
	md                      mdRules
}

// featureSink reads the data series, with encodings ds, that give a
// read's bases and qualities, which the lean pass needs no more than the
// lengths of.
type featureSink interface {
	// byteOf reads one value of byte series s (BS, BA, QS); 0 when it is
	// read past.
	byteOf(ds *[numDataSeries]*Encoding, s DataSeries) (byte, error)
	// arrayOf reads one byte array value of series s (SC, IN, BB) and
	// returns its bytes (nil when they are not kept) and its length.
	arrayOf(ds *[numDataSeries]*Encoding, s DataSeries) ([]byte, int64, error)
	// qualsOf is arrayOf for QQ, whose length the lean pass does not need:
	// 0 there when QQ is not read.
	qualsOf(ds *[numDataSeries]*Encoding) ([]byte, int64, error)
}

// fullSink is the Decoder as the full decode's featureSink: it decodes
// the values, from its streams.
type fullSink Decoder

// featStreams are the blocks of the EXTERNAL series read most per feature,
// found once per slice, so that a value is read without going through its
// encoding: FC and FP, and for the full decode BS and BA (the lean pass's
// sink decides whether to read those). nil: the series is not EXTERNAL or
// its block is missing; a block the lean pass has not decompressed holds
// no data yet. Either way the value is read through the encoding, as
// before the block was found. skipBS and skipBA are set when the lean
// pass reads BS or BA past without reading it at all (its plan): the
// walker then does not ask the sink, a call per substitution or inserted
// base that Go makes through the instantiation's dictionary.
type featStreams struct {
	fc, fp, bs, ba *extStream
	skipBS, skipBA bool
}

// next is the next byte of x, when x has one.
func next(x *extStream) (byte, bool) {
	if x == nil || x.pos >= len(x.data) {
		return 0, false
	}
	v := x.data[x.pos]
	x.pos++
	return v, true
}

// nextITF8 is the next ITF-8 value of x when it is one byte long (below
// 128).
func nextITF8(x *extStream) (int32, bool) {
	if x == nil || x.pos >= len(x.data) || x.data[x.pos] >= 0x80 {
		return 0, false
	}
	v := x.data[x.pos]
	x.pos++
	return int32(v), true
}

// decodeSeq decodes the read features of a mapped record and rebuilds its
// sequence, qualities, CIGAR, and MD and NM (CRAMv3 §10.6; htslib's
// cram_decode_seq), then reads its mapping quality (MQ) and preserved
// qualities (QS).
func (d *Decoder) decodeSeq(s *sliceState, cr *crec, seq, qual []byte, hasMD, hasNM bool) error {
	ch, hasRef := s.ch, s.hasRef
	canMD := hasRef && cr.refID >= 0 && cr.cf&cfNoSeq == 0
	// The walker and MD's writer are set field by field: a composite
	// literal is built on the stack and then copied, and the copy's wide
	// loads stall on the narrow stores that built it (no store
	// forwarding), at every record.
	t := &d.mdText
	t.aux, t.mdAt, t.nmAt, t.textAt = d.aux, -1, -1, 0
	var r featureWalker[*fullSink]
	r.md.out = t
	r.md.md = canMD && !d.opt.NoMD && !hasMD
	r.md.nm = canMD && !d.opt.NoMD && !hasNM
	if ch.V4 {
		// CRAM 4.0: MD and NM are made only where placeholders stand,
		// whatever decode_md says (htslib 1.16's has_MD < 0).
		r.md.md, r.md.nm, t.mdAt, t.nmAt = canMD && d.mdSlot >= 0, canMD && d.nmSlot >= 0, d.mdSlot, d.nmSlot
	}
	r.st, r.ds, r.sm, r.view, r.sink = &d.st, &ch.DataSeries, &ch.SubstitutionMatrix, s.view, (*fullSink)(d)
	r.fx.fc, r.fx.fp, r.fx.bs, r.fx.ba = s.fx.fc, s.fx.fp, s.fx.bs, s.fx.ba
	r.fx.skipBS, r.fx.skipBA = s.fx.skipBS, s.fx.skipBA
	r.seq, r.qual, r.n = seq, qual, int64(cr.length)
	r.hasRef, r.placed, r.preserveQual = hasRef, cr.refID >= 0, cr.cf&cfPreserveQual != 0
	r.refPos, r.seqPos, r.cigOp, r.cig = cr.apos-1, 1, cigM, d.cigars
	if !r.preserveQual {
		for i := range qual {
			qual[i] = 0xff
		}
	}
	if r.placed {
		r.refLen = d.refLength(int(cr.refID))
	}
	d.mdText.start(r.md.md)
	err := r.readFeatures()
	if err == nil {
		d.aux = d.mdText.finish(&r.md)
	}
	d.mdText.aux = nil // aux alone holds the tag buffer
	if err != nil {
		return err
	}
	d.cigars = r.cig
	cr.aend = max(r.refPos, cr.apos)
	mq, err := d.readInt(&ch.DataSeries, DSMQ)
	if err != nil {
		return err
	}
	cr.mapq = uint8(mq)
	if r.preserveQual {
		if err := d.readQuals(&ch.DataSeries, cr, qual); err != nil {
			return err
		}
	}
	if cr.cf&cfNoSeq != 0 {
		cr.length = 0
	}
	return nil
}

// readFeatures reads the record's FN features in order and matches the
// bases between and after them to the reference (CRAMv3 §10.6,
// DecodeMappedRead).
func (r *featureWalker[S]) readFeatures() error {
	e := r.ds[DSFN]
	if e == nil {
		return noEncoding(DSFN)
	}
	fn, err := e.decodeInt(r.st)
	if err != nil {
		return fmt.Errorf("FN: %w", err)
	}
	if fn < 0 || int64(fn) > r.n+int64(r.st.maxArray)+1 {
		return corruptf("%d read features", fn)
	}
	for i := int32(0); i < fn; i++ {
		if k := r.fastRun(int(fn - i)); k > 0 {
			i += int32(k) - 1
			continue
		}
		if err := r.feature(); err != nil {
			return err
		}
	}
	// The bases after the last feature match the reference.
	if r.n >= r.seqPos {
		rest := r.n - r.seqPos + 1
		if r.hasRef && r.placed {
			inside, err := r.match(rest)
			if err != nil {
				return err
			}
			if inside {
				// Like htslib, the end does not move past the reference's end.
				r.refPos += rest
			}
		} else if r.placed {
			r.refPos += rest
		}
		r.extend(cigM, rest)
	}
	if r.cigLen != 0 {
		r.emit(uint32(r.cigLen)<<4 | r.cigOp)
	}
	return nil
}

// feature reads one feature (CRAMv3 §10.6, Read feature records and
// DecodeFeature): its code (FC) and position (FP, a delta from the previous
// feature's), the match to the reference up to it, and then its own data
// series (Read feature codes).
func (r *featureWalker[S]) feature() error {
	// FC and FP take the one-byte EXTERNAL case inline.
	var op byte
	var fp int32
	var err error
	if v, ok := next(r.fx.fc); ok {
		op = v
	} else if e := r.ds[DSFC]; e == nil {
		return noEncoding(DSFC)
	} else if v, ok := e.byteFast(r.st); ok {
		op = v
	} else if op, err = readByteSlow(e, r.st, DSFC); err != nil {
		return err
	}
	if v, ok := nextITF8(r.fx.fp); ok {
		fp = v
	} else if e := r.ds[DSFP]; e == nil {
		return noEncoding(DSFP)
	} else if v, ok := e.intFast(r.st); ok {
		fp = v
	} else if fp, err = e.decodeInt(r.st); err != nil {
		return fmt.Errorf("FP: %w", err)
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
		return r.substitution(pos)
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

// flush ends the CIGAR operation being extended unless it is op.
func (r *featureWalker[S]) flush(op uint32) {
	if r.cigLen != 0 && r.cigOp != op {
		r.emit(uint32(r.cigLen)<<4 | r.cigOp)
		r.cigLen = 0
	}
}

// emit adds one CIGAR operation, c as BAM encodes it, to the CIGAR.
func (r *featureWalker[S]) emit(c uint32) {
	r.cig = append(r.cig, c)
}

// extend adds k to the CIGAR operation op, ending the previous one if it
// differs.
func (r *featureWalker[S]) extend(op uint32, k int64) {
	r.flush(op)
	r.cigOp = op
	r.cigLen += k
}

// softClip is feature 'S': SC bases, a soft clip of their length.
func (r *featureWalker[S]) softClip(pos int64) error {
	if r.cigLen != 0 {
		r.emit(uint32(r.cigLen)<<4 | r.cigOp)
		r.cigLen = 0
	}
	m, err := r.baseArray(DSSC, pos-1)
	if err != nil {
		return err
	}
	r.emit(uint32(m)<<4 | cigS)
	r.cigOp = cigS
	r.seqPos += m
	return nil
}

// substitution is feature 'X': a base other than the reference's, as the
// BS code's entry of the substitution matrix (CRAMv3 §10.6, Base
// substitution codes).
func (r *featureWalker[S]) substitution(pos int64) error {
	code, ok := next(r.fx.bs)
	var err error
	if !ok && !r.fx.skipBS {
		if code, err = r.sink.byteOf(r.ds, DSBS); err != nil {
			return err
		}
	}
	if code > 3 {
		return corruptf("BS: substitution code %d", code)
	}
	if !r.placed || r.refPos >= r.refLen || !r.hasRef {
		r.setBase(pos-1, r.sm[4][code])
		r.md.offReference()
	} else {
		refCall := byte('N')
		if r.refPos < r.view.limit {
			if refCall, err = r.view.at(r.refPos); err != nil {
				return err
			}
		}
		r.setBase(pos-1, r.sm[l1[refCall]][code])
		r.md.mismatch(refCall)
	}
	r.md.edits++
	r.extend(cigM, 1)
	r.seqPos++
	r.refPos++
	return nil
}

// deletion is feature 'D': DL reference bases the read leaves out.
func (r *featureWalker[S]) deletion() error {
	dl, err := featLength(r.ds, r.st, DSDL)
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

// insertion is feature 'I': IN bases inserted in the read.
func (r *featureWalker[S]) insertion(pos int64) error {
	m, err := r.baseArray(DSIN, pos-1)
	if err != nil {
		return err
	}
	r.extend(cigI, m)
	r.seqPos += m
	r.md.edits += m
	return nil
}

// insertedBase is feature 'i': one inserted base (BA).
func (r *featureWalker[S]) insertedBase(pos int64) error {
	b, ok := next(r.fx.ba)
	if !ok && !r.fx.skipBA {
		var err error
		if b, err = r.sink.byteOf(r.ds, DSBA); err != nil {
			return err
		}
	}
	if r.n > 0 {
		if pos-1 >= r.n {
			return corruptf("insertion at read position %d past the %d-base read", pos, r.n)
		}
		r.setBase(pos-1, b)
	}
	r.extend(cigI, 1)
	r.seqPos++
	r.md.edits++
	return nil
}

// bases is feature 'b': BB bases stored in place of the reference's.
func (r *featureWalker[S]) bases(pos int64) error {
	m, err := r.baseArray(DSBB, pos-1)
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

// qualities is feature 'q': QQ qualities of consecutive bases.
func (r *featureWalker[S]) qualities(pos int64) error {
	r.flush(cigM)
	r.fillQual30()
	b, m, err := r.sink.qualsOf(r.ds)
	if err != nil {
		return err
	}
	if err := r.put(DSQQ, r.qual, pos-1, b, m); err != nil {
		return err
	}
	r.cigOp = cigM
	return nil
}

// baseAndQuality is feature 'B': one stored base (BA) and its quality
// (QS).
func (r *featureWalker[S]) baseAndQuality(pos int64) error {
	b, err := r.sink.byteOf(r.ds, DSBA)
	if err != nil {
		return err
	}
	if r.n > 0 {
		if pos-1 >= r.n {
			return corruptf("base at read position %d past the %d-base read", pos, r.n)
		}
		r.setBase(pos-1, b)
	}
	if r.md.active() {
		if err := r.md.base(r.view, r.refPos, r.refLen, r.hasRef); err != nil {
			return err
		}
	}
	r.fillQual30()
	q, err := r.sink.byteOf(r.ds, DSQS)
	if err != nil {
		return err
	}
	r.setQual(pos-1, q)
	r.extend(cigM, 1)
	r.seqPos++
	r.refPos++
	return nil
}

// quality is feature 'Q': the quality (QS) of one base.
func (r *featureWalker[S]) quality(pos int64) error {
	r.fillQual30()
	q, err := r.sink.byteOf(r.ds, DSQS)
	if err != nil {
		return err
	}
	if pos-1 >= r.n {
		return corruptf("quality at read position %d past the %d-base read", pos, r.n)
	}
	r.setQual(pos-1, q)
	return nil
}

// skip is features 'H', 'P' and 'N': a hard clip (HC), padding (PD) or
// reference skip (RS) of the length read from series s.
func (r *featureWalker[S]) skip(s DataSeries, op uint32) error {
	v, err := featLength(r.ds, r.st, s)
	if err != nil {
		return err
	}
	r.extend(op, v)
	if op == cigN {
		r.refPos += v
	}
	return nil
}

// setBase and setQual write the base or quality at read offset i, when
// the walker has a buffer for it and i lies in the read.
func (r *featureWalker[S]) setBase(i int64, b byte) {
	if i < int64(len(r.seq)) {
		r.seq[i] = b
	}
}

func (r *featureWalker[S]) setQual(i int64, q byte) {
	if i < int64(len(r.qual)) {
		r.qual[i] = q
	}
}

// fillQual30 gives a read whose qualities are not preserved quality 30
// where no feature sets one, once a feature sets any (htslib's default).
func (r *featureWalker[S]) fillQual30() {
	if !r.preserveQual && len(r.qual) > 0 && r.qual[0] == 0xff {
		for i := range r.qual {
			r.qual[i] = 30
		}
	}
}

// baseArray reads the byte array value of series s (SC, IN, BB) into the
// read's bases at offset off and returns its length.
func (r *featureWalker[S]) baseArray(s DataSeries, off int64) (int64, error) {
	b, m, err := r.sink.arrayOf(r.ds, s)
	if err != nil {
		return 0, err
	}
	return m, r.put(s, r.seq, off, b, m)
}

// put checks that the m bytes of a byte array value of series s fit the
// read at offset off, and copies them, b, into dst when it has them.
func (r *featureWalker[S]) put(s DataSeries, dst []byte, off int64, b []byte, m int64) error {
	if r.n == 0 {
		// A read stored without bases ('*'): htslib decodes the
		// feature's bytes and drops them.
		return nil
	}
	if off < 0 || off+m > r.n {
		return corruptf("%v: %d bytes at read position %d overrun the %d-base read", s, m, off+1, r.n)
	}
	if len(b) > 0 {
		copy(dst[off:], b)
	}
	return nil
}

// match fills k bases at seqPos from the reference at refPos, the
// implicit match between features (htslib's cram_decode_seq): an 'N' in
// the reference counts as a mismatch for MD and NM, and a match running
// past the reference's end is filled with 'N' (to the read's end when
// it starts past the reference). It reports whether the match lies
// inside the reference. It does not move refPos or seqPos.
func (r *featureWalker[S]) match(k int64) (bool, error) {
	v, at := r.view, r.seqPos-1
	if r.refPos+k > r.refLen {
		if rlen := r.refLen - r.refPos; rlen > 0 {
			if r.refPos+rlen > v.limit {
				return false, errBeyondSlice(r.refPos + rlen)
			}
			b, err := v.slice(r.refPos, r.refPos+rlen)
			if err != nil {
				return false, err
			}
			r.copyBases(at, b)
			r.fillN(at+rlen, at+k)
		} else {
			r.fillN(at, r.n)
		}
		r.md.pastReference(k)
		return false, nil
	}
	if r.refPos+k > v.limit {
		return false, errBeyondSlice(r.refPos + k)
	}
	b, ok := v.held(r.refPos, r.refPos+k)
	if !ok {
		var err error
		if b, err = v.slice(r.refPos, r.refPos+k); err != nil {
			return false, err
		}
	}
	r.copyBases(at, b)
	if r.md.active() {
		if !v.hasN(r.refPos, r.refPos+k) {
			r.md.dist += k
		} else {
			r.md.matchNs(v, r.refPos, k, b)
		}
	}
	return true, nil
}

// copyBases copies the reference's bases b to the read at offset at, when
// the walker has a buffer for them (b is nil from a marks view).
func (r *featureWalker[S]) copyBases(at int64, b []byte) {
	if len(r.seq) > 0 {
		copy(r.seq[at:], b)
	}
}

// fillN sets the read's bases [from, to) to 'N', when the walker has a
// buffer for them.
func (r *featureWalker[S]) fillN(from, to int64) {
	if len(r.seq) > 0 {
		for i := from; i < to; i++ {
			r.seq[i] = 'N'
		}
	}
}

// readByteSlow reads one value of byte series s with encoding e, past
// the EXTERNAL case its callers take inline.
func readByteSlow(e *Encoding, st *streams, s DataSeries) (byte, error) {
	if e == nil {
		return 0, noEncoding(s)
	}
	v, err := e.decodeByte(st)
	if err != nil {
		return 0, fmt.Errorf("%v: %w", s, err)
	}
	return v, nil
}

// featLength reads a length (DL, HC, PD, RS), which must not be
// negative, the one-byte EXTERNAL case first.
func featLength(ds *[numDataSeries]*Encoding, st *streams, s DataSeries) (int64, error) {
	if e := ds[s]; e != nil {
		if v, ok := e.intFast(st); ok {
			return int64(v), nil // below 128
		}
	}
	return readLengthSlow(ds[s], st, s)
}

// readLengthSlow is featLength past its first case.
func readLengthSlow(e *Encoding, st *streams, s DataSeries) (int64, error) {
	if e == nil {
		return 0, noEncoding(s)
	}
	v, err := e.decodeInt(st)
	if err != nil {
		return 0, fmt.Errorf("%v: %w", s, err)
	}
	if v < 0 {
		return 0, corruptf("%v: length %d", s, v)
	}
	return int64(v), nil
}

// byteOf is featureSink.byteOf, the EXTERNAL case inline.
func (k *fullSink) byteOf(ds *[numDataSeries]*Encoding, s DataSeries) (byte, error) {
	if e := ds[s]; e != nil {
		if v, ok := e.byteFast(&k.st); ok {
			return v, nil
		}
	}
	return readByteSlow(ds[s], &k.st, s)
}

// arrayOf is featureSink.arrayOf: the bytes as they lie in their block where
// they can (BYTE_ARRAY_STOP), else in the Decoder's feature scratch.
func (k *fullSink) arrayOf(ds *[numDataSeries]*Encoding, s DataSeries) ([]byte, int64, error) {
	e := ds[s]
	if e == nil {
		return nil, 0, noEncoding(s)
	}
	var b []byte
	var err error
	if e.ID == EncodingByteArrayStop {
		var x *extStream
		if x, err = e.stream(&k.st); err == nil {
			b, err = x.readUntil(e.Stop)
		}
	} else {
		k.featScratch, err = e.appendArray(&k.st, k.featScratch[:0])
		b = k.featScratch
	}
	if err != nil {
		return nil, 0, fmt.Errorf("%v: %w", s, err)
	}
	return b, int64(len(b)), nil
}

// qualsOf is featureSink.qualsOf.
func (k *fullSink) qualsOf(ds *[numDataSeries]*Encoding) ([]byte, int64, error) {
	return k.arrayOf(ds, DSQQ)
}
