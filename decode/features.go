package decode

import (
	"fmt"
	"math"
)

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

// decodeSeq decodes the read features of a mapped record and rebuilds its
// sequence, qualities, CIGAR, and MD and NM (htslib's cram_decode_seq).
func (d *Decoder) decodeSeq(ch *CompressionHeader, cr *crec, view *refView, hasRef bool, seq, qual []byte, hasMD, hasNM bool) error {
	st := &d.st
	ds := &ch.DataSeries
	cf := cr.cf
	n := int64(cr.length)
	doMD := !d.opt.NoMD
	decodeMD := hasRef && cr.refID >= 0 && doMD && !hasMD
	decodeNM := hasRef && cr.refID >= 0 && doMD && !hasNM
	if cf&cfNoSeq != 0 {
		decodeMD, decodeNM = false, false
	}
	if cf&cfPreserveQual == 0 {
		for i := range qual {
			qual[i] = 0xff
		}
	}
	var refLen int64
	if cr.refID >= 0 {
		refLen = d.refLength(int(cr.refID))
	}
	aux := d.aux
	if decodeMD {
		aux = append(aux, 'M', 'D', 'Z')
	}
	var mdDist int64
	var nm int64
	addMD := func(c byte) {
		if decodeMD {
			aux = appendUint(aux, mdDist)
			aux = append(aux, c)
			mdDist = 0
		}
	}
	fnE := ds[DSFN]
	if fnE == nil {
		return corruptf("data series FN has no encoding")
	}
	fn, err := fnE.decodeInt(st)
	if err != nil {
		return fmt.Errorf("FN: %w", err)
	}
	if fn < 0 || int64(fn) > n+int64(st.maxArray)+1 {
		return corruptf("%d read features", fn)
	}
	refPos := cr.apos - 1
	seqPos := int64(1)
	prevPos := int64(0)
	cigOp := uint32(cigM)
	var cigLen int64
	cig := d.cigars
	flush := func(op uint32) {
		if cigLen != 0 && cigOp != op {
			cig = append(cig, uint32(cigLen)<<4|cigOp)
			cigLen = 0
		}
	}
	featureByte := func(s DataSeries, name string) (byte, error) {
		if e := ds[s]; e != nil {
			if v, ok := e.byteFast(st); ok {
				return v, nil
			}
		}
		return featureByteSlow(ds[s], st, name)
	}
	featureInt := func(s DataSeries, name string) (int64, error) {
		if e := ds[s]; e != nil {
			if v, ok := e.intFast(st); ok {
				return int64(v), nil // below 128
			}
		}
		return featureIntSlow(ds[s], st, name)
	}
	// featureArray decodes a byte array into dst at off, which must fit.
	var scratch []byte
	featureArray := func(s DataSeries, name string, dst []byte, off int64) (int64, error) {
		e := ds[s]
		if e == nil {
			return 0, corruptf("data series %s has no encoding", name)
		}
		var b []byte
		var err error
		if e.ID == EncodingByteArrayStop {
			// The bytes as they lie in their block, copied once.
			var x *extStream
			if x, err = e.stream(st); err == nil {
				b, err = x.readUntil(e.Stop)
			}
		} else {
			scratch, err = e.appendArray(st, scratch[:0])
			b = scratch
		}
		if err != nil {
			return 0, fmt.Errorf("%s: %w", name, err)
		}
		m := int64(len(b))
		if n == 0 {
			// A read stored without bases ('*'): htslib decodes the
			// feature's bytes and drops them.
			return m, nil
		}
		if off < 0 || off+m > int64(len(dst)) {
			return 0, corruptf("%s: %d bytes at read position %d overrun the %d-base read", name, m, off+1, n)
		}
		copy(dst[off:], b)
		return m, nil
	}
	fillQual30 := func() {
		if cf&cfPreserveQual == 0 && len(qual) > 0 && qual[0] == 0xff {
			for i := range qual {
				qual[i] = 30
			}
		}
	}

	// match fills k bases at seqPos from the reference at refPos, the
	// implicit match between features (htslib's cram_decode_seq): an 'N' in
	// the reference counts as a mismatch for MD and NM, and a match running
	// past the reference's end is filled with 'N' (to the read's end when
	// it starts past the reference). It reports whether the match lies
	// inside the reference. It does not move refPos or seqPos.
	match := func(k int64) (bool, error) {
		if refPos+k > refLen {
			rlen := refLen - refPos
			if rlen > 0 {
				if refPos+rlen > view.limit {
					return false, errBeyondSlice(refPos + rlen)
				}
				b, err := view.slice(refPos, refPos+rlen)
				if err != nil {
					return false, err
				}
				copy(seq[seqPos-1:], b)
				for i := seqPos - 1 + rlen; i < seqPos-1+k; i++ {
					seq[i] = 'N'
				}
			} else {
				for i := seqPos - 1; i < n; i++ {
					seq[i] = 'N'
				}
			}
			if mdDist >= 0 {
				mdDist += k
			}
			return false, nil
		}
		if refPos+k > view.limit {
			return false, errBeyondSlice(refPos + k)
		}
		b, err := view.slice(refPos, refPos+k)
		if err != nil {
			return false, err
		}
		if (decodeMD || decodeNM) && view.hasN(refPos, refPos+k) {
			for i, base := range b {
				if base == 'N' {
					addMD('N')
					nm++
				} else {
					mdDist++
				}
				seq[seqPos-1+int64(i)] = base
			}
			return true, nil
		}
		copy(seq[seqPos-1:], b)
		if decodeMD || decodeNM {
			mdDist += k
		}
		return true, nil
	}

	fpE := ds[DSFP]
	for f := int32(0); f < fn; f++ {
		op, err := featureByte(DSFC, "FC")
		if err != nil {
			return err
		}
		var fp int32
		if fpE == nil {
			return corruptf("data series FP has no encoding")
		} else if v, ok := fpE.intFast(st); ok {
			fp = v
		} else if fp, err = featureInt2(ds, st); err != nil {
			return err
		}
		pos := int64(fp) + prevPos
		if pos <= 0 {
			return corruptf("feature position %d before the start of the read", pos)
		}
		if pos > seqPos {
			if pos > n+1 {
				return corruptf("feature position %d past the end of the %d-base read", pos, n)
			}
			gap := pos - seqPos
			if hasRef && cr.refID >= 0 {
				if _, err := match(gap); err != nil {
					return err
				}
			}
			flush(cigM)
			cigOp = cigM
			cigLen += gap
			refPos += gap
			seqPos = pos
		}
		prevPos = pos

		switch op {
		case 'S':
			if cigLen != 0 {
				cig = append(cig, uint32(cigLen)<<4|cigOp)
				cigLen = 0
			}
			m, err := featureArray(DSSC, "SC", seq, pos-1)
			if err != nil {
				return err
			}
			cig = append(cig, uint32(m)<<4|cigS)
			cigOp = cigS
			seqPos += m
		case 'X':
			flush(cigM)
			base, err := featureByte(DSBS, "BS")
			if err != nil {
				return err
			}
			if base > 3 {
				return corruptf("BS: substitution code %d", base)
			}
			if cr.refID < 0 || refPos >= refLen || !hasRef {
				if pos-1 < n {
					seq[pos-1] = ch.SubstitutionMatrix[4][base]
				}
				if decodeMD || decodeNM {
					if mdDist >= 0 && decodeMD {
						aux = appendUint(aux, mdDist)
					}
					mdDist = -1
					nm--
				}
			} else {
				refCall := byte('N')
				if refPos < view.limit {
					if refCall, err = view.at(refPos); err != nil {
						return err
					}
				}
				if pos-1 < n {
					seq[pos-1] = ch.SubstitutionMatrix[l1[refCall]][base]
				}
				addMD(refCall)
			}
			cigOp = cigM
			nm++
			cigLen++
			seqPos++
			refPos++
		case 'D':
			flush(cigD)
			dl, err := featureInt(DSDL, "DL")
			if err != nil {
				return err
			}
			if decodeMD || decodeNM {
				if refPos+dl > view.limit {
					return errBeyondSlice(refPos + dl)
				}
				if mdDist >= 0 && decodeMD {
					aux = appendUint(aux, mdDist)
				}
				if refPos+dl <= refLen {
					if decodeMD {
						b, err := view.slice(refPos, refPos+dl)
						if err != nil {
							return err
						}
						aux = append(aux, '^')
						aux = append(aux, b...)
						mdDist = 0
					}
					nm += dl
				} else {
					var dlen int64
					if refLen >= refPos {
						if decodeMD {
							b, err := view.slice(refPos, refLen)
							if err != nil {
								return err
							}
							aux = append(aux, '^')
							aux = append(aux, b...)
							aux = append(aux, '0')
						}
						dlen = dl - (refLen - refPos)
						nm += dl - dlen
					}
					mdDist = -1
				}
			}
			cigOp = cigD
			cigLen += dl
			refPos += dl
		case 'I':
			flush(cigI)
			m, err := featureArray(DSIN, "IN", seq, pos-1)
			if err != nil {
				return err
			}
			cigOp = cigI
			cigLen += m
			seqPos += m
			nm += m
		case 'i':
			flush(cigI)
			b, err := featureByte(DSBA, "BA")
			if err != nil {
				return err
			}
			if n > 0 {
				if pos-1 >= n {
					return corruptf("insertion at read position %d past the %d-base read", pos, n)
				}
				seq[pos-1] = b
			}
			cigOp = cigI
			cigLen++
			seqPos++
			nm++
		case 'b':
			flush(cigM)
			m, err := featureArray(DSBB, "BB", seq, pos-1)
			if err != nil {
				return err
			}
			if decodeMD || decodeNM {
				if mdDist >= 0 && decodeMD {
					aux = appendUint(aux, mdDist)
				}
				x := int64(0)
				for ; x < m; x++ {
					if x > 0 && decodeMD {
						aux = append(aux, '0')
					}
					if refPos+x >= refLen || !hasRef {
						mdDist = -1
						break
					}
					if decodeMD {
						if refPos+x > view.limit {
							return errBeyondSlice(refPos + x)
						}
						r, err := view.at(refPos + x)
						if err != nil {
							return err
						}
						aux = append(aux, r)
					}
				}
				nm += x
				mdDist = 0
			}
			cigOp = cigM
			cigLen += m
			seqPos += m
			refPos += m
		case 'q':
			flush(cigM)
			fillQual30()
			if _, err := featureArray(DSQQ, "QQ", qual, pos-1); err != nil {
				return err
			}
			cigOp = cigM
		case 'B':
			flush(cigM)
			b, err := featureByte(DSBA, "BA")
			if err != nil {
				return err
			}
			if n > 0 {
				if pos-1 >= n {
					return corruptf("base at read position %d past the %d-base read", pos, n)
				}
				seq[pos-1] = b
			}
			if decodeMD || decodeNM {
				if mdDist >= 0 && decodeMD {
					aux = appendUint(aux, mdDist)
				}
				if refPos >= refLen || !hasRef {
					mdDist = -1
				} else {
					if decodeMD {
						if refPos > view.limit {
							return errBeyondSlice(refPos)
						}
						r, err := view.at(refPos)
						if err != nil {
							return err
						}
						aux = append(aux, r)
					}
					nm++
					mdDist = 0
				}
			}
			fillQual30()
			q, err := featureByte(DSQS, "QS")
			if err != nil {
				return err
			}
			if pos-1 < n {
				qual[pos-1] = q
			}
			cigOp = cigM
			cigLen++
			seqPos++
			refPos++
		case 'Q':
			fillQual30()
			q, err := featureByte(DSQS, "QS")
			if err != nil {
				return err
			}
			if pos-1 >= n {
				return corruptf("quality at read position %d past the %d-base read", pos, n)
			}
			qual[pos-1] = q
		case 'H':
			flush(cigH)
			v, err := featureInt(DSHC, "HC")
			if err != nil {
				return err
			}
			cigOp = cigH
			cigLen += v
		case 'P':
			flush(cigP)
			v, err := featureInt(DSPD, "PD")
			if err != nil {
				return err
			}
			cigOp = cigP
			cigLen += v
		case 'N':
			flush(cigN)
			v, err := featureInt(DSRS, "RS")
			if err != nil {
				return err
			}
			cigOp = cigN
			cigLen += v
			refPos += v
		default:
			return corruptf("unknown read feature code %q", op)
		}
	}

	// The bases after the last feature match the reference.
	if n >= seqPos {
		rest := n - seqPos + 1
		if hasRef && cr.refID >= 0 {
			inside, err := match(rest)
			if err != nil {
				return err
			}
			if inside {
				// Like htslib, the end does not move past the reference's end.
				refPos += rest
			}
		} else if cr.refID >= 0 {
			refPos += rest
		}
		flush(cigM)
		cigOp = cigM
		cigLen += rest
	}
	if decodeMD && mdDist >= 0 {
		aux = appendUint(aux, mdDist)
	}
	if cigLen != 0 {
		cig = append(cig, uint32(cigLen)<<4|cigOp)
	}
	d.cigars = cig
	cr.aend = max(refPos, cr.apos)

	mq, err := featureInt2MQ(ds, st)
	if err != nil {
		return err
	}
	cr.mapq = uint8(mq)
	if cf&cfPreserveQual != 0 {
		if err := d.readQuals(ds, cr, qual); err != nil {
			return fmt.Errorf("QS: %w", err)
		}
	}
	if cf&cfNoSeq != 0 {
		cr.length = 0
	}
	if decodeMD {
		aux = append(aux, 0)
	}
	if decodeNM {
		switch {
		case nm >= 0 && nm <= math.MaxUint8:
			aux = append(aux, 'N', 'M', 'C', byte(nm))
		case nm >= 0 && nm <= math.MaxUint16:
			aux = append(aux, 'N', 'M', 'S', byte(nm), byte(nm>>8))
		default:
			aux = append(aux, 'N', 'M', 'I', byte(nm), byte(nm>>8), byte(nm>>16), byte(nm>>24))
		}
	}
	d.aux = aux
	return nil
}

