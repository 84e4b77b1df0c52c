package decode

// The lean pass reads the data series the shapes need and, of the others,
// only those whose reads keep a needed one in step: a series reading the
// core block (every bit of it is read in order) or a block whose bytes a
// read series needs. Blocks no read needs the bytes of stay compressed;
// reads of a known number of bytes from them (qualities, bases, the values
// of integer tags) only move a position.

// neededSeries are read for the shapes: their values, or the lengths of
// their byte arrays (RN, BB, IN, SC).
var neededSeries = [...]DataSeries{DSBF, DSCF, DSRI, DSRL, DSAP, DSRG, DSRN, DSNF, DSTL,
	DSFN, DSFC, DSFP, DSDL, DSBB, DSIN, DSRS, DSPD, DSHC, DSSC}

// skippedSeries are read by records but change no length: mate flags,
// reference, position and template length, mapping quality, bases,
// qualities and substitution codes.
var skippedSeries = [...]DataSeries{DSMF, DSNS, DSNP, DSTS, DSMQ, DSBS, DSBA, DSQS, DSQQ}

// blockUse is how reading one value of an encoding touches a slice's
// blocks: the core block, and up to two external blocks, each for its
// bytes (value) or only for a position.
type blockUse struct {
	core bool
	// unknown is set for an encoding this plan does not know the blocks
	// of (one added for a later CRAM version): every series is then read.
	unknown bool
	n       int
	id      [2]int32
	value   [2]bool
}

func (u *blockUse) add(id int32, value bool) {
	if u.n < len(u.id) {
		u.id[u.n], u.value[u.n] = id, value
		u.n++
	}
}

// usesOf returns how the lean pass reads one value of a series of type vt
// with encoding e: an integer needs its bytes (ITF-8), a byte or the bytes
// of an array need them only when bytes is set (else their count is
// known), the length of an array always.
func usesOf(e *Encoding, vt valueType, bytes bool) blockUse {
	var u blockUse
	if e == nil {
		return u
	}
	switch e.ID {
	case EncodingExternal:
		u.add(e.ContentID, vt == typeInt || bytes)
	case EncodingByteArrayStop:
		u.add(e.ContentID, true)
	case EncodingByteArrayLen:
		l, v := usesOf(e.Len, typeInt, true), usesOf(e.Val, typeByte, bytes)
		u = l
		u.core = l.core || v.core
		u.unknown = l.unknown || v.unknown
		for k := range v.n {
			u.add(v.id[k], v.value[k])
		}
	case EncodingHuffman:
		u.core = e.huff.count[0] == 0 // a one-symbol code reads no bits
	case EncodingBeta:
		u.core = e.NBits > 0
	case EncodingSubexp, EncodingGamma:
		u.core = true
	default:
		u.unknown = true
	}
	return u
}

// plan decides, for the containers of compression header ch, which of
// the skipped series records still read (leanState.read).
func (l *leanState) plan(ch *CompressionHeader) {
	if l.dataIDs == nil {
		l.dataIDs = make(map[int32]bool)
	}
	clear(l.dataIDs)
	l.read = [numDataSeries]bool{}
	l.names = namesBlock(ch)
	unknown := false
	for s := range ch.DataSeries {
		unknown = unknown || usesOf(ch.DataSeries[s], dataSeriesInfo[s].vt, false).unknown
	}
	for _, e := range ch.Tags {
		unknown = unknown || usesOf(e, typeByteArray, false).unknown
	}
	for _, s := range neededSeries {
		l.read[s] = true
		l.need(usesOf(ch.DataSeries[s], dataSeriesInfo[s].vt, s == DSFC))
	}
	if unknown {
		for _, s := range skippedSeries {
			l.read[s] = true
		}
		l.lines = l.lines[:0] // no tag deferred
		return
	}
	for _, e := range ch.Tags {
		l.need(usesOf(e, typeByteArray, false))
	}
	for _, p := range ch.tagPlans {
		for k := range p.ops {
			if op := &p.ops[k]; op.cF {
				l.need(usesOf(op.enc, typeByteArray, true))
			}
		}
	}
	for changed := true; changed; {
		changed = false
		for _, s := range skippedSeries {
			if l.read[s] {
				continue
			}
			e := ch.DataSeries[s]
			u := usesOf(e, dataSeriesInfo[s].vt, false)
			touches := e == nil || u.core // a missing encoding is read to fail as the full decode does
			for k := range u.n {
				touches = touches || l.dataIDs[u.id[k]]
			}
			if touches {
				l.read[s] = true
				l.need(u)
				changed = true
			}
		}
	}
	l.planTags(ch)
}

// need notes the blocks whose bytes u reads.
func (l *leanState) need(u blockUse) {
	for k := range u.n {
		if u.value[k] {
			l.dataIDs[u.id[k]] = true
		}
	}
}

// namesBlock returns the content ID of the block that RN alone reads
// NUL-terminated names from (BYTE_ARRAY_STOP, stop 0), whose names' lengths
// are all the shapes need of it; -1 when there is none.
func namesBlock(ch *CompressionHeader) int32 {
	e := ch.DataSeries[DSRN]
	if e == nil || e.ID != EncodingByteArrayStop || e.Stop != 0 {
		return -1
	}
	id := e.ContentID
	for s, o := range ch.DataSeries {
		if DataSeries(s) != DSRN && readsBlock(o, dataSeriesInfo[s].vt, id) {
			return -1
		}
	}
	for _, o := range ch.Tags {
		if readsBlock(o, typeByteArray, id) {
			return -1
		}
	}
	return id
}

// readsBlock reports whether a value of type vt with encoding e may read
// block id (an encoding this plan does not know may read any).
func readsBlock(e *Encoding, vt valueType, id int32) bool {
	u := usesOf(e, vt, true)
	for k := range u.n {
		if u.id[k] == id {
			return true
		}
	}
	return u.unknown
}
