package decode

import (
	"crypto/md5"
	"fmt"
	"hash/crc32"
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
	// MaxContainerMemory, when positive, refuses (with a *SizeError) a
	// container whose declared sizes say that decoding it needs more
	// bytes, before anything of that size is allocated. 0: no limit.
	MaxContainerMemory int64
	// ContentSum computes the CRC-32C of each container's data as read
	// from the file (see Decoder.ContentSum).
	ContentSum bool
}

// Decoder decodes the containers of one File into Records, reusing its
// buffers. It is not safe for concurrent use; use one per goroutine.
type Decoder struct {
	f   *File
	opt DecoderOptions

	cbuf  []byte
	sum   uint32 // ContentSum of the container in cbuf
	st    streams
	crecs []crec
	names []byte
	seqs  []byte
	quals []byte // qualities that are not read straight from QS
	// qualScratch takes the feature qualities of a record whose QS
	// values are then read in place (see viewQuals).
	qualScratch []byte
	featScratch []byte // byte array features not read in place
	// mdSlot and nmSlot are where the record's CRAM 4.0 placeholders want
	// MD's text and NM's value in aux (-1: none), set by readTags.
	mdSlot, nmSlot int
	// mdText takes the MD text decodeSeq generates.
	mdText mdText
	// viewQuals is set while a container is decoded whose records can
	// take their preserved qualities straight from the QS block: a
	// single slice (block buffers are reused from slice to slice) and QS
	// stored EXTERNAL (one contiguous run per record).
	viewQuals bool
	qsData    []byte // the QS block the viewed qualities lie in
	aux       []byte
	cigars    []uint32
	recs      []Record
	slice1    sliceState // the slice being decoded (see records)
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
	// runner, set for the duration of a ContainerFuncWith call, runs the
	// decompression of each slice's blocks, as tasks.
	runner BlockRunner
	tasks  []BlockTask
	late   lateBlock // the slice's block still decompressed, if any
	pre    refFetch  // the slice's reference bases read as a task
	// lean is the state of the lean pass (ContainerShapes).
	lean leanState
	// lenID and lenRef remember the last refLength answer (lenID -1 for
	// none): records come sorted, so it rarely changes.
	lenID  int32
	lenRef int64
}

// castagnoli is the CRC-32C table of ContentSum.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ContentSum returns, with DecoderOptions.ContentSum, the CRC-32C of the
// data of the container last decoded or measured (its blocks, the bytes
// between its header and its end, CRAMv3 §7) as they were read from the
// file for that decode: the bytes its records came from, together with
// its header and the file's as File holds them. 0 without the option or
// when the container could not be read.
func (d *Decoder) ContentSum() uint32 { return d.sum }

// NewDecoder returns a Decoder for f.
func (f *File) NewDecoder(opt DecoderOptions) *Decoder {
	if opt.Codecs == nil {
		opt.Codecs = &defaultCodecs
	}
	return &Decoder{f: f, opt: opt, lenID: -1}
}

// Reset makes d a Decoder for f with opt, as NewDecoder would, keeping
// the buffers it has grown so that decoders can be reused from file to
// file.
func (d *Decoder) Reset(f *File, opt DecoderOptions) {
	if opt.Codecs == nil {
		opt.Codecs = &defaultCodecs
	}
	d.f, d.opt = f, opt
	d.sum = 0
	d.lenID = -1
	d.window.drop()
}

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
	return d.ContainerFuncWith(i, nil, fn)
}

