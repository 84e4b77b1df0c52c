package decode

import (
	"fmt"
	"hash"
	"math"
	"slices"

	"github.com/cramfs/cramfs/internal/record"
)

// Shape is a record as far as the length of its BAM encoding and its
// index entry go (see record.Shape).
type Shape = record.Shape

// ContainerShapes measures the records of data container i without
// decoding them in full, and calls fn with each record's Shape in order:
// what Container's Records would give for their own flags, reference,
// position, name length, CIGAR, sequence length and tag bytes (MD and NM
// generated, RG added). It reads only the data series those follow from
// (CRAMv3 §10: flags, positions, read lengths, name lengths, mate links,
// tag lengths, read features) and leaves compressed every block that only
// other series read: qualities, bases, mapping qualities, mate positions.
// The Shape and its CIGAR are valid only during the call; an error from fn
// stops it and is returned as it is.
//
// Where Container would fail, ContainerShapes fails too or, for damage in
// the series it does not read, may not: its caller falls back to the full
// decode for an exact error.
func (d *Decoder) ContainerShapes(i int, fn func(j int, s *Shape) error) error {
	if i < 0 || i >= len(d.f.Containers) {
		return fmt.Errorf("container %d of %d", i, len(d.f.Containers))
	}
	h := &d.f.Containers[i]
	if d.f.Def.Major >= 4 {
		// CRAM 4.0's placeholder tags, 64-bit mate fields and running
		// XDELTA values are not measured by this pass.
		return fmt.Errorf("%s: container at byte %d: lean pass: %w: CRAM %d.%d", d.f.Name, h.Offset, ErrUnsupported, d.f.Def.Major, d.f.Def.Minor)
	}
	if err := d.container(h, true); err != nil {
		return containerError(d.f.Name, h.Offset, err)
	}
	var s Shape
	for j := range d.crecs {
		cr, c := &d.crecs[j], &d.lean.cigars[j]
		_, n, generated := d.nameOf(j)
		if generated {
			n = d.generatedNameLen(j)
		}
		// Every field set in place (see shapeSeq).
		s.Flags, s.RefID, s.Pos, s.NameLen = cr.flags, cr.refID, cr.apos-1, n
		s.Ops, s.RefLen, s.QueryLen = int(cr.cigN), c.ref, c.query
		s.SeqLen, s.AuxLen = int(cr.length), int(cr.auxLen)
		if err := fn(j, &s); err != nil {
			return err
		}
	}
	return nil
}

// generatedNameLen is the length of appendGeneratedName's name.
func (d *Decoder) generatedNameLen(i int) int {
	d.name = d.appendGeneratedName(d.name[:0], i)
	return len(d.name)
}

// cigarSum is a CIGAR the lean pass counted: the bases its operations
// cover on the reference and in the read (Shape.RefLen, QueryLen).
type cigarSum struct {
	ref, query int64
}

// leanState is what the lean pass keeps from container to container.
type leanState struct {
	// cigars holds the counted CIGAR of each record of the container, by
	// its index in crecs (its crec's cigN the number of operations).
	cigars []cigarSum
	// read says, per data series the shapes do not need, whether records
	// still read it: when it shares a block whose bytes are read, or the
	// core block, its reads keep the others in step (plan).
	read [numDataSeries]bool
	// dataIDs holds the content IDs of the blocks whose bytes are read.
	dataIDs map[int32]bool
	// names is the content ID of the block only RN reads, NUL-terminated
	// names (namesBlock), or -1; lens holds the lengths measured in it.
	names   int32
	lens    []uint32
	bl      blockLoader
	scratch []byte // cF tag values
	// runs backs the marks views of single-reference slices; md5 hashes
	// their bases (markSliceRef).
	runs [][2]int64
	md5  hash.Hash
	// lines holds, per tag line of the compression header, which of its
	// tags are read record by record (leanTagLine); deferTags is set for
	// the slice being measured when their deferred tags are.
	lines     []leanTagLine
	deferTags bool
}

