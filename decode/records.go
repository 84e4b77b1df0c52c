package decode

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
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

// CRAM record flags (CF, CRAMv3 §10.1) and next mate flags (MF, §10.4).
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

// sliceState is what the record loop of one slice carries from record to
// record (one Decoder, one goroutine: no locks).
type sliceState struct {
	// Dependencies.
	ch *CompressionHeader
	sh SliceHeader // a copy: a pointer would move the caller's to the heap

	// Constant for the slice.
	multi bool // a multi-reference slice: each record reads RI
	// unknownRG is the read group that htslib's writers name UNKNOWN for
	// records without one, or -1.
	unknownRG  int32
	maxReadLen int64
	first      int // index in crecs of the slice's first record
	nrec       int
	// lean: the slice is measured (shapes.go), so its reference views may
	// hold where the 'N's lie rather than the bases (refView.marks).
	lean bool
	fx   featStreams

	// Mutable, record by record.
	// view gives the reference bases; hasRef says whether there are any
	// (a slice of a file decoded without reference has none). In a
	// multi-reference slice, switchRef moves them to each record's
	// reference, lastRefID (-9: none yet): to the Decoder's window view,
	// which keeps what it loaded from slice to slice; fixed holds the span
	// of a single-reference slice.
	view      *refView
	fixed     refView
	hasRef    bool
	lastRefID int32
	lastAPos  int64 // AP of the previous record, for AP deltas
}

// records decodes the records of one slice (CRAMv3 §10), as htslib's
// cram_decode_slice does, and then links their mates.
func (d *Decoder) records(ch *CompressionHeader, sh *SliceHeader) error {
	// The state lives in the Decoder, not on the stack: the reference view
	// it holds leaks (to the read features and the reference's loader),
	// which would cost an allocation per slice. It is dropped afterwards,
	// as a local would be.
	s := d.startSlice(ch, sh)
	err := d.sliceRecords(s)
	*s = sliceState{}
	return err
}

// startSlice sets the Decoder's slice state for the slice sh and returns
// it; the caller clears it when done with the slice.
func (d *Decoder) startSlice(ch *CompressionHeader, sh *SliceHeader) *sliceState {
	s := &d.slice1
	*s = sliceState{ch: ch, sh: *sh, multi: sh.RefSeqID == -2, lastRefID: -9, unknownRG: -1,
		lastAPos: sh.RefStart, first: len(d.crecs), nrec: int(sh.NumRecords)}
	return s
}

// prepareSlice loads the reference view of the slice of s and sets the
// bounds its records are read within, for the full and the lean pass.
func (d *Decoder) prepareSlice(s *sliceState) error {
	ch, sh := s.ch, &s.sh
	var err error
	s.view = &s.fixed
	if s.hasRef, err = d.sliceRef(ch, sh, s.view, s.lean); err != nil {
		return err
	}
	if n := len(d.f.ReadGroups); n > 0 && d.f.ReadGroups[n-1] == "UNKNOWN" {
		s.unknownRG = int32(n - 1)
	}
	// A read's bases are either stored in the slice or copied from the
	// reference it spans, so its length is bounded by the two together;
	// a larger length is a lie that would only make us allocate.
	maxArray := int64(d.st.maxArray)
	s.maxReadLen = maxArray + 1<<16 + sh.RefSpan
	if s.multi {
		s.maxReadLen = max(s.maxReadLen, maxArray+1<<16+d.f.maxRefLen)
	}
	if s.nrec > d.st.maxArray+1 && s.nrec > 1<<20 {
		return corruptf("slice claims %d records for %d bytes of data", s.nrec, d.st.maxArray)
	}
	ds := &ch.DataSeries
	d.st.bindSeries(ds)
	if !s.lean {
		d.st.bindTags(ch)
	}
	s.fx = featStreams{fc: d.st.externalOf(ds[DSFC]), fp: d.st.externalOf(ds[DSFP])}
	if !s.lean {
		s.fx.bs, s.fx.ba = d.st.externalOf(ds[DSBS]), d.st.externalOf(ds[DSBA])
	} else {
		s.fx.skipBS, s.fx.skipBA = !d.lean.read[DSBS], !d.lean.read[DSBA]
	}
	d.reserveCigars(s)
	return nil
}

