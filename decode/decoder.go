package decode

import (
	"crypto/md5"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unsafe"
)

// ReferenceSource supplies reference bases for the @SQ lines of a file.
type ReferenceSource interface {
	// Bases appends the bases of [start, end) (0-based) of reference refID
	// (an index into File.Refs) to dst, in upper case.
	Bases(dst []byte, refID int, start, end int64) ([]byte, error)
	// Length is the length of reference refID as the reference has it, or
	// -1 when unknown. Like htslib, a length that differs from the @SQ LN
	// replaces it for MD/NM generation. A Decoder asks once per reference
	// and Reset, so the answer must not change.
	Length(refID int) int64
}

// DecoderOptions adjusts how records are decoded.
type DecoderOptions struct {
	Reference ReferenceSource // nil: only files that need no reference decode
	Codecs    *Codecs
	// NoMD turns off MD/NM generation (htslib's decode_md=0).
	NoMD bool
	// IgnoreMD5 skips the slice reference MD5 check (htslib's
	// ignore_md5); for fuzzing and salvage, never the default.
	IgnoreMD5 bool
}

// Decoder decodes the containers of one File into Records, reusing its
// buffers. It is not safe for concurrent use; use one per goroutine.
type Decoder struct {
	f   *File
	opt DecoderOptions

	cbuf  []byte
	st    streams
	crecs []crec
	names []byte
	seqs  []byte
	quals []byte // qualities that are not read straight from QS
	// qualScratch takes the feature qualities of a record whose QS
	// values are then read in place (see viewQuals).
	qualScratch []byte
	// viewQuals is set while a container is decoded whose records can
	// take their preserved qualities straight from the QS block: a
	// single slice (block buffers are reused from slice to slice) and QS
	// stored EXTERNAL (one contiguous run per record).
	viewQuals bool
	qsData    []byte // the QS block the viewed qualities lie in
	aux       []byte
	cigars    []uint32
	recs      []Record
	// nameRefs is finish's scratch, one entry per record.
	nameRefs []nameRef
	name     []byte // ContainerFunc's generated name
	refBuf   []byte
	md5buf   []byte
	// window serves the records of multi-reference slices; it keeps its
	// bases from slice to slice of a container, until Reset.
	window refView
	// encs holds the encodings of the container's compression header.
	encs encodings
	// Decompressed blocks: the compression header's (alive for the
	// container), the slice header's and each slice block's (alive for the
	// slice), reused from container to container.
	chBuf, shBuf []byte
	blockBufs    blockBufs
	// lenID and lenRef remember the last refLength answer (lenID -1 for
	// none): records come sorted, so it rarely changes.
	lenID  int32
	lenRef int64
}

// NewDecoder returns a Decoder for f.
func (f *File) NewDecoder(opt DecoderOptions) *Decoder {
	if opt.Codecs == nil {
		opt.Codecs = &DefaultCodecs
	}
	return &Decoder{f: f, opt: opt, lenID: -1}
}

// Reset makes d a Decoder for f with opt, as NewDecoder would, keeping
// the buffers it has grown so that decoders can be reused from file to
// file.
func (d *Decoder) Reset(f *File, opt DecoderOptions) {
	if opt.Codecs == nil {
		opt.Codecs = &DefaultCodecs
	}
	d.f, d.opt = f, opt
	d.lenID = -1
	d.window.drop()
}

// blockBufs keeps the decompression buffer of each block from slice to
// slice, by content type and ID rather than by position: the same data
// series tends to keep its ID and its size from one container to the next,
// while the number of blocks before it varies (tags come and go), so
// buffers found by position were regrown again and again.
type blockBufs struct {
	gen  uint32 // slice number; a buffer taken in this slice is not lent twice
	bufs []blockBuf
}

type blockBuf struct {
	typ  ContentType
	id   int32
	used uint32 // gen of the slice that took it
	b    []byte
}

// maxBlockBufs bounds the buffers kept: a file of many distinct content
// IDs starts over rather than keeping a buffer for each.
const maxBlockBufs = 256