// leanTagLine is how the lean pass reads the tags of one tag line. A tag
// of a fixed length whose block no read needs the bytes of (an integer
// tag in a block of its own, as writers store them) only moves that
// block's position: its BAM bytes are a constant of the line (fixed), and
// its moves are added up over the slice's records (recs) and made once at
// the slice's end (skipDeferred). Moves only go forward and their one
// check is the block's size, so the slice fails there exactly when it
// would have failed at some record; rest are the indexes in the line's
// tagPlan of the tags read record by record, in order.
type leanTagLine struct {
	fixed    int
	rest     []int
	deferred []deferredTag
	recs     int
}

// deferredTag is a tag of n bytes a record, from the EXTERNAL block of
// val, that the lean pass moves past once per slice.
type deferredTag struct {
	key [3]byte
	val *Encoding
	n   int
}

// footprint is the bytes the lean state holds for reuse.
func (l *leanState) footprint() int {
	return cap(l.scratch) + 16*cap(l.runs) + 4*cap(l.lens) + 16*cap(l.cigars)
}

// loader returns the block loader of the slice being measured, whose
// embedded reference, if any, is block embeddedRef.
func (l *leanState) loader(d *Decoder, embeddedRef int32) *blockLoader {
	l.bl = blockLoader{codecs: d.opt.Codecs, bufs: &d.blockBufs, names: l.names, lens: &l.lens}
	if embeddedRef == l.names {
		l.bl.names = -1 // its bytes are read too
	}
	return &l.bl
}

// blockLoader decompresses the blocks a lean pass leaves pending, when a
// read first needs their bytes, into the Decoder's block buffers; the
// block of names it only measures (names, -1 for none) when it can.
type blockLoader struct {
	codecs *Codecs
	bufs   *blockBufs
	names  int32
	lens   *[]uint32
}

func (l *blockLoader) load(x *extStream) error {
	blk := &x.blk
	if x.id == l.names && blk.Method == MethodTok3 && blk.RawSize > 0 && l.codecs.Tok3Lengths != nil {
		// Where the names cannot be measured (a NUL inside one, damage),
		// they are decoded below, for their bytes or the exact error.
		if lens, err := l.codecs.Tok3Lengths((*l.lens)[:0], blk.Data, int(blk.RawSize)); err == nil {
			*l.lens = lens
			x.lens, x.measured, x.pending, x.blk = lens, true, false, Block{}
			return nil
		}
	}
	buf := l.bufs.take(blk.ContentType, blk.ContentID)
	raw, err := blk.decompress(l.codecs, buf)
	if err != nil {
		return fmt.Errorf("block of content id %d: %w", blk.ContentID, err)
	}
	if blk.Method != MethodRaw && cap(raw) > cap(buf) {
		buf = raw[:0]
	}
	l.bufs.keep(blk.ContentType, blk.ContentID, buf)
	x.data, x.pending, x.blk = raw, false, Block{}
	return nil
}

// addPending adds an external block to be decompressed on first use.
func (s *streams) addPending(blk Block) {
	s.pool = append(s.pool, extStream{id: blk.ContentID, pending: true, size: int(blk.RawSize), blk: blk})
	s.maxArray += int(blk.RawSize)
}

// skip moves past n bytes whose values are not needed; the block need not
// be decompressed.
func (x *extStream) skip(n int) error {
	if p := x.pos; n >= 0 && n <= x.size-p {
		x.pos = p + n
		return nil
	}
	return &extError{id: x.id, pos: x.pos, want: n, size: x.size}
}

// position is stream for reads that only move a position: it leaves
// the block compressed (the next stream decompresses it).
func (e *Encoding) position(s *streams) (*extStream, error) {
	if x := e.x; x != nil && e.xGen == s.gen {
		return x, nil
	}
	x, err := s.lookup(e.ContentID)
	if err != nil {
		return nil, err
	}
	e.x, e.xGen = x, s.gen
	return x, nil
}

// skipBytes is appendBytes for n values that are not needed.
func (e *Encoding) skipBytes(s *streams, n int) error {
	switch {
	case e.ID == EncodingExternal:
		if n == 0 {
			return nil
		}
		x, err := e.position(s)
		if err != nil {
			return err
		}
		return x.skip(n)
	case e.ID == EncodingHuffman && len(e.huff.count) > 0 && e.huff.count[0] > 0:
		return nil
	}
	for range n {
		if _, err := e.decodeByte(s); err != nil {
			return err
		}
	}
	return nil
}