// reserveCigars makes room in the CIGAR buffer, at once, for the
// operations the records of the slice can make: at most two per read
// feature and one more per record, the features counted by the bytes of
// FC where it is EXTERNAL (a byte each), within a bound proportional to
// the container's bytes as checkNeed bounds its bases. Grown by appends
// instead, a quarter at a time, the buffer was copied and its new room
// cleared at each step: a long-read container's CIGARs touched about five
// times their size in fresh memory. Growth at least doubles, so that the
// slices of a container make few copies.
func (d *Decoder) reserveCigars(s *sliceState) {
	if s.fx.fc == nil || s.lean { // the lean pass counts CIGARs
		return
	}
	n := min(int64(s.nrec)+2*int64(s.fx.fc.size), 8*int64(len(d.cbuf))+1<<16)
	if int64(cap(d.cigars)-len(d.cigars)) >= n {
		return
	}
	c := make([]uint32, len(d.cigars), max(int64(len(d.cigars))+n, 2*int64(cap(d.cigars))))
	copy(c, d.cigars)
	d.cigars = c
}

// sliceRecords is records with its state.
func (d *Decoder) sliceRecords(s *sliceState) error {
	if err := d.prepareSlice(s); err != nil {
		return err
	}
	for rec := 0; rec < s.nrec; rec++ {
		if err := d.decodeRecord(s, rec); err != nil {
			return fmt.Errorf("record %d: %w", rec, err)
		}
	}
	return d.resolveMates(s.first)
}

// decodeRecord decodes record rec of the slice and appends it to crecs
// (CRAMv3 §10.1, DecodeRecord).
func (d *Decoder) decodeRecord(s *sliceState, rec int) error {
	if len(d.crecs) == cap(d.crecs) {
		// Double, rather than append's quarter at a time for large
		// slices: the first containers of a decoder would otherwise
		// leave several times the final size behind as garbage.
		d.crecs = slices.Grow(d.crecs, max(len(d.crecs), 256))
	}
	// The record is decoded in its place in crecs, set field by field: a
	// composite literal is built on the stack and copied, and the copy's
	// wide loads stall on the narrow stores that built it (no store
	// forwarding), at every record. A record that fails is dropped.
	k := len(d.crecs)
	d.crecs = d.crecs[:k+1]
	cr := &d.crecs[k]
	*cr = crec{}
	cr.sliceStart, cr.sliceN, cr.counter = int32(s.first), int32(s.nrec), s.sh.RecordCounter
	cr.mateLine, cr.mateRefID, cr.rg = -1, -1, -1
	cr.tlen, cr.explicitTLen = unsetTLen, unsetTLen
	if err := d.recordFields(s, cr, rec); err != nil {
		d.crecs = d.crecs[:k]
		return err
	}
	if max(len(d.seqs), len(d.quals), len(d.aux), len(d.names), len(d.cigars), len(d.crecs)) >= math.MaxInt32 {
		d.crecs = d.crecs[:k]
		return corruptf("the container decodes to more than 2 GiB")
	}
	return nil
}

// recordFields decodes the fields of record rec of the slice into cr.
func (d *Decoder) recordFields(s *sliceState, cr *crec, rec int) error {
	if err := d.readPositions(s, cr); err != nil {
		return err
	}
	if s.ch.ReadNamesIncluded {
		if err := d.readName(&s.ch.DataSeries, cr); err != nil {
			return err
		}
	}
	if err := d.readMate(s, cr, rec); err != nil {
		return err
	}
	hasMD, hasNM, err := d.readTags(s.ch, cr)
	if err != nil {
		return fmt.Errorf("tags: %w", err)
	}
	if err := d.readRead(s, cr, hasMD, hasNM); err != nil {
		return err
	}
	if cr.rg >= 0 {
		d.aux = append(d.aux, 'R', 'G', 'Z')
		d.aux = append(d.aux, d.f.ReadGroups[cr.rg]...)
		d.aux = append(d.aux, 0)
	}
	cr.auxLen = int32(len(d.aux)) - cr.auxOff
	return nil
}

// readInt reads one integer of data series s (CRAMv3 §10, ReadItem). A
// series the compression header gives no encoding is an error here, when a
// record reads it, and nowhere else (noEncoding).
//
// It is called a dozen times per record: the common cases, an ITF-8
// value from an EXTERNAL block and a constant, are read here from how
// bindSeries found the series, without a further call; readIntRest
// reads the rest.
func (d *Decoder) readInt(ds *[numDataSeries]*Encoding, s DataSeries) (int32, error) {
	sr := &d.st.series[s]
	if x := sr.x; x != nil {
		p := x.pos
		if p < len(x.data) && x.data[p] < 0x80 {
			x.pos = p + 1
			return int32(x.data[p]), nil
		}
		if len(x.data)-p >= 5 {
			// extStream.itf8, written out: it does not inline, and a
			// call per value costs about as much as decoding it.
			u := binary.BigEndian.Uint32(x.data[p:])
			n := bits.LeadingZeros32(^u)
			if n >= 4 {
				x.pos = p + 5
				return int32(u<<4 | uint32(x.data[p+4]&0x0f)), nil
			}
			x.pos = p + 1 + n
			return int32(u >> itf8Shift[n&3] & itf8Mask[n&3]), nil
		}
	} else if sr.isConst {
		return sr.constant, nil
	}
	return d.readIntRest(ds, s)
}