// next starts a slice.
func (bb *blockBufs) next() { bb.gen++ }

// take lends the buffer of the block with this content type and ID, or nil
// when there is none or it is already lent in this slice (a duplicate ID).
func (bb *blockBufs) take(typ ContentType, id int32) []byte {
	for i := range bb.bufs {
		if e := &bb.bufs[i]; e.typ == typ && e.id == id {
			if e.used == bb.gen {
				return nil
			}
			e.used = bb.gen
			return e.b
		}
	}
	return nil
}

// keep stores b, the buffer take lent possibly regrown, as the buffer of
// that content type and ID. For a duplicate ID the larger buffer is kept:
// the other stays with this slice's streams until the slice is done.
func (bb *blockBufs) keep(typ ContentType, id int32, b []byte) {
	for i := range bb.bufs {
		if e := &bb.bufs[i]; e.typ == typ && e.id == id {
			if cap(b) > cap(e.b) {
				e.b = b
			}
			return
		}
	}
	if len(bb.bufs) == maxBlockBufs {
		bb.bufs = bb.bufs[:0]
	}
	bb.bufs = append(bb.bufs, blockBuf{typ: typ, id: id, used: bb.gen, b: b})
}

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

// Container decodes data container i and returns its records, valid until
// the next call.
func (d *Decoder) Container(i int) ([]Record, error) {
	if err := d.decodeContainer(i); err != nil {
		return nil, err
	}
	return d.finish(), nil
}

// ContainerFunc decodes data container i like Container and calls fn with
// each record in order. The Record and the bytes it points to are valid
// only during the call. It keeps no table of Records (nor the generated
// names of a file without read names), so it needs less memory than
// Container; an error from fn stops it and is returned as it is.
func (d *Decoder) ContainerFunc(i int, fn func(j int, r *Record) error) error {
	if err := d.decodeContainer(i); err != nil {
		return err
	}
	var r Record
	for j := range d.crecs {
		d.name = d.name[:0]
		off, n, generated := d.nameOf(j)
		name := d.names[off : off+n]
		if generated {
			d.name = d.appendGeneratedName(d.name, j)
			name = d.name
		}
		d.record(j, name, &r)
		if err := fn(j, &r); err != nil {
			return err
		}
	}
	return nil
}

// decodeContainer decodes data container i into the crec table and its
// buffers, wrapping errors with the file and the container's offset.
func (d *Decoder) decodeContainer(i int) error {
	if i < 0 || i >= len(d.f.Containers) {
		return fmt.Errorf("container %d of %d", i, len(d.f.Containers))
	}
	h := &d.f.Containers[i]
	if err := d.container(h); err != nil {
		var de *Error
		if e, ok := err.(*Error); ok {
			de = e
		} else {
			de = &Error{Err: err, ContentID: -1}
		}
		de.File, de.Offset = d.f.Name, h.Offset
		return de
	}
	return nil
}

