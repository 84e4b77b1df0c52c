package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/cramfs/cramfs/cache"
	"github.com/cramfs/cramfs/encode/bai"
	"github.com/cramfs/cramfs/encode/bam"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/layout"
	"github.com/cramfs/cramfs/engine/source"
)

// castagnoli is the CRC-32C table used for segment digests and index
// checksums.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// blockInfo is one BGZF block of a compressed segment.
type blockInfo struct {
	cOff int64 // offset of the block within the segment
	uOff int64 // offset of its data within the segment's raw bytes
	uLen int64 // length of its data
}

// walkBlocks lists the BGZF blocks of b (SAMv1 §4.1: BSIZE in the BC extra
// subfield, ISIZE in the last four bytes), appending to dst.
func walkBlocks(dst []blockInfo, b []byte) ([]blockInfo, error) {
	var uOff int64
	for off := 0; off < len(b); {
		bsize, isize, err := nextBlock(b, off)
		if err != nil {
			return dst, err
		}
		dst = append(dst, blockInfo{cOff: int64(off), uOff: uOff, uLen: isize})
		uOff += isize
		off += bsize
	}
	return dst, nil
}

// nextBlock returns the length of the BGZF block at offset off of b and
// the length of the data it holds (SAMv1 §4.1: BSIZE in the BC extra
// subfield, ISIZE in the footer).
func nextBlock(b []byte, off int) (bsize int, isize int64, err error) {
	rest := b[off:]
	if len(rest) < 18+8 || rest[0] != 31 || rest[1] != 139 || rest[3]&4 == 0 {
		return 0, 0, fmt.Errorf("%w: no BGZF block header at segment offset %d", ErrInvalid, off)
	}
	xlen := int(binary.LittleEndian.Uint16(rest[10:]))
	if 12+xlen > len(rest) {
		return 0, 0, fmt.Errorf("%w: BGZF extra field of %d bytes overruns segment at offset %d", ErrInvalid, xlen, off)
	}
	bsize = -1
	for x := rest[12 : 12+xlen]; len(x) >= 4; {
		sl := int(binary.LittleEndian.Uint16(x[2:]))
		if 4+sl > len(x) {
			break
		}
		if x[0] == 'B' && x[1] == 'C' && sl == 2 {
			bsize = int(binary.LittleEndian.Uint16(x[4:])) + 1
		}
		x = x[4+sl:]
	}
	if bsize < 12+xlen+8 || bsize > len(rest) {
		return 0, 0, fmt.Errorf("%w: BGZF block size %d invalid at segment offset %d (%d bytes left)", ErrInvalid, bsize, off, len(rest))
	}
	isize = int64(binary.LittleEndian.Uint32(rest[bsize-4:]))
	if isize > 1<<16 {
		return 0, 0, fmt.Errorf("%w: BGZF block holds %d bytes at segment offset %d", ErrInvalid, isize, off)
	}
	return bsize, isize, nil
}

// segmentDigest returns the CRC-32C of every BGZF block's length and
// footer (the CRC-32 and length of its data, SAMv1 §4.1), in order: a
// fingerprint of the block boundaries and of the data in each block that
// costs a few bytes per 64 KiB block, where a checksum of all the bytes
// cost 2-3% of a mount's CPU time. The compressor has already computed
// the CRC-32 of the data. It tells a rebuilt segment from its layout
// whenever the data, its cut into blocks or any block's length differ.
func segmentDigest(b []byte) (uint32, error) {
	var crc uint32
	var rec [12]byte
	for off := 0; off < len(b); {
		bsize, _, err := nextBlock(b, off)
		if err != nil {
			return 0, err
		}
		binary.LittleEndian.PutUint32(rec[:4], uint32(bsize))
		copy(rec[4:], b[off+bsize-8:off+bsize])
		crc = crc32.Update(crc, castagnoli, rec[:])
		off += bsize
	}
	return crc, nil
}

// recInfo is what the .bai needs of one record; offsets are within the
// segment's raw bytes.
type recInfo struct {
	refID    int32
	unmapped bool
	beg, end int64
	uStart   int64
	uEnd     int64
}