// readIntRest is readInt past its cases: the last values of a block, a
// block still pending, any other encoding (readIntSlow).
func (d *Decoder) readIntRest(ds *[numDataSeries]*Encoding, s DataSeries) (int32, error) {
	if x := d.st.series[s].x; x != nil && !x.pending {
		v, err := x.readITF8Long()
		if err != nil {
			return 0, fmt.Errorf("%v: %w", s, err)
		}
		return v, nil
	}
	return d.readIntSlow(ds[s], s)
}

// readIntSlow reads one integer of data series s with encoding e, past
// the cases readInt and readIntRest take.
func (d *Decoder) readIntSlow(e *Encoding, s DataSeries) (int32, error) {
	if e == nil {
		return 0, noEncoding(s)
	}
	v, err := e.decodeInt(&d.st)
	if err != nil {
		return 0, fmt.Errorf("%v: %w", s, err)
	}
	return v, nil
}

// readPos reads AP, NP or TS: 64-bit values from CRAM 4.0 on (the
// header's V4), readInt's 32-bit ones before.
func (d *Decoder) readPos(ch *CompressionHeader, s DataSeries) (int64, error) {
	if !ch.V4 {
		v, err := d.readInt(&ch.DataSeries, s)
		return int64(v), err
	}
	e := ch.DataSeries[s]
	if e == nil {
		return 0, noEncoding(s)
	}
	v, err := e.decodeLong(&d.st)
	if err != nil {
		return 0, fmt.Errorf("%v: %w", s, err)
	}
	return v, nil
}

// readPositions reads the BAM and CRAM flags (BF, CF; CRAMv3 §10.1) and
// the positional data (RI, RL, AP, RG; §10.2, DecodePositions).
func (d *Decoder) readPositions(s *sliceState, cr *crec) error {
	ds := &s.ch.DataSeries
	bf, err := d.readInt(ds, DSBF)
	if err != nil {
		return err
	}
	if bf < 0 || bf >= 0x1000 {
		return corruptf("BAM flags %d out of range", bf)
	}
	cr.flags = uint16(bf)
	if cr.cf, err = d.readInt(ds, DSCF); err != nil {
		return err
	}
	cr.refID = s.sh.RefSeqID
	if s.multi {
		if cr.refID, err = d.readInt(ds, DSRI); err != nil {
			return err
		}
		if err := d.switchRef(s, cr.refID); err != nil {
			return err
		}
	}
	if cr.refID < -1 || int(cr.refID) >= len(d.f.Refs) {
		return corruptf("reference id %d, header has %d", cr.refID, len(d.f.Refs))
	}
	if cr.length, err = d.readInt(ds, DSRL); err != nil {
		return err
	}
	if cr.length < 0 || int64(cr.length) > s.maxReadLen {
		return corruptf("read length %d", cr.length)
	}
	if cr.apos, err = d.readPos(s.ch, DSAP); err != nil {
		return err
	}
	if s.ch.APDelta {
		cr.apos += s.lastAPos
	}
	s.lastAPos = cr.apos
	if cr.rg, err = d.readInt(ds, DSRG); err != nil {
		return err
	}
	if cr.rg == s.unknownRG {
		cr.rg = -1
	}
	if cr.rg < -1 || int(cr.rg) >= len(d.f.ReadGroups) {
		return corruptf("read group %d, header has %d", cr.rg, len(d.f.ReadGroups))
	}
	return nil
}

// readMate reads the mate data (CRAMv3 §10.4, DecodeMateData): MF, the
// name when names are not stored for every record, NS, NP and TS for a
// detached record; NF (and TS when it is explicit) for one whose mate
// follows in the slice.
func (d *Decoder) readMate(s *sliceState, cr *crec, rec int) error {
	ds := &s.ch.DataSeries
	var err error
	switch cf := cr.cf; {
	case cf&cfDetached != 0:
		if cr.mateFlags, err = d.readInt(ds, DSMF); err != nil {
			return err
		}
		if !s.ch.ReadNamesIncluded {
			if err := d.readName(ds, cr); err != nil {
				return err
			}
		}
		if cr.mateRefID, err = d.readInt(ds, DSNS); err != nil {
			return err
		}
		if cr.matePos, err = d.readPos(s.ch, DSNP); err != nil {
			return err
		}
		if cr.tlen, err = d.readPos(s.ch, DSTS); err != nil {
			return err
		}
	case cf&cfMateDown != 0:
		nf, err := d.readInt(ds, DSNF)
		if err != nil {
			return err
		}
		cr.mateLine = nf + int32(rec) + 1
		if cf&cfExplicitTLen != 0 {
			if cr.explicitTLen, err = d.readPos(s.ch, DSTS); err != nil {
				return err
			}
		}
	case cf&cfExplicitTLen != 0:
		if cr.explicitTLen, err = d.readPos(s.ch, DSTS); err != nil {
			return err
		}
	}
	return nil
}