// ContainerFuncWith is ContainerFunc with the blocks of each slice
// decompressed by run (nil: in turn, as ContainerFunc does), as tasks it
// may run on other goroutines while this call waits. The records and
// errors are ContainerFunc's.
func (d *Decoder) ContainerFuncWith(i int, run BlockRunner, fn func(j int, r *Record) error) error {
	d.runner = run
	err := d.decodeContainer(i)
	d.runner = nil
	if err != nil {
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
	if err := d.container(h, false); err != nil {
		return containerError(d.f.Name, h.Offset, err)
	}
	return nil
}

// container decodes data container h (CRAMv3 §7): its compression header
// block (§8.4), then the slice at each landmark; lean: only as far as
// the shapes of its records go (shapes.go).
func (d *Decoder) container(h *ContainerHeader, lean bool) error {
	major := d.f.Def.Major
	if err := checkLength(h, d.opt.MaxContainerMemory); err != nil {
		return err
	}
	var err error
	d.sum = 0
	d.cbuf, err = d.f.readContainerData(h, d.cbuf)
	if err != nil {
		return err
	}
	data := d.cbuf
	if d.opt.ContentSum {
		d.sum = crc32.Checksum(data, castagnoli)
	}
	if err := checkNeed(h, data, major, d.opt.MaxContainerMemory); err != nil {
		return err
	}
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
	ch, err := parseCompressionHeader(chRaw, &d.encs, varintsFor(major))
	if err != nil {
		return fmt.Errorf("compression header: %w", err)
	}
	d.crecs = d.crecs[:0]
	if lean {
		d.lean.plan(ch)
		d.lean.cigars = d.lean.cigars[:0]
	}
	// The container header counts its records and bases: room for them
	// at once, rather than by doubling, which left up to twice what a
	// large container needs. A header may lie: the counts only size the
	// first allocation, up to bounds proportional to the container.
	if n := min(int64(h.NumRecords), int64(h.Length)+1024); n > int64(cap(d.crecs)) {
		d.crecs = make([]crec, 0, n)
	}
	if n := min(h.Bases, 32*int64(h.Length)+1<<20); !lean {
		d.seqs = roomFor(d.seqs, int(n))
	}
	// The tags likewise: about 60 bytes a short read (RG, MD, NM and the
	// stored ones) and, for long reads, MD's text, about an eighth of the
	// bases. Grown by appends from empty, a quarter at a time, the first
	// container's tag buffer was copied and faulted in about five times
	// its size.
	if n := min(h.Bases/6+48*int64(h.NumRecords), 32*int64(h.Length)+1<<20); !lean && n > 0 {
		d.aux = roomFor(d.aux, int(n))
	}
	qs := ch.DataSeries[DSQS]
	// Qualities stored reversed (CRAM 4.0's QO false) are turned around
	// record by record, so cannot be viewed in place.
	d.viewQuals = len(h.Landmarks) == 1 && qs != nil && qs.ID == EncodingExternal && ch.QSSeqOrient
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
		if err := d.slice(ch, data[:end], int(lm), lean); err != nil {
			return fmt.Errorf("slice %d at container byte %d: %w", si, lm, err)
		}
	}
	return nil
}

// slice decodes the slice whose header block starts at data[pos:]: the
// slice header (CRAMv3 §8.5), then its core (§8.6) and external (§8.7)
// blocks, then its records. lean leaves the external blocks compressed
// until a read needs their bytes and measures the records (shapes.go).
func (d *Decoder) slice(ch *CompressionHeader, data []byte, pos int, lean bool) error {
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
	if lean {
		d.st.lazy = d.lean.loader(d, sh.EmbeddedRefID)
	}
	var core []byte
	var haveCore bool
	if d.runner != nil && !lean {
		lateID := int32(-1)
		if d.viewQuals {
			lateID = ch.DataSeries[DSQS].ContentID
		}
		core, haveCore, err = d.splitBlocks(ch, &sh, data, &pos, lateID)
		err = d.sliceBlocksRecords(ch, &sh, core, haveCore, err)
		if lerr := d.finishLate(); lerr != nil {
			return lerr
		}
		return err
	}
	core, haveCore, err = d.sliceBlocks(data, &pos, sh.NumBlocks, lean)
	if !lean {
		return d.sliceBlocksRecords(ch, &sh, core, haveCore, err)
	}
	if err := d.readyStreams(core, haveCore, err); err != nil {
		return err
	}
	return d.shapeRecords(ch, &sh)
}

// sliceBlocks parses the n blocks of a slice from data at *pos and adds
// them to the slice's streams, decompressing each in turn (lean: the
// external ones are left pending), and returns the core block.
func (d *Decoder) sliceBlocks(data []byte, pos *int, n int32, lean bool) ([]byte, bool, error) {
	major := d.f.Def.Major
	var core []byte
	haveCore := false
	for b := int32(0); b < n; b++ {
		blk, err := parseBlock(data, pos, major)
		if err != nil {
			return nil, false, blockAt(b, err)
		}
		if lean && blk.ContentType == ContentExternal {
			d.st.addPending(blk)
			continue
		}
		buf := d.blockBufs.take(blk.ContentType, blk.ContentID)
		raw, err := blk.decompress(d.opt.Codecs, buf)
		if err != nil {
			return nil, false, blockAt(b, err)
		}
		d.addBlock(&blk, buf, raw)
		if blk.ContentType == ContentCore {
			core, haveCore = raw, true
		}
	}
	return core, haveCore, nil
}