// arrayLen is appendArray for a value whose length alone is needed.
func (e *Encoding) arrayLen(s *streams) (int, error) {
	switch e.ID {
	case EncodingByteArrayLen:
		if l := e.Len; l.ID == EncodingHuffman && l.huff.count[0] > 0 && e.Val.ID == EncodingExternal {
			n := int(l.huff.symbols[0])
			return n, e.Val.skipBytes(s, n)
		}
		n, err := e.Len.decodeInt(s)
		if err != nil {
			return 0, err
		}
		if n < 0 {
			return 0, corruptf("BYTE_ARRAY_LEN: length %d", n)
		}
		if int(n) > s.maxArray {
			return 0, corruptf("BYTE_ARRAY_LEN: length %d exceeds the slice's data", n)
		}
		return int(n), e.Val.skipBytes(s, int(n))
	case EncodingByteArrayStop:
		x, err := e.stream(s)
		if err != nil {
			return 0, err
		}
		if x.measured {
			return x.nextLen(e.Stop)
		}
		b, err := x.readUntil(e.Stop)
		return len(b), err
	case EncodingExternal:
		return 1, e.skipBytes(s, 1)
	}
	return 0, corruptf("encoding %d cannot decode a byte array", e.ID)
}

// nextLen is readUntil(stop) for a measured block: the length of the next
// name (the block's names are NUL-terminated and only RN reads them, with
// stop 0).
func (x *extStream) nextLen(stop byte) (int, error) {
	if len(x.lens) == 0 {
		return 0, corruptf("external block %d: no stop byte %#x after offset %d", x.id, stop, x.pos)
	}
	n := int(x.lens[0])
	x.lens, x.pos = x.lens[1:], x.pos+n+1
	return n, nil
}

// skipInt reads one value of a series whose values the shapes do not
// need, when plan says its reads keep other series in step.
func (d *Decoder) skipInt(ds *[numDataSeries]*Encoding, s DataSeries) error {
	if !d.lean.read[s] {
		return nil
	}
	_, err := d.readIntSlow(ds[s], s)
	return err
}

// skipByte is skipInt for a byte series, read n times.
func (d *Decoder) skipByte(ds *[numDataSeries]*Encoding, s DataSeries, n int) error {
	if !d.lean.read[s] {
		return nil
	}
	e := ds[s]
	if e == nil {
		return noEncoding(s)
	}
	if err := e.skipBytes(&d.st, n); err != nil {
		return fmt.Errorf("%v: %w", s, err)
	}
	return nil
}

// shapeRecords is records for the lean pass: it measures the records of
// one slice into crecs (lengths, CIGAR, positions and mate links; no
// bases, qualities or tag values), then links their mates.
func (d *Decoder) shapeRecords(ch *CompressionHeader, sh *SliceHeader) error {
	s := d.startSlice(ch, sh)
	s.lean = true
	err := d.sliceShapes(s)
	*s = sliceState{}
	return err
}

// sliceShapes is shapeRecords with its state; it mirrors sliceRecords.
func (d *Decoder) sliceShapes(s *sliceState) error {
	if err := d.prepareSlice(s); err != nil {
		return err
	}
	d.startDeferred(s.sh.EmbeddedRefID)
	for rec := 0; rec < s.nrec; rec++ {
		if err := d.shapeRecord(s, rec); err != nil {
			return fmt.Errorf("record %d: %w", rec, err)
		}
	}
	if err := d.skipDeferred(); err != nil {
		return err
	}
	if !d.needMates(s.first) {
		return nil
	}
	if err := d.resolveMates(s.first); err != nil {
		return err
	}
	return d.checkMateFields(s.first)
}

