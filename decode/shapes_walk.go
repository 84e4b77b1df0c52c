package decode

import "fmt"

// leanWalker is featureWalker for the lean pass, as a type of its own: it
// reads the read features of one mapped record with the same rules and
// the same checks, but keeps no bases or qualities and counts the CIGAR
// (ops, refSum, querySum) instead of keeping it. Its loop (walk) takes the features
// a long read has most of (matches between features, substitutions,
// inserted bases, deletions, insertions, soft clips) in one function,
// whose reads of the lean plan are direct calls: the generic walker calls
// its sink through the instantiation's dictionary and each feature
// through a method of its own. featureWalker's comments give the rules
// (CRAMv3 §10.6; htslib's cram_decode_seq); the two must agree, which
// TestLeanWalkerEveryFixture and TestLeanWalkerBenchData check.
type leanWalker struct {
	// Dependencies: the slice's blocks and encodings and its reference,
	// and the Decoder whose lean plan says which series are read.
	st   *streams
	ds   *[numDataSeries]*Encoding
	fx   *featStreams
	view *refView
	k    *leanSink

	// Constant for the record.
	n      int64 // read length
	refLen int64 // length of the record's reference (0 if unplaced)
	hasRef bool  // the slice has reference bases
	placed bool  // the record has a reference

	// Mutable, feature by feature.
	refPos, seqPos, prevPos int64
	cigOp                   uint32 // the CIGAR operation being extended
	cigLen                  int64  // its length so far
	md                      mdRules
	// The CIGAR counted: its operations, and the bases they cover on
	// the reference and in the read (Shape.RefLen, QueryLen).
	ops              int
	refSum, querySum int64
}

// walk reads the record's FN features in order and matches the bases
// between and after them to the reference (featureWalker.readFeatures).
func (w *leanWalker) walk() error {
	e := w.ds[DSFN]
	if e == nil {
		return noEncoding(DSFN)
	}
	fn, err := e.decodeInt(w.st)
	if err != nil {
		return fmt.Errorf("FN: %w", err)
	}
	if fn < 0 || int64(fn) > w.n+int64(w.st.maxArray)+1 {
		return corruptf("%d read features", fn)
	}
	for i := int32(0); i < fn; i++ {
		if k := w.fastRun(int(fn - i)); k > 0 {
			i += int32(k) - 1
			continue
		}
		op, pos, err := w.advance()
		if err != nil {
			return err
		}
		if err := w.feature(op, pos); err != nil {
			return err
		}
	}
	if w.n >= w.seqPos {
		rest := w.n - w.seqPos + 1
		if w.hasRef && w.placed {
			inside, err := w.match(rest)
			if err != nil {
				return err
			}
			if inside {
				w.refPos += rest
			}
		} else if w.placed {
			w.refPos += rest
		}
		w.extend(cigM, rest)
	}
	if w.cigLen != 0 {
		w.emit(uint32(w.cigLen)<<4 | w.cigOp)
	}
	return nil
}

// advance reads the next feature's code (FC) and position (FP) and
// matches the bases up to it (featureWalker.feature's start).
func (w *leanWalker) advance() (byte, int64, error) {
	var op byte
	var fp int32
	var err error
	if v, ok := next(w.fx.fc); ok {
		op = v
	} else if e := w.ds[DSFC]; e == nil {
		return 0, 0, noEncoding(DSFC)
	} else if v, ok := e.byteFast(w.st); ok {
		op = v
	} else if op, err = readByteSlow(e, w.st, DSFC); err != nil {
		return 0, 0, err
	}
	if v, ok := nextITF8(w.fx.fp); ok {
		fp = v
	} else if e := w.ds[DSFP]; e == nil {
		return 0, 0, noEncoding(DSFP)
	} else if v, ok := e.intFast(w.st); ok {
		fp = v
	} else if fp, err = e.decodeInt(w.st); err != nil {
		return 0, 0, fmt.Errorf("FP: %w", err)
	}
	pos := int64(fp) + w.prevPos
	if pos <= 0 {
		return 0, 0, corruptf("feature position %d before the start of the read", pos)
	}
	if pos > w.seqPos {
		if pos > w.n+1 {
			return 0, 0, corruptf("feature position %d past the end of the %d-base read", pos, w.n)
		}
		gap := pos - w.seqPos
		if w.hasRef && w.placed {
			if _, err := w.match(gap); err != nil {
				return 0, 0, err
			}
		}
		w.extend(cigM, gap)
		w.refPos += gap
		w.seqPos = pos
	}
	w.prevPos = pos
	return op, pos, nil
}