func (d *Decoder) container(h *ContainerHeader) error {
	major := d.f.Def.Major
	var err error
	d.cbuf, err = d.f.readContainerData(h, d.cbuf)
	if err != nil {
		return err
	}
	data := d.cbuf
	pos := 0
	chBlock, err := parseBlock(data, &pos, major)
	if err != nil {
		return fmt.Errorf("compression header: %w", err)
	}
	if chBlock.ContentType != ContentCompressionHeader {
		return corruptf("first block has content type %d, want compression header", chBlock.ContentType)
	}
	chRaw, err := chBlock.decompress(d.opt.Codecs, d.chBuf)
	if err != nil {
		return fmt.Errorf("compression header: %w", err)
	}
	if chBlock.Method != MethodRaw && cap(chRaw) > cap(d.chBuf) {
		d.chBuf = chRaw[:0]
	}
	d.encs.reset()
	ch, err := parseCompressionHeader(chRaw, &d.encs)
	if err != nil {
		return fmt.Errorf("compression header: %w", err)
	}
	d.crecs = d.crecs[:0]
	// The container header counts its records and bases: room for them
	// at once, rather than by doubling, which left up to twice what a
	// large container needs. A header may lie: the counts only size the
	// first allocation, up to bounds proportional to the container.
	if n := min(int64(h.NumRecords), int64(h.Length)+1024); n > int64(cap(d.crecs)) {
		d.crecs = make([]crec, 0, n)
	}
	if n := min(h.Bases, 32*int64(h.Length)+1<<20); n > int64(cap(d.seqs)) {
		d.seqs = make([]byte, 0, n)
	}
	qs := ch.DataSeries[DSQS]
	d.viewQuals = len(h.Landmarks) == 1 && qs != nil && qs.ID == EncodingExternal
	d.qsData = nil
	d.names, d.seqs, d.quals, d.aux, d.cigars = d.names[:0], d.seqs[:0], d.quals[:0], d.aux[:0], d.cigars[:0]
	for si, lm := range h.Landmarks {
		if lm < 0 || int(lm) >= len(data) {
			return corruptf("slice %d: landmark %d outside the %d-byte container", si, lm, len(data))
		}
		end := len(data)
		if si+1 < len(h.Landmarks) {
			end = int(h.Landmarks[si+1])
			if end < int(lm) || end > len(data) {
				return corruptf("slice %d: landmarks %d then %d", si, lm, end)
			}
		}
		if err := d.slice(ch, data[:end], int(lm)); err != nil {
			return fmt.Errorf("slice %d at container byte %d: %w", si, lm, err)
		}
	}
	return nil
}

// slice decodes the slice whose header block starts at data[pos:].
func (d *Decoder) slice(ch *CompressionHeader, data []byte, pos int) error {
	major := d.f.Def.Major
	hb, err := parseBlock(data, &pos, major)
	if err != nil {
		return fmt.Errorf("slice header: %w", err)
	}
	if hb.ContentType != ContentSliceHeader {
		return corruptf("slice header block has content type %d", hb.ContentType)
	}
	raw, err := hb.decompress(d.opt.Codecs, d.shBuf)
	if err != nil {
		return fmt.Errorf("slice header: %w", err)
	}
	if hb.Method != MethodRaw && cap(raw) > cap(d.shBuf) {
		d.shBuf = raw[:0]
	}
	sh, err := parseSliceHeader(raw, major)
	if err != nil {
		return err
	}
	d.st.reset()
	d.blockBufs.next()
	var core []byte
	haveCore := false
	for b := int32(0); b < sh.NumBlocks; b++ {
		blk, err := parseBlock(data, &pos, major)
		if err != nil {
			return fmt.Errorf("block %d: %w", b, err)
		}
		buf := d.blockBufs.take(blk.ContentType, blk.ContentID)
		raw, err := blk.decompress(d.opt.Codecs, buf)
		if err != nil {
			return &Error{ContentID: int(blk.ContentID), Offset: -1, Err: err}
		}
		if blk.Method != MethodRaw && cap(raw) > cap(buf) {
			buf = raw[:0]
		}
		d.blockBufs.keep(blk.ContentType, blk.ContentID, buf)
		switch blk.ContentType {
		case ContentCore:
			core, haveCore = raw, true
			d.st.maxArray += len(raw)
		case ContentExternal:
			d.st.add(blk.ContentID, raw)
		}
	}
	if !haveCore {
		return corruptf("slice has no core data block")
	}
	d.st.index()
	d.st.core.reset(core)
	return d.records(ch, &sh)
}