// needMates reports whether the shapes of the slice's records depend on
// their mate links: when a record has no name of its own (it takes its
// mate's or one made from the mate's number), or when a template length
// made from the records' spans might not fit BAM's 32 bits (checked on
// the links). Else the links, which only set mate fields, are left alone.
func (d *Decoder) needMates(first int) bool {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := first; i < len(d.crecs); i++ {
		cr := &d.crecs[i]
		if cr.nameLen == 0 {
			return true
		}
		lo, hi = min(lo, cr.apos), max(hi, cr.aend)
	}
	if lo > hi {
		return false // no records
	}
	return lo < math.MinInt32 || hi > math.MaxInt32 || hi-lo+1 > math.MaxInt32
}

// checkMateFields refuses a slice whose mate positions or template
// lengths, as resolveMates made them, do not fit BAM's 32 bits: the full
// decode then reports the record (those it reads from NP and TS fit).
func (d *Decoder) checkMateFields(first int) error {
	for i := first; i < len(d.crecs); i++ {
		cr := &d.crecs[i]
		if cr.matePos-1 < math.MinInt32 || cr.matePos-1 > math.MaxInt32 || cr.tlen < math.MinInt32 || cr.tlen > math.MaxInt32 {
			return corruptf("record %d: mate position %d, template length %d beyond 32 bits", i-first, cr.matePos-1, cr.tlen)
		}
	}
	return nil
}

// shapeRecord measures record rec of the slice and appends it to crecs,
// and its counted CIGAR to the lean state's, as decodeRecord decodes it.
// The record is measured in place, where it is appended (a failed one is
// dropped): a crec is a hundred bytes.
func (d *Decoder) shapeRecord(s *sliceState, rec int) error {
	if len(d.crecs) == cap(d.crecs) {
		d.crecs = slices.Grow(d.crecs, max(len(d.crecs), 256))
	}
	// Zeroed and set in place rather than appended as a literal, which
	// is built aside and copied (see shapeSeq).
	d.crecs = d.crecs[:len(d.crecs)+1]
	cr := &d.crecs[len(d.crecs)-1]
	*cr = crec{}
	cr.sliceStart, cr.sliceN, cr.counter = int32(s.first), int32(s.nrec), s.sh.RecordCounter
	cr.mateLine, cr.mateRefID, cr.tlen, cr.explicitTLen, cr.rg = -1, -1, unsetTLen, unsetTLen, -1
	var c cigarSum
	if err := d.measure(s, cr, &c, rec); err != nil {
		d.crecs = d.crecs[:len(d.crecs)-1]
		return err
	}
	d.lean.cigars = append(d.lean.cigars, c)
	return nil
}

// measure is shapeRecord's reading of record rec into cr, its CIGAR
// counted into c.
func (d *Decoder) measure(s *sliceState, cr *crec, c *cigarSum, rec int) error {
	if err := d.readPositions(s, cr); err != nil {
		return err
	}
	ds := &s.ch.DataSeries
	if s.ch.ReadNamesIncluded {
		if err := d.nameLen(ds, cr); err != nil {
			return err
		}
	}
	if err := d.skipMate(s, cr, rec); err != nil {
		return err
	}
	hasMD, hasNM, auxLen, err := d.tagLens(s.ch)
	if err != nil {
		return fmt.Errorf("tags: %w", err)
	}
	ops := 0
	if cr.flags&flagUnmapped == 0 {
		if cr.apos <= 0 {
			return corruptf("alignment position %d but no unmapped flag", cr.apos)
		}
		var n int
		var err error
		if n, ops, err = d.shapeSeq(s, cr, c, hasMD, hasNM); err != nil {
			return err
		}
		auxLen += n
	} else if err := d.shapeUnmapped(ds, cr); err != nil {
		return err
	}
	if cr.rg >= 0 {
		auxLen += 3 + len(d.f.ReadGroups[cr.rg]) + 1
	}
	if auxLen >= math.MaxInt32 || max(ops, len(d.crecs)) >= math.MaxInt32 {
		return corruptf("the container decodes to more than 2 GiB")
	}
	cr.auxLen, cr.cigN = int32(auxLen), int32(ops)
	return nil
}