// featureByteSlow is decodeSeq's featureByte past its inlined first case.
func featureByteSlow(e *Encoding, st *streams, name string) (byte, error) {
	if e == nil {
		return 0, corruptf("data series %s has no encoding", name)
	}
	v, err := e.decodeByte(st)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	return v, nil
}

// featureIntSlow is decodeSeq's featureInt past its inlined first case:
// a length, which must not be negative.
func featureIntSlow(e *Encoding, st *streams, name string) (int64, error) {
	if e == nil {
		return 0, corruptf("data series %s has no encoding", name)
	}
	v, err := e.decodeInt(st)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	if v < 0 {
		return 0, corruptf("%s: length %d", name, v)
	}
	return int64(v), nil
}

// featureInt2 reads a feature position (FP); decodeSeq tries intFast
// first.
func featureInt2(ds *[numDataSeries]*Encoding, st *streams) (int32, error) {
	e := ds[DSFP]
	if e == nil {
		return 0, corruptf("data series FP has no encoding")
	}
	v, err := e.decodeInt(st)
	if err != nil {
		return 0, fmt.Errorf("FP: %w", err)
	}
	return v, nil
}

// featureInt2MQ reads the mapping quality (MQ).
func featureInt2MQ(ds *[numDataSeries]*Encoding, st *streams) (int32, error) {
	e := ds[DSMQ]
	if e == nil {
		return 0, corruptf("data series MQ has no encoding")
	}
	v, err := e.decodeInt(st)
	if err != nil {
		return 0, fmt.Errorf("MQ: %w", err)
	}
	return v, nil
}

// Footprint returns the bytes of storage d holds for reuse between