// walkRecords frames the BAM records of raw (SAMv1 §4.2: each begins with
// its block_size) and appends what the index needs to dst.
func walkRecords(dst []recInfo, raw []byte) ([]recInfo, error) {
	for off := 0; off < len(raw); {
		if len(raw)-off < 4 {
			return dst, fmt.Errorf("%w: %d trailing bytes after the last record at offset %d", ErrInvalid, len(raw)-off, off)
		}
		bs := int64(binary.LittleEndian.Uint32(raw[off:]))
		if bs > int64(len(raw)-off-4) {
			return dst, fmt.Errorf("%w: record block_size %d overruns container data (%d bytes left) at offset %d", ErrInvalid, bs, len(raw)-off-4, off)
		}
		n := 4 + int(bs)
		refID, pos, end, flags, err := bam.RecordInfo(raw[off : off+n])
		if err != nil {
			return dst, fmt.Errorf("%w: record at offset %d: %w", ErrInvalid, off, err)
		}
		dst = append(dst, recInfo{refID: refID, unmapped: flags&4 != 0, beg: pos, end: end, uStart: int64(off), uEnd: int64(off + n)})
		off += n
	}
	return dst, nil
}

// compressSegment BGZF-compresses raw with c, appending to dst; an empty
// raw gives no blocks at all (an empty block would read as EOF).
func compressSegment(c *bgzf.Compressor, dst, raw []byte) ([]byte, error) {
	if len(raw) == 0 {
		return dst, nil
	}
	return c.AppendBlocks(dst, raw)
}

// voffsetMapper turns raw offsets within a segment into BGZF virtual
// offsets (SAMv1 §4.1.1) the way htslib reports them while reading: an
// offset at the end of a block is given as the start of the next block.
// Queries must come in non-decreasing order.
type voffsetMapper struct {
	base   int64 // offset of the segment in the virtual BAM
	end    int64 // offset just past the segment
	blocks []blockInfo
	k      int
}

func (m *voffsetMapper) at(u int64) (uint64, error) {
	for m.k < len(m.blocks) && u >= m.blocks[m.k].uOff+m.blocks[m.k].uLen {
		m.k++
	}
	var coff, within int64
	if m.k < len(m.blocks) {
		b := m.blocks[m.k]
		if u < b.uOff {
			return 0, fmt.Errorf("%w: raw offset %d precedes block at %d", ErrInvalid, u, b.uOff)
		}
		coff, within = m.base+b.cOff, u-b.uOff
	} else {
		coff = m.end
	}
	if coff < 0 || coff >= 1<<48 || within >= 1<<16 {
		return 0, fmt.Errorf("%w: virtual offset out of range (block %d, within %d)", ErrInvalid, coff, within)
	}
	return uint64(coff)<<16 | uint64(within), nil
}

// builtSegment is one container decoded and compressed by the scan.
type builtSegment struct {
	seg    layout.Segment // Offset not yet known
	blocks []blockInfo
	recs   []recInfo
	// layouts, when set, are the records instead of recs, as measured
	// (measureTable): one after another from offset 0.
	layouts []source.RecordLayout
	frag    *bai.Fragment // what the records add to the index (scanRun.fragment); nil for none
}

// numRecords is the number of records of bs.
func (bs *builtSegment) numRecords() int {
	return len(bs.recs) + len(bs.layouts)
}

// release gives the record tables of bs back for reuse.
func (bs *builtSegment) release() {
	putRecs(bs.recs)
	putLayouts(bs.layouts)
	bs.recs, bs.layouts = nil, nil
}

// recIter walks the records of a builtSegment in order: its recs, or its
// layouts with their offsets summed.
type recIter struct {
	bs  *builtSegment
	k   int
	off int64 // where the next of the layouts starts
}

// next returns the next record, false after the last.
func (it *recIter) next() (recInfo, bool) {
	if l := it.bs.layouts; l != nil {
		if it.k >= len(l) {
			return recInfo{}, false
		}
		r := &l[it.k]
		it.k++
		start := it.off
		it.off += r.Len
		return recInfo{refID: r.RefID, unmapped: r.Unmapped, beg: r.Beg, end: r.End, uStart: start, uEnd: it.off}, true
	}
	if it.k >= len(it.bs.recs) {
		return recInfo{}, false
	}
	it.k++
	return it.bs.recs[it.k-1], true
}