// nameLen reads the length of the read name (RN), as readName reads the
// name.
func (d *Decoder) nameLen(ds *[numDataSeries]*Encoding, cr *crec) error {
	e := ds[DSRN]
	if e == nil {
		return noEncoding(DSRN)
	}
	n, err := e.arrayLen(&d.st)
	if err != nil {
		return fmt.Errorf("RN: %w", err)
	}
	cr.nameLen = int32(n)
	return nil
}

// skipMate is readMate for the shapes: the mate links (NF) and the name of
// a detached record, with the mate's flags, reference, position and
// template length only read past (their values change no length, and
// those BAM stores from them fit its 32 bits).
func (d *Decoder) skipMate(s *sliceState, cr *crec, rec int) error {
	ds := &s.ch.DataSeries
	switch cf := cr.cf; {
	case cf&cfDetached != 0:
		if err := d.skipInt(ds, DSMF); err != nil {
			return err
		}
		if !s.ch.ReadNamesIncluded {
			if err := d.nameLen(ds, cr); err != nil {
				return err
			}
		}
		for _, ser := range [...]DataSeries{DSNS, DSNP, DSTS} {
			if err := d.skipInt(ds, ser); err != nil {
				return err
			}
		}
		cr.matePos, cr.tlen = 1, 0
	case cf&cfMateDown != 0:
		nf, err := d.readInt(ds, DSNF)
		if err != nil {
			return err
		}
		cr.mateLine = nf + int32(rec) + 1
		if cf&cfExplicitTLen != 0 {
			if err := d.skipInt(ds, DSTS); err != nil {
				return err
			}
			cr.explicitTLen = 0
		}
	case cf&cfExplicitTLen != 0:
		if err := d.skipInt(ds, DSTS); err != nil {
			return err
		}
		cr.explicitTLen = 0
	}
	return nil
}

// tagLens is readTags for the shapes: the BAM bytes of the tag line's
// tags, with their values read past where they lie in blocks of their own
// (only htslib's cF tag, which is dropped or kept by its value, is read).
// With deferred tags (leanTagLine) it reads only the line's other tags.
func (d *Decoder) tagLens(ch *CompressionHeader) (hasMD, hasNM bool, n int, err error) {
	tl, err := d.readInt(&ch.DataSeries, DSTL)
	if err != nil {
		return false, false, 0, err
	}
	if tl < 0 || int(tl) >= len(ch.TagLines) {
		return false, false, 0, corruptf("tag line %d, dictionary has %d", tl, len(ch.TagLines))
	}
	plan := &ch.tagPlans[tl]
	hasMD, hasNM = plan.hasMD, plan.hasNM
	if l := &d.lean; l.deferTags {
		line := &l.lines[tl]
		line.recs++
		n = line.fixed
		for _, k := range line.rest {
			if err := d.tagBytes(&plan.ops[k], &n, &hasMD, &hasNM); err != nil {
				return false, false, 0, err
			}
		}
		return hasMD, hasNM, n, nil
	}
	for k := range plan.ops {
		if err := d.tagBytes(&plan.ops[k], &n, &hasMD, &hasNM); err != nil {
			return false, false, 0, err
		}
	}
	return hasMD, hasNM, n, nil
}

// tagBytes reads one tag of a record for tagLens, adding its BAM bytes to
// n, and for htslib's cF tag setting hasMD and hasNM as its value asks.
func (d *Decoder) tagBytes(op *tagOp, n *int, hasMD, hasNM *bool) error {
	if op.cF {
		v, err := d.tagValue(op)
		if err != nil {
			return fmt.Errorf("tag %s: %w", op.key[:], err)
		}
		if len(v) == 1 {
			*hasMD = *hasMD || v[0]&1 != 0
			*hasNM = *hasNM || v[0]&2 != 0
			return nil
		}
		*n += 3 + len(v)
		return nil
	}
	m, err := d.tagLen(op)
	if err != nil {
		return fmt.Errorf("tag %s: %w", op.key[:], err)
	}
	*n += 3 + m
	return nil
}