// feature reads the data of feature op at read position pos.
func (w *leanWalker) feature(op byte, pos int64) error {
	switch op {
	case 'X':
		return w.substitution()
	case 'i':
		return w.insertedBase(pos)
	case 'D':
		dl, err := featLength(w.ds, w.st, DSDL)
		if err != nil {
			return err
		}
		if w.md.active() {
			if err := w.md.deletion(w.view, w.refPos, dl, w.refLen); err != nil {
				return err
			}
		}
		w.extend(cigD, dl)
		w.refPos += dl
		return nil
	case 'I':
		m, err := w.baseArray(DSIN, pos-1)
		if err != nil {
			return err
		}
		w.extend(cigI, m)
		w.seqPos += m
		w.md.edits += m
		return nil
	case 'S':
		return w.softClip(pos)
	}
	return w.rareFeature(op, pos)
}

// rareFeature is feature for the codes short and long reads seldom have.
func (w *leanWalker) rareFeature(op byte, pos int64) error {
	switch op {
	case 'b':
		return w.bases(pos)
	case 'q':
		return w.qualities(pos)
	case 'B':
		return w.baseAndQuality(pos)
	case 'Q':
		if _, err := w.k.byteOf(w.ds, DSQS); err != nil {
			return err
		}
		if pos-1 >= w.n {
			return corruptf("quality at read position %d past the %d-base read", pos, w.n)
		}
		return nil
	case 'H':
		return w.skip(DSHC, cigH)
	case 'P':
		return w.skip(DSPD, cigP)
	case 'N':
		return w.skip(DSRS, cigN)
	}
	return corruptf("unknown read feature code %q", op)
}

// emit counts one CIGAR operation, c as BAM encodes it: its length is
// what BAM's 28 bits keep of it. Which sums it adds to is a bit of a mask
// rather than a branch: the operations of a long read alternate.
func (w *leanWalker) emit(c uint32) {
	w.ops++
	n, op := int64(c>>4), c&0xf
	w.refSum += pending(cigRefOps, op, n)
	w.querySum += pending(cigQueryOps, op, n)
}

// extend adds k to the CIGAR operation op, ending the previous one if it
// differs.
func (w *leanWalker) extend(op uint32, k int64) {
	if w.cigLen != 0 && w.cigOp != op {
		w.emit(uint32(w.cigLen)<<4 | w.cigOp)
		w.cigLen = 0
	}
	w.cigOp = op
	w.cigLen += k
}

// match is featureWalker.match without bases to copy: it checks the k
// bases at refPos against the view and counts them for MD and NM.
func (w *leanWalker) match(k int64) (bool, error) {
	v := w.view
	if w.refPos+k > w.refLen {
		if rlen := w.refLen - w.refPos; rlen > 0 {
			if w.refPos+rlen > v.limit {
				return false, errBeyondSlice(w.refPos + rlen)
			}
			if _, err := v.slice(w.refPos, w.refPos+rlen); err != nil {
				return false, err
			}
		}
		w.md.pastReference(k)
		return false, nil
	}
	if w.refPos+k > v.limit {
		return false, errBeyondSlice(w.refPos + k)
	}
	b, ok := v.held(w.refPos, w.refPos+k)
	if !ok {
		var err error
		if b, err = v.sliceSlow(w.refPos, w.refPos+k); err != nil {
			return false, err
		}
	}
	if w.md.active() {
		if !v.hasN(w.refPos, w.refPos+k) {
			w.md.dist += k
		} else {
			w.md.matchNs(v, w.refPos, k, b)
		}
	}
	return true, nil
}

// substitution is feature 'X': its code (BS) read past, a mismatch with
// the reference base where there is one.
func (w *leanWalker) substitution() error {
	if !w.fx.skipBS {
		if _, err := w.k.byteOf(w.ds, DSBS); err != nil {
			return err
		}
	}
	if !w.placed || w.refPos >= w.refLen || !w.hasRef {
		w.md.offReference()
	} else {
		if w.refPos < w.view.limit {
			if _, ok := w.view.held(w.refPos, w.refPos+1); !ok {
				if _, err := w.view.at(w.refPos); err != nil {
					return err
				}
			}
		}
		// MD's text counts a base; which one changes no length.
		w.md.mismatch('N')
	}
	w.md.edits++
	w.extend(cigM, 1)
	w.seqPos++
	w.refPos++
	return nil
}

