package decode

import "strconv"

// resolveMates links the mates of a slice's records and rebuilds mate
// fields and template lengths, as htslib's cram_decode_slice_xref does
// (CRAMv3 §10.4).
func (d *Decoder) resolveMates(first int) error {
	recs := d.crecs[first:]
	n := int32(len(recs))
	for rec := int32(0); rec < n; rec++ {
		cr := &recs[rec]
		if cr.mateLine >= 0 {
			if cr.mateLine < n {
				if cr.tlen == unsetTLen {
					id1, id2 := rec, rec
					aleft, aright := cr.apos, cr.aend
					ref := cr.refID
					leftCnt := 0
					for {
						r2 := &recs[id2]
						if aleft > r2.apos {
							aleft, leftCnt = r2.apos, 1
						} else if aleft == r2.apos {
							leftCnt++
						}
						if aright < r2.aend {
							aright = r2.aend
						}
						if r2.mateLine == -1 {
							r2.mateLine = rec
							break
						}
						if r2.mateLine <= id2 || r2.mateLine >= n {
							return corruptf("record %d: mate line %d", id2, r2.mateLine)
						}
						id2 = r2.mateLine
						if recs[id2].refID != ref {
							ref = -1
						}
						if id2 == id1 {
							break
						}
					}
					if ref != -1 {
						tlen := aright - aleft + 1
						set := func(r *crec) {
							if r.apos == aleft {
								if leftCnt == 1 || r.flags&flagRead1 != 0 {
									r.tlen = tlen
								} else {
									r.tlen = -tlen
								}
							} else {
								r.tlen = -tlen
							}
						}
						set(&recs[rec])
						for id := recs[rec].mateLine; id != rec; id = recs[id].mateLine {
							set(&recs[id])
						}
					} else {
						recs[rec].tlen = 0
						for id := recs[rec].mateLine; id != rec; id = recs[id].mateLine {
							recs[id].tlen = 0
						}
					}
				}
				m := &recs[cr.mateLine]
				cr.matePos = m.apos
				cr.mateRefID = m.refID
				cr.flags |= flagPaired
				if m.flags&flagUnmapped != 0 {
					cr.flags |= flagMUnmap
					cr.tlen = 0
				}
				if cr.flags&flagUnmapped != 0 {
					cr.tlen = 0
				}
				if m.flags&flagReverse != 0 {
					cr.flags |= flagMReverse
				}
			}
		} else {
			if cr.mateFlags&mfReverse != 0 {
				cr.flags |= flagPaired | flagMReverse
			}
			if cr.mateFlags&mfUnmapped != 0 {
				cr.flags |= flagMUnmap
			}
			if cr.flags&flagPaired == 0 {
				cr.mateRefID = -1
			}
		}
		if cr.tlen == unsetTLen {
			cr.tlen = 0
		}
	}
	for i := range recs {
		if recs[i].explicitTLen != unsetTLen {
			recs[i].tlen = recs[i].explicitTLen
		}
	}
	return nil
}

// nameRef locates a record's name in the names buffer.
type nameRef struct{ off, n int }

// nameOf locates record i's name in the names buffer: its own, else its
// mate's, else (generated) one to make with appendGeneratedName.
func (d *Decoder) nameOf(i int) (off, n int, generated bool) {
	cr := &d.crecs[i]
	if cr.nameLen > 0 {
		return int(cr.nameOff), int(cr.nameLen), false
	}
	ml := cr.mateLine
	if ml >= 0 && ml < cr.sliceN {
		if m := &d.crecs[cr.sliceStart+ml]; m.nameLen > 0 {
			return int(m.nameOff), int(m.nameLen), false
		}
	}
	return 0, 0, true
}

// appendGeneratedName appends the name htslib's cram_to_bam gives record i
// of a file without read names: the file name, ':', and the record number
// in the file of the first of its mates.
func (d *Decoder) appendGeneratedName(dst []byte, i int) []byte {
	cr := &d.crecs[i]
	rec := i - int(cr.sliceStart)
	dst = append(dst, d.f.prefix()...)
	dst = append(dst, ':')
	num := cr.counter + int64(rec) + 1
	if ml := int(cr.mateLine); ml >= 0 && ml < rec {
		num = cr.counter + int64(ml) + 1
	}
	return strconv.AppendInt(dst, num, 10)
}

// record fills r with decoded record i, named name.
func (d *Decoder) record(i int, name []byte, r *Record) {
	cr := &d.crecs[i]
	n := int(cr.length)
	q := int(cr.qualOff)
	var qual []byte
	if cr.hasQualView {
		qual = d.qsData[q : q+n]
	} else {
		qual = d.quals[q : q+n]
	}
	// Field by field: a composite literal is built on the stack and then
	// copied, and the copy's wide loads stall on the narrow stores that
	// built it (no store forwarding), at every record.
	r.Name = name
	r.Flags = cr.flags
	r.RefID = cr.refID
	r.Pos = cr.apos - 1
	r.MapQ = cr.mapq
	r.Cigar = d.cigars[cr.cigOff : cr.cigOff+cr.cigN]
	r.MateRefID = cr.mateRefID
	r.MatePos = cr.matePos - 1
	r.TemplateLength = cr.tlen
	r.Seq = d.seqs[cr.seqOff : int(cr.seqOff)+n]
	r.Qual = qual
	r.Aux = d.aux[cr.auxOff : cr.auxOff+cr.auxLen]
}

// finish turns the decoded records of a container into Records, generating
// read names where the file has none (htslib's cram_to_bam).
func (d *Decoder) finish() []Record {
	// Generated names go to the end of the names buffer; record offsets
	// are resolved after it stops growing.
	if cap(d.nameRefs) < len(d.crecs) {
		d.nameRefs = make([]nameRef, len(d.crecs))
	}
	names := d.nameRefs[:len(d.crecs)]
	for i := range d.crecs {
		off, n, generated := d.nameOf(i)
		if generated {
			off = len(d.names)
			d.names = d.appendGeneratedName(d.names, i)
			n = len(d.names) - off
		}
		names[i] = nameRef{off, n}
	}
	if cap(d.recs) < len(d.crecs) {
		d.recs = make([]Record, len(d.crecs))
	}
	d.recs = d.recs[:len(d.crecs)]
	for i := range d.crecs {
		d.record(i, d.names[names[i].off:names[i].off+names[i].n], &d.recs[i])
	}
	return d.recs
}