// addBlock gives the buffer buf lent for blk back (keepBuf) and adds raw,
// its decompressed bytes, to the slice's streams.
func (d *Decoder) addBlock(blk *Block, buf, raw []byte) {
	d.keepBuf(blk, buf, raw)
	switch blk.ContentType {
	case ContentCore:
		d.st.maxArray += len(raw)
	case ContentExternal:
		d.st.add(blk.ContentID, raw)
	}
}

// keepBuf gives the buffer buf lent for blk, which raw (its decompressed
// bytes) may have outgrown, back to blockBufs.
func (d *Decoder) keepBuf(blk *Block, buf, raw []byte) {
	if blk.Method != MethodRaw && cap(raw) > cap(buf) {
		buf = raw[:0]
	}
	d.blockBufs.keep(blk.ContentType, blk.ContentID, buf)
}

// sliceBlocksRecords decodes the records of a slice whose blocks were read
// with error err (core: the core block, if haveCore), as slice does.
func (d *Decoder) sliceBlocksRecords(ch *CompressionHeader, sh *SliceHeader, core []byte, haveCore bool, err error) error {
	if err := d.readyStreams(core, haveCore, err); err != nil {
		return err
	}
	return d.records(ch, sh)
}

// readyStreams readies the slice's streams for its records once its blocks
// were read with error err: the error, or the core block (if haveCore)
// missing, stops the slice.
func (d *Decoder) readyStreams(core []byte, haveCore bool, err error) error {
	if err != nil {
		return err
	}
	if !haveCore {
		return corruptf("slice has no core data block")
	}
	d.st.index()
	d.st.core.reset(core)
	return nil
}

// blockAt names block b of its slice in err.
func blockAt(b int32, err error) error { return fmt.Errorf("block %d: %w", b, err) }

// sliceRef prepares the reference view of a single-reference slice, from
// its embedded reference block (CRAMv3 §8.5) or the reference (§11), as
// htslib's cram_decode_slice does, and checks the slice's MD5. With lean,
// a reference that is a ReferenceScanner gives a marks view.
func (d *Decoder) sliceRef(ch *CompressionHeader, sh *SliceHeader, v *refView, lean bool) (bool, error) {
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
		// htslib checks the MD5 even so, against the embedded reference
		// it then lacks: a slice with a reference MD5 but neither a
		// reference nor an embedded one fails (scramble and samtools
		// write such slices, of span 0, with embed_ref).
		if sh.RefMD5 != [16]byte{} && !d.opt.IgnoreMD5 {
			return false, corruptf("slice on %s: reference MD5 %x, want none: the slice embeds no reference and needs none (RR false)", d.f.Refs[id].Name, sh.RefMD5)
		}
		return false, nil
	}
	if d.opt.Reference == nil {
		return false, fmt.Errorf("%w: slice on %s needs a reference (M5 %s) and none was given", ErrReference, d.f.Refs[id].Name, d.f.Refs[id].M5)
	}
	from, end, known := d.refSpan(sh)
	start = max(start, 0)
	if sc, ok := d.opt.Reference.(ReferenceScanner); ok && lean {
		return true, d.markSliceRef(sc, sh, v, from, end)
	}
	buf, ok, err := d.prefetched(int(id), from, max(end, from))
	if ok {
		d.refBuf = buf
	} else {
		if known {
			// Within the reference's length: room for the span at once.
			d.refBuf = roomFor(d.refBuf, int(max(end, from)-from))
		}
		d.refBuf, err = d.opt.Reference.Bases(d.refBuf[:0], int(id), from, max(end, from))
	}
	if err != nil {
		return false, fmt.Errorf("%w: %s:%d-%d: %w", ErrReference, d.f.Refs[id].Name, start, end, err)
	}
	*v = refView{buf: d.refBuf, start: from, limit: end}
	if err := d.checkMD5(sh, d.refBuf); err != nil {
		return false, err
	}
	return true, nil
}

// refSpan is the span of reference bases sliceRef reads for the
// single-reference slice sh, from its header and the reference's length
// (known: the reference tells it): [from, end), 0-based.
func (d *Decoder) refSpan(sh *SliceHeader) (from, end int64, known bool) {
	start := max(sh.RefStart, 0) // 1-based
	end = sh.RefStart + sh.RefSpan - 1
	if n := d.opt.Reference.Length(int(sh.RefSeqID)); n >= 0 {
		end, known = min(end, n), true
	}
	return max(start-1, 0), end, known
}

// checkMD5 compares the slice header's reference MD5 with the bases used
// (CRAMv3 §8.5; §11 says readers check it).
func (d *Decoder) checkMD5(sh *SliceHeader, bases []byte) error {
	if sh.RefMD5 == [16]byte{} || d.opt.IgnoreMD5 {
		return nil
	}
	n := min(int64(len(bases)), sh.RefSpan)
	if got := md5.Sum(bases[:n]); got != sh.RefMD5 {
		return d.md5Error(sh, got)
	}
	return nil
}