// sliceRef prepares the reference view of a single-reference slice, as
// htslib's cram_decode_slice does, and checks the slice's MD5.
func (d *Decoder) sliceRef(ch *CompressionHeader, sh *SliceHeader, v *refView) (bool, error) {
	id := sh.RefSeqID
	if id < 0 {
		return false, nil
	}
	if int(id) >= len(d.f.Refs) {
		return false, corruptf("slice reference id %d, header has %d @SQ lines", id, len(d.f.Refs))
	}
	start := sh.RefStart // 1-based
	end := sh.RefStart + sh.RefSpan - 1
	if sh.EmbeddedRefID >= 0 {
		x, err := d.st.external(sh.EmbeddedRefID)
		if err != nil {
			return false, fmt.Errorf("embedded reference: %w", err)
		}
		if sh.RefSpan > int64(len(x.data)) {
			return false, corruptf("embedded reference of %d bases for a span of %d", len(x.data), sh.RefSpan)
		}
		*v = refView{buf: x.data, start: start - 1, limit: end}
		if err := d.checkMD5(sh, x.data[:sh.RefSpan]); err != nil {
			return false, err
		}
		return true, nil
	}
	if !ch.ReferenceRequired {
		return false, nil
	}
	if d.opt.Reference == nil {
		return false, fmt.Errorf("%w: slice on %s needs a reference (M5 %s) and none was given", ErrReference, d.f.Refs[id].Name, d.f.Refs[id].M5)
	}
	if start < 0 {
		start = 0
	}
	if n := d.opt.Reference.Length(int(id)); n >= 0 && end > n {
		end = n
	}
	from := max(start-1, 0)
	var err error
	d.refBuf, err = d.opt.Reference.Bases(d.refBuf[:0], int(id), from, max(end, from))
	if err != nil {
		return false, fmt.Errorf("%w: %s:%d-%d: %w", ErrReference, d.f.Refs[id].Name, start, end, err)
	}
	*v = refView{buf: d.refBuf, start: from, limit: end}
	if err := d.checkMD5(sh, d.refBuf); err != nil {
		return false, err
	}
	return true, nil
}

