package decode

import (
	"fmt"
	"math"
	"slices"
)

// crec is a record being decoded; its variable-length parts are offsets
// into the Decoder's buffers until the container is done.
type crec struct {
	// Offsets and lengths are int32 (records checks that the buffers
	// stay below 2 GiB): a 100,000-read container keeps 100,000 of these.
	apos, aend   int64 // 1-based
	matePos      int64
	tlen         int64
	explicitTLen int64
	counter      int64 // slice record counter
	cf           int32
	refID        int32
	length       int32
	rg           int32
	mateFlags    int32
	mateLine     int32
	mateRefID    int32
	nameOff      int32
	nameLen      int32
	seqOff       int32
	qualOff      int32 // into quals, or into qsData when hasQualView
	cigOff       int32
	cigN         int32
	auxOff       int32
	auxLen       int32
	sliceStart   int32 // index of the slice's first record
	sliceN       int32 // records in the slice
	flags        uint16
	mapq         uint8
	hasQualView  bool // qualities read in place from the QS block
}

// CRAM record flags (CRAMv3 §10.2) and mate flags (§10.4).
const (
	cfPreserveQual = 1 << 0
	cfDetached     = 1 << 1
	cfMateDown     = 1 << 2
	cfNoSeq        = 1 << 3
	cfExplicitTLen = 1 << 4
	mfReverse      = 1
	mfUnmapped     = 2
)

// BAM flags.
const (
	flagPaired   = 0x1
	flagUnmapped = 0x4
	flagMUnmap   = 0x8
	flagReverse  = 0x10
	flagMReverse = 0x20
	flagRead1    = 0x40
)

// BAM CIGAR operations.
const (
	cigM = 0
	cigI = 1
	cigD = 2
	cigN = 3
	cigS = 4
	cigH = 5
	cigP = 6
)

const unsetTLen = math.MinInt64