// insertedBase is feature 'i': one inserted base (BA) read past.
func (w *leanWalker) insertedBase(pos int64) error {
	if !w.fx.skipBA {
		if _, err := w.k.byteOf(w.ds, DSBA); err != nil {
			return err
		}
	}
	if w.n > 0 && pos-1 >= w.n {
		return corruptf("insertion at read position %d past the %d-base read", pos, w.n)
	}
	w.extend(cigI, 1)
	w.seqPos++
	w.md.edits++
	return nil
}

// softClip is feature 'S': SC bases, a soft clip of their length.
func (w *leanWalker) softClip(pos int64) error {
	if w.cigLen != 0 {
		w.emit(uint32(w.cigLen)<<4 | w.cigOp)
		w.cigLen = 0
	}
	m, err := w.baseArray(DSSC, pos-1)
	if err != nil {
		return err
	}
	w.emit(uint32(m)<<4 | cigS)
	w.cigOp = cigS
	w.seqPos += m
	return nil
}

// bases is feature 'b': BB bases stored in place of the reference's.
func (w *leanWalker) bases(pos int64) error {
	m, err := w.baseArray(DSBB, pos-1)
	if err != nil {
		return err
	}
	if w.md.active() {
		if err := w.md.bases(w.view, w.refPos, m, w.refLen, w.hasRef); err != nil {
			return err
		}
	}
	w.extend(cigM, m)
	w.seqPos += m
	w.refPos += m
	return nil
}

// qualities is feature 'q': QQ qualities, read past when the plan reads
// them at all.
func (w *leanWalker) qualities(pos int64) error {
	if w.cigLen != 0 && w.cigOp != cigM {
		w.emit(uint32(w.cigLen)<<4 | w.cigOp)
		w.cigLen = 0
	}
	_, m, err := w.k.qualsOf(w.ds)
	if err != nil {
		return err
	}
	if err := w.fits(DSQQ, pos-1, m); err != nil {
		return err
	}
	w.cigOp = cigM
	return nil
}

// baseAndQuality is feature 'B': one stored base (BA) and its quality
// (QS), read past.
func (w *leanWalker) baseAndQuality(pos int64) error {
	if _, err := w.k.byteOf(w.ds, DSBA); err != nil {
		return err
	}
	if w.n > 0 && pos-1 >= w.n {
		return corruptf("base at read position %d past the %d-base read", pos, w.n)
	}
	if w.md.active() {
		if err := w.md.base(w.view, w.refPos, w.refLen, w.hasRef); err != nil {
			return err
		}
	}
	if _, err := w.k.byteOf(w.ds, DSQS); err != nil {
		return err
	}
	w.extend(cigM, 1)
	w.seqPos++
	w.refPos++
	return nil
}

// skip is features 'H', 'P' and 'N': a hard clip (HC), padding (PD) or
// reference skip (RS) of the length read from series s.
func (w *leanWalker) skip(s DataSeries, op uint32) error {
	v, err := featLength(w.ds, w.st, s)
	if err != nil {
		return err
	}
	w.extend(op, v)
	if op == cigN {
		w.refPos += v
	}
	return nil
}

// baseArray reads the length of the byte array value of series s (SC,
// IN, BB), checked to fit the read at offset off.
func (w *leanWalker) baseArray(s DataSeries, off int64) (int64, error) {
	_, m, err := w.k.arrayOf(w.ds, s)
	if err != nil {
		return 0, err
	}
	return m, w.fits(s, off, m)
}

// fits is featureWalker.put's check: m bytes of series s at read offset
// off lie in the read (a read stored without bases takes any).
func (w *leanWalker) fits(s DataSeries, off, m int64) error {
	if w.n == 0 {
		return nil
	}
	if off < 0 || off+m > w.n {
		return corruptf("%v: %d bytes at read position %d overrun the %d-base read", s, m, off+1, w.n)
	}
	return nil
}