// md5Error is the error of a slice whose reference bases have MD5 got.
func (d *Decoder) md5Error(sh *SliceHeader, got [16]byte) error {
	r := d.f.Refs[sh.RefSeqID]
	e := &RefMD5Error{Ref: r.Name, Start: sh.RefStart, End: sh.RefStart + sh.RefSpan - 1, Got: got, Want: sh.RefMD5, M5: r.M5,
		Embedded: sh.EmbeddedRefID >= 0}
	if o, ok := d.opt.Reference.(ReferenceOrigin); ok && !e.Embedded {
		e.Origin = o.Origin(int(sh.RefSeqID))
	}
	return e
}

// ReferenceOrigin is a ReferenceSource that can say where the bases of a
// reference come from, for the error of a slice they do not match.
type ReferenceOrigin interface {
	// Origin describes the source of reference refID's bases, or is nil
	// when it is not known.
	Origin(refID int) fmt.Stringer
}

// RefMD5Error is a slice whose reference bases have another MD5 than its
// header gives (CRAMv3 §8.5): the reference is not the one the file was
// written with. It wraps ErrReference.
type RefMD5Error struct {
	Ref        string // the @SQ name
	Start, End int64  // 1-based, inclusive
	Got, Want  [16]byte
	M5         string // the @SQ M5, "" for none
	// Embedded is set for a slice's own embedded reference, Origin then nil.
	Embedded bool
	// Origin is where the bases came from, as the ReferenceOrigin says;
	// nil when it does not.
	Origin fmt.Stringer
}

func (e *RefMD5Error) Error() string {
	from := ""
	switch {
	case e.Embedded:
		from = ", bases of the slice's embedded reference"
	case e.Origin != nil:
		from = ", bases from " + e.Origin.String()
	}
	return fmt.Sprintf("%v: MD5 of %s:%d-%d is %x, slice header says %x (@SQ M5 %s)%s: wrong reference?", ErrReference, e.Ref, e.Start, e.End, e.Got, e.Want, e.M5, from)
}

func (e *RefMD5Error) Unwrap() error { return ErrReference }

// switchRef points the reference view of a multi-reference slice at
// reference id, that of the next record (RI, CRAMv3 §10.2), when it is not
// already there, as htslib's cram_decode_slice does.
func (d *Decoder) switchRef(s *sliceState, id int32) error {
	if id < 0 || int(id) >= len(d.f.Refs) || id == s.lastRefID {
		return nil
	}
	if s.ch.ReferenceRequired {
		if d.opt.Reference == nil {
			r := d.f.Refs[id]
			return fmt.Errorf("%w: records on %s need a reference (M5 %s) and none was given", ErrReference, r.Name, r.M5)
		}
		var sc ReferenceScanner
		if s.lean {
			sc, _ = d.opt.Reference.(ReferenceScanner)
		}
		d.window.window(d.opt.Reference, int(id), sc)
		s.view = &d.window
		s.hasRef = true
	}
	s.view.limit = d.refLength(int(id))
	s.lastRefID = id
	return nil
}

// Footprint returns the bytes of storage d holds for reuse between
// containers: its record table and the buffers of decoded blocks, bases,
// qualities, names and tags, which grow to the largest container decoded.
// Codec state outside d is not counted.
func (d *Decoder) Footprint() int64 {
	n := cap(d.cbuf) + cap(d.names) + cap(d.seqs) + cap(d.quals) + cap(d.qualScratch) + cap(d.featScratch) +
		cap(d.aux) + cap(d.name) + cap(d.refBuf) + cap(d.md5buf) + cap(d.window.buf) + 16*cap(d.window.runs) + cap(d.chBuf) + cap(d.shBuf) +
		4*cap(d.cigars) +
		cap(d.crecs)*int(unsafe.Sizeof(crec{})) +
		cap(d.recs)*int(unsafe.Sizeof(Record{})) +
		cap(d.nameRefs)*int(unsafe.Sizeof(nameRef{})) +
		cap(d.tasks)*int(unsafe.Sizeof(BlockTask{})) +
		cap(d.encs.encs)*int(unsafe.Sizeof(Encoding{})) + cap(d.encs.huffs)*int(unsafe.Sizeof(huffman{})) +
		d.lean.footprint()
	for _, b := range d.blockBufs.bufs {
		n += cap(b.b)
	}
	return int64(n)
}