// records decodes the records of one slice (CRAMv3 §10), following
// htslib's cram_decode_slice.
func (d *Decoder) records(ch *CompressionHeader, sh *SliceHeader) error {
	st := &d.st
	ds := &ch.DataSeries
	need := func(s DataSeries, name string) (*Encoding, error) {
		if e := ds[s]; e != nil {
			return e, nil
		}
		return nil, corruptf("data series %s is used but has no encoding", name)
	}
	var view refView
	hasRef, err := d.sliceRef(ch, sh, &view)
	if err != nil {
		return err
	}
	multi := sh.RefSeqID == -2
	lastRefID := int32(-9)
	unknownRG := int32(-1)
	if n := len(d.f.ReadGroups); n > 0 && d.f.ReadGroups[n-1] == "UNKNOWN" {
		unknownRG = int32(n - 1)
	}
	first := len(d.crecs)
	lastAPos := sh.RefStart
	// A read's bases are either stored in the slice or copied from the
	// reference it spans, so its length is bounded by the two together;
	// a larger length is a lie that would only make us allocate.
	maxReadLen := int64(st.maxArray) + 1<<16 + sh.RefSpan
	if multi {
		for _, r := range d.f.Refs {
			maxReadLen = max(maxReadLen, int64(st.maxArray)+1<<16+r.Length)
		}
	}
	nrec := int(sh.NumRecords)
	if nrec > st.maxArray+1 && nrec > 1<<20 {
		return corruptf("slice claims %d records for %d bytes of data", nrec, st.maxArray)
	}
	for rec := 0; rec < nrec; rec++ {
		cr := crec{sliceStart: int32(first), sliceN: int32(nrec), counter: sh.RecordCounter, mateLine: -1, mateRefID: -1, tlen: unsetTLen, explicitTLen: unsetTLen, rg: -1}
		e, err := need(DSBF, "BF")
		if err != nil {
			return err
		}
		bf, err := e.decodeInt(st)
		if err != nil {
			return fmt.Errorf("record %d: BF: %w", rec, err)
		}
		if bf < 0 || bf >= 0x1000 {
			return corruptf("record %d: BAM flags %d out of range", rec, bf)
		}
		cr.flags = uint16(bf)
		if e = ds[DSCF]; e != nil {
			if cr.cf, err = e.decodeInt(st); err != nil {
				return fmt.Errorf("record %d: CF: %w", rec, err)
			}
		} else {
			return corruptf("data series CF has no encoding")
		}
		cf := cr.cf
		cr.refID = sh.RefSeqID
		if multi {
			if e = ds[DSRI]; e != nil {
				if cr.refID, err = e.decodeInt(st); err != nil {
					return fmt.Errorf("record %d: RI: %w", rec, err)
				}
				if cr.refID >= 0 && int(cr.refID) < len(d.f.Refs) && cr.refID != lastRefID {
					if ch.ReferenceRequired {
						if d.opt.Reference == nil {
							r := d.f.Refs[cr.refID]
							return fmt.Errorf("%w: records on %s need a reference (M5 %s) and none was given", ErrReference, r.Name, r.M5)
						}
						id := int(cr.refID)
						src := d.opt.Reference
						view = refView{buf: view.buf[:0], start: 0, load: func(dst []byte, s, e int64) ([]byte, error) { return src.Bases(dst, id, s, e) }}
						hasRef = true
					}
					view.limit = d.refLength(int(cr.refID))
					lastRefID = cr.refID
				}
			} else {
				cr.refID = -1
			}
		}
		if cr.refID < -1 || int(cr.refID) >= len(d.f.Refs) {
			return corruptf("record %d: reference id %d, header has %d", rec, cr.refID, len(d.f.Refs))
		}
		if e, err = need(DSRL, "RL"); err != nil {
			return err
		}
		if cr.length, err = e.decodeInt(st); err != nil {
			return fmt.Errorf("record %d: RL: %w", rec, err)
		}
		if cr.length < 0 || int64(cr.length) > maxReadLen {
			return corruptf("record %d: read length %d", rec, cr.length)
		}
		if e, err = need(DSAP, "AP"); err != nil {
			return err
		}
		ap, err := e.decodeInt(st)
		if err != nil {
			return fmt.Errorf("record %d: AP: %w", rec, err)
		}
		cr.apos = int64(ap)
		if ch.APDelta {
			cr.apos += lastAPos
		}
		lastAPos = cr.apos
		if e, err = need(DSRG, "RG"); err != nil {
			return err
		}
		if cr.rg, err = e.decodeInt(st); err != nil {
			return fmt.Errorf("record %d: RG: %w", rec, err)
		}
		if cr.rg == unknownRG {
			cr.rg = -1
		}
		if cr.rg < -1 || int(cr.rg) >= len(d.f.ReadGroups) {
			return corruptf("record %d: read group %d, header has %d", rec, cr.rg, len(d.f.ReadGroups))
		}
		if ch.ReadNamesIncluded {
			if err := d.readName(ds, &cr); err != nil {
				return fmt.Errorf("record %d: RN: %w", rec, err)
			}
		}
		switch {
		case cf&cfDetached != 0:
			if e = ds[DSMF]; e != nil {
				if cr.mateFlags, err = e.decodeInt(st); err != nil {
					return fmt.Errorf("record %d: MF: %w", rec, err)
				}
			}
			if !ch.ReadNamesIncluded {
				if err := d.readName(ds, &cr); err != nil {
					return fmt.Errorf("record %d: RN: %w", rec, err)
				}
			}
			if e, err = need(DSNS, "NS"); err != nil {
				return err
			}
			if cr.mateRefID, err = e.decodeInt(st); err != nil {
				return fmt.Errorf("record %d: NS: %w", rec, err)
			}
			if e, err = need(DSNP, "NP"); err != nil {
				return err
			}
			np, err := e.decodeInt(st)
			if err != nil {
				return fmt.Errorf("record %d: NP: %w", rec, err)
			}
			cr.matePos = int64(np)
			if e, err = need(DSTS, "TS"); err != nil {
				return err
			}
			ts, err := e.decodeInt(st)
			if err != nil {
				return fmt.Errorf("record %d: TS: %w", rec, err)
			}
			cr.tlen = int64(ts)
		case cf&cfMateDown != 0:
			if e, err = need(DSNF, "NF"); err != nil {
				return err
			}
			nf, err := e.decodeInt(st)
			if err != nil {
				return fmt.Errorf("record %d: NF: %w", rec, err)
			}
			cr.mateLine = nf + int32(rec) + 1
			if cf&cfExplicitTLen != 0 {
				if cr.explicitTLen, err = d.readTLen(ds); err != nil {
					return fmt.Errorf("record %d: TS: %w", rec, err)
				}
			}
		case cf&cfExplicitTLen != 0:
			if cr.explicitTLen, err = d.readTLen(ds); err != nil {
				return fmt.Errorf("record %d: TS: %w", rec, err)
			}
		}

		hasMD, hasNM, err := d.readTags(ch, &cr)
		if err != nil {
			return fmt.Errorf("record %d: tags: %w", rec, err)
		}

		n := int(cr.length)
		cr.seqOff = int32(len(d.seqs))
		d.seqs = grow(d.seqs, n)
		seq := d.seqs[cr.seqOff:]
		var qual []byte
		if d.viewQuals && cf&cfPreserveQual != 0 {
			// Features may still write qualities; readQuals then
			// replaces them all with a view of the QS block.
			d.qualScratch = grow(d.qualScratch[:0], n)
			qual = d.qualScratch
		} else {
			cr.qualOff = int32(len(d.quals))
			d.quals = grow(d.quals, n)
			qual = d.quals[cr.qualOff:]
		}
		if !hasRef {
			for i := range seq {
				seq[i] = '='
			}
		} else {
			// Damaged features can leave bases unwritten; they must not
			// show what an earlier container left in the reused buffer
			// (the output would then depend on the thread count). htslib
			// decodes into fresh memory, zeroed in practice.
			clear(seq)
		}
		cr.cigOff = int32(len(d.cigars))
		if cr.flags&flagUnmapped == 0 {
			if cr.apos <= 0 {
				return corruptf("record %d: alignment position %d but no unmapped flag", rec, cr.apos)
			}
			if err := d.decodeSeq(ch, &cr, &view, hasRef, seq, qual, hasMD, hasNM); err != nil {
				return fmt.Errorf("record %d: %w", rec, err)
			}
		} else {
			cr.aend = cr.apos
			if n > 0 {
				e, err := need(DSBA, "BA")
				if err != nil {
					return err
				}
				b, err := e.appendBytes(st, seq[:0], n)
				if err != nil {
					return fmt.Errorf("record %d: BA: %w", rec, err)
				}
				if len(b) != n || &b[0] != &seq[0] {
					return corruptf("record %d: BA gave %d bases for %d", rec, len(b), n)
				}
			}
			if cf&cfPreserveQual != 0 {
				if err := d.readQuals(ds, &cr, qual); err != nil {
					return fmt.Errorf("record %d: QS: %w", rec, err)
				}
			} else {
				for i := range qual {
					qual[i] = 0xff
				}
			}
		}
		if d.viewQuals && cf&cfPreserveQual != 0 && !cr.hasQualView {
			return corruptf("record %d: preserved qualities were not read", rec)
		}
		cr.cigN = int32(len(d.cigars)) - cr.cigOff
		if cr.rg >= 0 {
			d.aux = append(d.aux, 'R', 'G', 'Z')
			d.aux = append(d.aux, d.f.ReadGroups[cr.rg]...)
			d.aux = append(d.aux, 0)
		}
		cr.auxLen = int32(len(d.aux)) - cr.auxOff
		if max(len(d.seqs), len(d.quals), len(d.aux), len(d.names), len(d.cigars), len(d.crecs)) >= math.MaxInt32 {
			return corruptf("record %d: the container decodes to more than 2 GiB", rec)
		}
		if len(d.crecs) == cap(d.crecs) {
			// Double, rather than append's quarter at a time for large
			// slices: the first containers of a decoder would otherwise
			// leave several times the final size behind as garbage.
			d.crecs = slices.Grow(d.crecs, max(len(d.crecs), 256))
		}
		d.crecs = append(d.crecs, cr)
	}
	return d.resolveMates(first)
}

// refLength is the reference length htslib bounds MD/NM with.
func (d *Decoder) refLength(id int) int64 {
	if int32(id) == d.lenID {
		return d.lenRef
	}
	n := int64(-1)
	if d.opt.Reference != nil {
		n = d.opt.Reference.Length(id)
	}
	if n < 0 {
		n = d.f.Refs[id].Length
	}
	d.lenID, d.lenRef = int32(id), n
	return n
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), 2*cap(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

func (d *Decoder) readName(ds *[numDataSeries]*Encoding, cr *crec) error {
	e := ds[DSRN]
	if e == nil {
		return corruptf("data series RN has no encoding")
	}
	off := len(d.names)
	var err error
	if d.names, err = e.appendArray(&d.st, d.names); err != nil {
		return err
	}
	cr.nameOff, cr.nameLen = int32(off), int32(len(d.names)-off)
	return nil
}

func (d *Decoder) readTLen(ds *[numDataSeries]*Encoding) (int64, error) {
	e := ds[DSTS]
	if e == nil {
		return 0, corruptf("data series TS has no encoding")
	}
	v, err := e.decodeInt(&d.st)
	return int64(v), err
}