// storedBlocks appends to dst the blocks of a level-0 segment of n data
// bytes, as bgzf.Stored and Compressor.AppendBlocks at level 0 cut them:
// every block but the last holds bgzf.MaxBlockData bytes, so its place
// follows from its data's offset alone.
func storedBlocks(dst []blockInfo, n int64) []blockInfo {
	for u := int64(0); u < n; u += bgzf.MaxBlockData {
		dst = append(dst, blockInfo{cOff: bgzf.StoredSize(u), uOff: u, uLen: min(bgzf.MaxBlockData, n-u)})
	}
	return dst
}

// layoutAppender is a source.LayoutScanner that appends a container's
// records to a table (engine/cram's CRAM.AppendLayout): the scan keeps
// that table as the segment's records rather than copying each record
// out of a call.
type layoutAppender interface {
	AppendLayout(ctx context.Context, i int, dst []source.RecordLayout) ([]source.RecordLayout, int64, source.Sum, error)
}

// measureContainer measures container i of src, a source.LayoutScanner, for a
// level-0 layout without building it: its segment's lengths (the digest
// left unknown) and content sum (when ls gives one), its blocks
// and what the index needs of its records, in a table made for hint
// records.
func measureContainer(ctx context.Context, src source.Source, ls source.LayoutScanner, i, hint int) (*builtSegment, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if la, ok := ls.(layoutAppender); ok {
		return measureTable(ctx, src, la, i, hint)
	}
	recs := getRecs(hint)
	var off int64
	each := func(r source.RecordLayout) error {
		if err := checkRecordLen(src, i, off, r.Len); err != nil {
			return err
		}
		recs = append(recs, recInfo{refID: r.RefID, unmapped: r.Unmapped, beg: r.Beg, end: r.End, uStart: off, uEnd: off + r.Len})
		off += r.Len
		return nil
	}
	rawLen, sum, err := ls.ScanLayout(ctx, i, each)
	if err != nil {
		return nil, err // ScanLayout's errors name the file and the container
	}
	return measuredSegment(src, i, rawLen, off, sum, &builtSegment{recs: recs})
}

// measureTable is measureContainer for a layoutAppender.
func measureTable(ctx context.Context, src source.Source, la layoutAppender, i, hint int) (*builtSegment, error) {
	recs, rawLen, sum, err := la.AppendLayout(ctx, i, getLayouts(hint))
	if err != nil {
		putLayouts(recs)
		return nil, err // AppendLayout's errors name the file and the container
	}
	var off int64
	for _, r := range recs {
		if err := checkRecordLen(src, i, off, r.Len); err != nil {
			putLayouts(recs)
			return nil, err
		}
		off += r.Len
	}
	return measuredSegment(src, i, rawLen, off, sum, &builtSegment{layouts: recs})
}

// checkRecordLen checks the length of the record at offset off of
// container i.
func checkRecordLen(src source.Source, i int, off, n int64) error {
	if n < 4+32 {
		return fmt.Errorf("%w: %s: container %d: record at offset %d of %d bytes, shorter than a BAM record's fixed part", ErrInvalid, src.Name(), i, off, n)
	}
	return nil
}

// measuredSegment completes bs, the records of container i whose lengths
// add up to off, with its level-0 segment of rawLen bytes and content sum
// and its blocks.
func measuredSegment(src source.Source, i int, rawLen, off int64, sum source.Sum, bs *builtSegment) (*builtSegment, error) {
	if rawLen != off {
		bs.release()
		return nil, fmt.Errorf("%w: %s: container %d: records of %d bytes, container of %d", ErrInvalid, src.Name(), i, off, rawLen)
	}
	bs.seg = layout.Segment{NoDigest: true, Sum: sum.CRC, HasSum: sum.OK, CompLen: bgzf.StoredSize(rawLen), RawLen: rawLen}
	bs.blocks = storedBlocks(nil, rawLen)
	return bs, nil
}