// planTags fills lines for the tag lines of ch: a tag of fixed length
// (not cF) is deferred when no read of the lean plan needs the bytes of
// its block (dataIDs, complete) and no series reads that block (a
// series' reads past would interleave with the tag's; the sums would
// still agree, but a series' position is kept exact).
func (l *leanState) planTags(ch *CompressionHeader) {
	l.lines = slices.Grow(l.lines[:0], len(ch.tagPlans))[:len(ch.tagPlans)]
	for tl := range ch.tagPlans {
		ops := ch.tagPlans[tl].ops
		line := leanTagLine{rest: l.lines[tl].rest[:0], deferred: l.lines[tl].deferred[:0]}
		for k := range ops {
			op := &ops[k]
			if op.kind == tagConst && !op.cF && !l.dataIDs[op.val.ContentID] && !seriesRead(ch, op.val.ContentID) {
				line.fixed += 3 + op.n
				line.deferred = append(line.deferred, deferredTag{key: op.key, val: op.val, n: op.n})
			} else {
				line.rest = append(line.rest, k)
			}
		}
		l.lines[tl] = line
	}
}

// seriesRead reports whether a data series' encoding reads block id.
func seriesRead(ch *CompressionHeader, id int32) bool {
	for s, e := range ch.DataSeries {
		if readsBlock(e, dataSeriesInfo[s].vt, id) {
			return true
		}
	}
	return false
}

// startDeferred starts a slice's deferred tags: none for a slice with an
// embedded reference (its block is read for bases, whatever the plan).
func (d *Decoder) startDeferred(embeddedRef int32) {
	l := &d.lean
	l.deferTags = embeddedRef < 0 && len(l.lines) > 0
	for i := range l.lines {
		l.lines[i].recs = 0
	}
}

// skipDeferred makes the moves of the slice's deferred tags, each tag's
// over all the records of its line at once.
func (d *Decoder) skipDeferred() error {
	l := &d.lean
	if !l.deferTags {
		return nil
	}
	l.deferTags = false
	for tl := range l.lines {
		line := &l.lines[tl]
		if line.recs == 0 {
			continue
		}
		for _, t := range line.deferred {
			x, err := t.val.position(&d.st)
			if err == nil {
				err = x.skip(t.n * line.recs)
			}
			if err != nil {
				return fmt.Errorf("tag %s: %w", t.key[:], err)
			}
		}
	}
	return nil
}

// tagLen reads past the value of one tag and returns its length.
func (d *Decoder) tagLen(op *tagOp) (int, error) {
	switch op.kind {
	case tagConst:
		x, err := op.val.position(&d.st)
		if err != nil {
			return 0, err
		}
		return op.n, x.skip(op.n)
	case tagStop:
		x, err := op.enc.stream(&d.st)
		if err != nil {
			return 0, err
		}
		b, err := x.readUntil(op.enc.Stop)
		return len(b), err
	}
	if op.enc == nil {
		return 0, corruptf("no encoding")
	}
	return op.enc.arrayLen(&d.st)
}

// tagValue reads the value of one tag, as readTags does.
func (d *Decoder) tagValue(op *tagOp) ([]byte, error) {
	l := &d.lean
	l.scratch = l.scratch[:0]
	switch op.kind {
	case tagConst:
		x, err := op.val.stream(&d.st)
		if err != nil {
			return nil, err
		}
		return x.readN(op.n)
	case tagStop:
		x, err := op.enc.stream(&d.st)
		if err != nil {
			return nil, err
		}
		return x.readUntil(op.enc.Stop)
	}
	if op.enc == nil {
		return nil, corruptf("no encoding")
	}
	var err error
	l.scratch, err = op.enc.appendArray(&d.st, l.scratch)
	return l.scratch, err
}

// shapeUnmapped is readUnmapped for the shapes: the bases (BA) and
// preserved qualities (QS) are read past.
func (d *Decoder) shapeUnmapped(ds *[numDataSeries]*Encoding, cr *crec) error {
	cr.aend = cr.apos
	n := int(cr.length)
	if n > 0 {
		if err := d.skipByte(ds, DSBA, n); err != nil {
			return err
		}
	}
	if cr.cf&cfPreserveQual == 0 {
		return nil
	}
	return d.skipByte(ds, DSQS, n)
}