// readRead decodes the bases and qualities of the record into the
// Decoder's buffers: from its read features and the reference for a
// mapped read (CRAMv3 §10.6), as they are stored for an unmapped one
// (§10.7).
func (d *Decoder) readRead(s *sliceState, cr *crec, hasMD, hasNM bool) error {
	n := int(cr.length)
	preserve := cr.cf&cfPreserveQual != 0
	cr.seqOff = int32(len(d.seqs))
	d.seqs = grow(d.seqs, n)
	seq := d.seqs[cr.seqOff:]
	var qual []byte
	if d.viewQuals && preserve {
		// Features may still write qualities; readQuals then
		// replaces them all with a view of the QS block.
		d.qualScratch = grow(d.qualScratch[:0], n)
		qual = d.qualScratch
	} else {
		cr.qualOff = int32(len(d.quals))
		d.quals = grow(d.quals, n)
		qual = d.quals[cr.qualOff:]
	}
	if !s.hasRef {
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
			return corruptf("alignment position %d but no unmapped flag", cr.apos)
		}
		if err := d.decodeSeq(s, cr, seq, qual, hasMD, hasNM); err != nil {
			return err
		}
	} else if err := d.readUnmapped(s.ch, cr, seq, qual); err != nil {
		return err
	}
	if d.viewQuals && preserve && !cr.hasQualView {
		return corruptf("preserved qualities were not read")
	}
	if !s.ch.QSSeqOrient && cr.flags&flagReverse != 0 {
		// CRAM 4.0 stores the qualities of a reverse read in the read's
		// orientation (QO false): back to the reference's (viewQuals is
		// off for such containers).
		slices.Reverse(qual[:cr.length])
	}
	cr.cigN = int32(len(d.cigars)) - cr.cigOff
	return nil
}

// readUnmapped reads the bases (BA) and preserved qualities (QS) of an
// unmapped read (CRAMv3 §10.7, DecodeUnmappedRead).
func (d *Decoder) readUnmapped(ch *CompressionHeader, cr *crec, seq, qual []byte) error {
	cr.aend = cr.apos
	ds := &ch.DataSeries
	if n := len(seq); n > 0 {
		e := ds[DSBA]
		if e == nil {
			return noEncoding(DSBA)
		}
		b, err := e.appendBytes(&d.st, seq[:0], n)
		if err != nil {
			return fmt.Errorf("BA: %w", err)
		}
		if len(b) != n || &b[0] != &seq[0] {
			return corruptf("BA gave %d bases for %d", len(b), n)
		}
	}
	if cr.cf&cfPreserveQual == 0 {
		for i := range qual {
			qual[i] = 0xff
		}
		return nil
	}
	return d.readQuals(ds, cr, qual)
}

// refLength is the reference length htslib bounds MD/NM with: the last
// answer, inline (records come sorted), else refLengthOf's.
func (d *Decoder) refLength(id int) int64 {
	if int32(id) == d.lenID {
		return d.lenRef
	}
	return d.refLengthOf(id)
}

// refLengthOf is refLength asked of the reference, and remembered.
func (d *Decoder) refLengthOf(id int) int64 {
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

// readName reads the read name (RN; CRAMv3 §10.3, DecodeNames).
func (d *Decoder) readName(ds *[numDataSeries]*Encoding, cr *crec) error {
	e := ds[DSRN]
	if e == nil {
		return noEncoding(DSRN)
	}
	off := len(d.names)
	var err error
	if x := d.st.series[DSRN].x; x != nil && !x.pending && e.ID == EncodingByteArrayStop {
		// The block bindSeries found, without appendArray's dispatch.
		var b []byte
		if b, err = x.readUntil(e.Stop); err == nil {
			d.names = append(d.names, b...)
		}
	} else {
		d.names, err = e.appendArray(&d.st, d.names)
	}
	if err != nil {
		return fmt.Errorf("RN: %w", err)
	}
	cr.nameOff, cr.nameLen = int32(off), int32(len(d.names)-off)
	return nil
}