// checkMD5 compares the slice header's reference MD5 with the bases used.
func (d *Decoder) checkMD5(sh *SliceHeader, bases []byte) error {
	if sh.RefMD5 == [16]byte{} || d.opt.IgnoreMD5 {
		return nil
	}
	n := min(int64(len(bases)), sh.RefSpan)
	if got := md5.Sum(bases[:n]); got != sh.RefMD5 {
		r := d.f.Refs[sh.RefSeqID]
		return fmt.Errorf("%w: MD5 of %s:%d-%d is %x, slice header says %x (@SQ M5 %s): wrong reference?", ErrReference, r.Name, sh.RefStart, sh.RefStart+sh.RefSpan-1, got, sh.RefMD5, r.M5)
	}
	return nil
}

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
	var fixed refView
	view := &fixed
	hasRef, err := d.sliceRef(ch, sh, view)
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
		maxReadLen = max(maxReadLen, int64(st.maxArray)+1<<16+d.f.maxRefLen)
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
						d.window.window(d.opt.Reference, int(cr.refID))
						view = &d.window
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
			if err := d.decodeSeq(ch, &cr, view, hasRef, seq, qual, hasMD, hasNM); err != nil {
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

// readQuals reads the preserved qualities of a record into qual or, when
// the container allows (viewQuals), only notes where they lie in the QS
// block (cr.qualOff into qsData), saving a copy of every quality score.
func (d *Decoder) readQuals(ds *[numDataSeries]*Encoding, cr *crec, qual []byte) error {
	e := ds[DSQS]
	if e == nil {
		return corruptf("data series QS has no encoding")
	}
	if d.viewQuals {
		if len(qual) == 0 {
			// No bytes to view, and maybe no QS block in the slice.
			cr.qualOff, cr.hasQualView = 0, true
			return nil
		}
		x, err := e.stream(&d.st)
		if err != nil {
			return err
		}
		at := x.pos
		if _, err := x.readN(len(qual)); err != nil {
			return err
		}
		// One slice, one QS stream: every viewed record shares qsData.
		d.qsData = x.data
		cr.qualOff, cr.hasQualView = int32(at), true
		return nil
	}
	b, err := e.appendBytes(&d.st, qual[:0], len(qual))
	if err != nil {
		return err
	}
	if len(b) != len(qual) || (len(b) > 0 && &b[0] != &qual[0]) {
		return corruptf("QS gave %d values for %d", len(b), len(qual))
	}
	return nil
}

// readTags decodes the tags of the record's tag line into the aux buffer
// (htslib's cram_decode_aux). It reports whether MD and NM are present.
func (d *Decoder) readTags(ch *CompressionHeader, cr *crec) (hasMD, hasNM bool, err error) {
	e := ch.DataSeries[DSTL]
	if e == nil {
		return false, false, corruptf("data series TL has no encoding")
	}
	tl, err := e.decodeInt(&d.st)
	if err != nil {
		return false, false, fmt.Errorf("TL: %w", err)
	}
	if tl < 0 || int(tl) >= len(ch.TagLines) {
		return false, false, corruptf("tag line %d, dictionary has %d", tl, len(ch.TagLines))
	}
	plan := &ch.tagPlans[tl]
	hasMD, hasNM = plan.hasMD, plan.hasNM
	cr.auxOff = int32(len(d.aux))
	for k := range plan.ops {
		op := &plan.ops[k]
		start := len(d.aux)
		d.aux = append(d.aux, op.key[0], op.key[1], op.key[2])
		switch op.kind {
		case tagConst:
			x, err := op.val.stream(&d.st)
			if err != nil {
				return false, false, fmt.Errorf("tag %s: %w", op.key[:], err)
			}
			b, err := x.readN(op.n)
			if err != nil {
				return false, false, fmt.Errorf("tag %s: %w", op.key[:], err)
			}
			d.aux = append(d.aux, b...)
		case tagStop:
			x, err := op.enc.stream(&d.st)
			if err != nil {
				return false, false, fmt.Errorf("tag %s: %w", op.key[:], err)
			}
			b, err := x.readUntil(op.enc.Stop)
			if err != nil {
				return false, false, fmt.Errorf("tag %s: %w", op.key[:], err)
			}
			d.aux = append(d.aux, b...)
		default:
			if op.enc == nil {
				return false, false, corruptf("tag %s has no encoding", op.key[:])
			}
			if d.aux, err = op.enc.appendArray(&d.st, d.aux); err != nil {
				return false, false, fmt.Errorf("tag %s: %w", op.key[:], err)
			}
		}
		if op.cF && len(d.aux)-start == 4 {
			// htslib's private cF tag: bit 1 keeps MD, bit 2 keeps NM from
			// being generated. It is not output.
			cF := d.aux[start+3]
			d.aux = d.aux[:start]
			if cF&1 != 0 {
				hasMD = true
			}
			if cF&2 != 0 {
				hasNM = true
			}
		}
	}
	return hasMD, hasNM, nil
}

// appendUint appends the decimal form of v as htslib's BLOCK_APPEND_UINT
// does (v is a 32-bit unsigned value there).
func appendUint(b []byte, v int64) []byte {
	u := uint32(v)
	switch {
	case u < 10:
		return append(b, byte('0'+u))
	case u < 100:
		return append(b, byte('0'+u/10), byte('0'+u%10))
	case u < 1000:
		return append(b, byte('0'+u/100), byte('0'+u/10%10), byte('0'+u%10))
	}
	return strconv.AppendUint(b, uint64(u), 10)
}

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
// containers: its record table and the buffers of decoded blocks, bases,
// qualities, names and tags, which grow to the largest container decoded.
// Codec state outside d is not counted.
func (d *Decoder) Footprint() int64 {
	n := cap(d.cbuf) + cap(d.names) + cap(d.seqs) + cap(d.quals) + cap(d.qualScratch) +
		cap(d.aux) + cap(d.name) + cap(d.refBuf) + cap(d.md5buf) + cap(d.window.buf) + cap(d.chBuf) + cap(d.shBuf) +
		4*cap(d.cigars) +
		cap(d.crecs)*int(unsafe.Sizeof(crec{})) +
		cap(d.recs)*int(unsafe.Sizeof(Record{})) +
		cap(d.nameRefs)*int(unsafe.Sizeof(nameRef{})) +
		cap(d.encs.encs)*int(unsafe.Sizeof(Encoding{})) + cap(d.encs.huffs)*int(unsafe.Sizeof(huffman{}))
	for _, b := range d.blockBufs.bufs {
		n += cap(b.b)
	}
	return int64(n)
}