// scanContainer builds container i of src once to measure it: its
// segment (sizes and segmentDigest of its blocks at c's level), its blocks and
// what the index needs of its records. raw is scratch for the BAM bytes;
// it is returned for reuse. hint is the size the blocks probably need.
// A source.BlockAppender writes the blocks as it encodes the records, without raw.
func scanContainer(ctx context.Context, src source.Source, c *bgzf.Compressor, pool *cache.Pool, hint int64, i int, raw []byte) (*builtSegment, []byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, raw, err
	}
	// The blocks are only measured here; their storage goes back to the
	// pool for the next container.
	buf := pool.Get(int(min(hint, 64<<20)))
	defer buf.Release()
	var recs []recInfo
	var rawLen int64
	if ba, ok := src.(source.BlockAppender); ok {
		var err error
		var b source.Blocks
		buf.B, b, err = ba.AppendContainerBlocks(ctx, i, c, buf.B, source.BlockOptions{Each: func(rec []byte, start, end int64) error {
			refID, pos, rend, flags, err := bam.RecordInfo(rec)
			if err != nil {
				return fmt.Errorf("%w: record at offset %d: %w", ErrInvalid, start, err)
			}
			recs = append(recs, recInfo{refID: refID, unmapped: flags&4 != 0, beg: pos, end: rend, uStart: start, uEnd: end})
			return nil
		}})
		rawLen = b.Raw
		if err != nil {
			return nil, raw, fmt.Errorf("%s: container %d at offset %d: %w", src.Name(), i, src.ContainerOffset(i), err)
		}
	} else {
		var err error
		raw, err = src.AppendContainer(ctx, i, raw[:0])
		if err != nil {
			return nil, raw, fmt.Errorf("%s: container %d at offset %d: %w", src.Name(), i, src.ContainerOffset(i), err)
		}
		if recs, err = walkRecords(nil, raw); err != nil {
			return nil, raw, fmt.Errorf("%s: container %d at offset %d: %w", src.Name(), i, src.ContainerOffset(i), err)
		}
		if buf.B, err = compressSegment(c, buf.B, raw); err != nil {
			return nil, raw, fmt.Errorf("%s: container %d: compressing: %w", src.Name(), i, err)
		}
		rawLen = int64(len(raw))
	}
	comp := buf.B
	blocks, err := walkBlocks(nil, comp)
	if err != nil {
		return nil, raw, fmt.Errorf("%s: container %d: %w", src.Name(), i, err)
	}
	digest, err := segmentDigest(comp)
	if err != nil {
		return nil, raw, fmt.Errorf("%s: container %d: %w", src.Name(), i, err)
	}
	var total int64
	if len(blocks) > 0 {
		last := blocks[len(blocks)-1]
		total = last.uOff + last.uLen
	}
	if total != rawLen {
		return nil, raw, fmt.Errorf("%w: %s: container %d: blocks hold %d bytes, want %d", ErrInvalid, src.Name(), i, total, rawLen)
	}
	return &builtSegment{
		seg:    layout.Segment{CompLen: int64(len(comp)), RawLen: rawLen, Digest: digest},
		blocks: blocks,
		recs:   recs,
	}, raw, nil
}

// parseNRef returns n_ref of a BAM header (SAMv1 §4.2).
func parseNRef(h []byte) (int, error) {
	n, _, err := parseRefs(h)
	return n, err
}

// parseRefs reads n_ref and the longest l_ref of a BAM header (SAMv1
// §4.2).
func parseRefs(h []byte) (nRef int, maxLen int64, err error) {
	if len(h) < 12 || string(h[:4]) != "BAM\x01" {
		return 0, 0, fmt.Errorf("%w: BAM header lacks magic", ErrInvalid)
	}
	lText := int64(binary.LittleEndian.Uint32(h[4:]))
	if lText > int64(len(h))-12 {
		return 0, 0, fmt.Errorf("%w: BAM header l_text %d exceeds header length %d", ErrInvalid, lText, len(h))
	}
	n := int64(int32(binary.LittleEndian.Uint32(h[8+lText:])))
	if n < 0 || n > int64(len(h)) {
		return 0, 0, fmt.Errorf("%w: BAM header n_ref %d invalid", ErrInvalid, n)
	}
	p := 12 + lText
	for range n {
		if p+4 > int64(len(h)) {
			return 0, 0, fmt.Errorf("%w: BAM header references truncated", ErrInvalid)
		}
		lName := int64(binary.LittleEndian.Uint32(h[p:]))
		p += 4 + lName
		if lName < 0 || p+4 > int64(len(h)) {
			return 0, 0, fmt.Errorf("%w: BAM header references truncated", ErrInvalid)
		}
		maxLen = max(maxLen, int64(binary.LittleEndian.Uint32(h[p:])))
		p += 4
	}
	return int(n), maxLen, nil
}
