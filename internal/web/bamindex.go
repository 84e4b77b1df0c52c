package web

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"
)

// What htsget tickets are made of: the byte ranges of a BAM file that
// hold its header, or the records of a region (from its BAI or CSI,
// SAMv1 §5, CSIv1), read from the BAM's own bytes and index.

// bgzfBlockSize returns the size of the BGZF block at off of r (SAMv1
// §4.1: BSIZE+1, from the BC extra subfield).
func bgzfBlockSize(r io.ReaderAt, off int64) (int64, error) {
	var h [18]byte
	if _, err := r.ReadAt(h[:], off); err != nil {
		return 0, fmt.Errorf("BGZF block at offset %d: %w", off, err)
	}
	if h[0] != 31 || h[1] != 139 || h[3]&4 == 0 || binary.LittleEndian.Uint16(h[10:]) != 6 || h[12] != 'B' || h[13] != 'C' {
		return 0, fmt.Errorf("BGZF block at offset %d: not a BGZF header (% x)", off, h[:14])
	}
	return int64(binary.LittleEndian.Uint16(h[16:])) + 1, nil
}

// maxHeaderBlocks bounds the blocks headerEnd reads: a BAM header of
// more than this many 64 KiB blocks is refused rather than read whole.
const maxHeaderBlocks = 1 << 14

// bamHeader is what htsget needs of a BAM header: the reference names, by
// id, and the offset of the first block after the header's.
type bamHeader struct {
	refs []string
	end  int64 // the header's BGZF blocks are [0, end)
}

// readBAMHeader reads the header of the BAM r of size bytes, block by
// block, and returns it. The header must end at a block boundary, as
// cramfs writes it (its blocks are a segment of their own).
func readBAMHeader(r io.ReaderAt, size int64) (bamHeader, error) {
	var raw []byte
	off := int64(0)
	for blocks := 0; ; blocks++ {
		if h, ok, err := parseBAMHeader(raw); err != nil {
			return bamHeader{}, err
		} else if ok {
			h.end = off
			return h, nil
		}
		if blocks == maxHeaderBlocks || off >= size {
			return bamHeader{}, fmt.Errorf("BAM header: not ended after %d blocks (offset %d of %d)", blocks, off, size)
		}
		n, err := bgzfBlockSize(r, off)
		if err != nil {
			return bamHeader{}, err
		}
		data, err := inflateBlock(r, off, n)
		if err != nil {
			return bamHeader{}, err
		}
		raw = append(raw, data...)
		off += n
	}
}

// inflateBlock returns the data of the BGZF block of n bytes at off.
func inflateBlock(r io.ReaderAt, off, n int64) ([]byte, error) {
	if n < 26 {
		return nil, fmt.Errorf("BGZF block at offset %d: %d bytes, want at least 26", off, n)
	}
	b := make([]byte, n)
	if _, err := r.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("BGZF block at offset %d: %w", off, err)
	}
	isize := binary.LittleEndian.Uint32(b[n-4:])
	if isize > 1<<16 {
		return nil, fmt.Errorf("BGZF block at offset %d: %d bytes of data, want at most 65536", off, isize)
	}
	data, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(b[18:n-8])), 1<<16+1))
	if err != nil || uint32(len(data)) != isize {
		return nil, fmt.Errorf("BGZF block at offset %d: inflated %d bytes (%v), want %d", off, len(data), err, isize)
	}
	return data, nil
}

// parseBAMHeader parses the BAM header (SAMv1 §4.2) at the start of raw:
// ok is false while raw holds only part of it.
func parseBAMHeader(raw []byte) (bamHeader, bool, error) {
	if len(raw) < 12 {
		return bamHeader{}, false, nil
	}
	if string(raw[:4]) != "BAM\x01" {
		return bamHeader{}, false, fmt.Errorf("BAM header: magic % x, want BAM\\1", raw[:4])
	}
	p := 8 + int64(binary.LittleEndian.Uint32(raw[4:]))
	if p+4 > int64(len(raw)) {
		return bamHeader{}, false, nil
	}
	n := binary.LittleEndian.Uint32(raw[p:])
	p += 4
	var h bamHeader
	for i := uint32(0); i < n; i++ {
		if p+4 > int64(len(raw)) {
			return bamHeader{}, false, nil
		}
		l := int64(binary.LittleEndian.Uint32(raw[p:]))
		if l < 1 || p+4+l+4 > int64(len(raw)) {
			if l < 1 {
				return bamHeader{}, false, fmt.Errorf("BAM header: reference %d: name of %d bytes", i, l)
			}
			return bamHeader{}, false, nil
		}
		h.refs = append(h.refs, string(raw[p+4:p+4+l-1]))
		p += 4 + l + 4
	}
	if p != int64(len(raw)) {
		return bamHeader{}, false, fmt.Errorf("BAM header: %d bytes after the last reference, where the header's blocks should end", int64(len(raw))-p)
	}
	return h, true, nil
}

// chunk is a range of virtual file offsets [beg, end) (SAMv1 §4.1.1).
type chunk struct{ beg, end uint64 }

// indexQuery returns the chunks of the index idx (a BAI or CSI) that may
// hold records of reference tid overlapping [beg, end), sorted and
// merged.
func indexQuery(idx []byte, tid int, beg, end int64) ([]chunk, error) {
	ix, err := parseIndex(idx)
	if err != nil {
		return nil, err
	}
	if tid < 0 || tid >= len(ix.refs) {
		return nil, nil
	}
	ref := ix.refs[tid]
	minOff := ref.minOffset(beg)
	var out []chunk
	for _, b := range reg2bins(beg, end, ix.minShift, ix.depth) {
		for _, c := range ref.bins[b] {
			if c.end > minOff {
				out = append(out, c)
			}
		}
	}
	return mergeChunks(out), nil
}

// allChunks returns every chunk of every reference of idx, merged: the
// records placed on a reference.
func allChunks(idx []byte) ([]chunk, error) {
	ix, err := parseIndex(idx)
	if err != nil {
		return nil, err
	}
	var out []chunk
	for _, r := range ix.refs {
		for b, cs := range r.bins {
			if b == pseudoBin(ix.depth) {
				continue
			}
			out = append(out, cs...)
		}
	}
	return mergeChunks(out), nil
}

func mergeChunks(cs []chunk) []chunk {
	sort.Slice(cs, func(i, j int) bool { return cs[i].beg < cs[j].beg })
	var out []chunk
	for _, c := range cs {
		if n := len(out); n > 0 && c.beg <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, c.end)
			continue
		}
		out = append(out, c)
	}
	return out
}

// index is a parsed BAI or CSI.
type index struct {
	minShift, depth int
	refs            []indexRef
}

type indexRef struct {
	bins   map[uint32][]chunk
	linear []uint64 // BAI: the 16 kb linear index
}

// minOffset is the smallest virtual offset a record overlapping beg may
// have, by a BAI's linear index; 0 for a CSI (every chunk of the bins is
// kept: htsget may return more records than asked for).
func (r indexRef) minOffset(beg int64) uint64 {
	if i := beg >> 14; i >= 0 && i < int64(len(r.linear)) {
		return r.linear[i]
	}
	return 0
}

// pseudoBin is the bin number of the index's metadata pseudo-bin.
func pseudoBin(depth int) uint32 { return uint32(((1<<(3*(depth+1)))-1)/7) + 1 }

// reg2bins lists the bins that may hold records overlapping [beg, end)
// in a binning scheme of minShift and depth (SAMv1 §5.3, CSIv1).
func reg2bins(beg, end int64, minShift, depth int) []uint32 {
	if end <= beg {
		end = beg + 1
	}
	end--
	var out []uint32
	t, s := 0, minShift+depth*3
	for l := 0; l <= depth; l++ {
		b := t + int(beg>>s)
		e := t + int(end>>s)
		for i := b; i <= e; i++ {
			out = append(out, uint32(i))
		}
		s -= 3
		t += 1 << (l * 3)
	}
	return out
}

var errIndex = errors.New("index")

// parseIndex parses a BAI (SAMv1 §5.2) or CSI (CSIv1) file.
func parseIndex(b []byte) (index, error) {
	d := &reader{b: b}
	magic := d.bytes(4)
	var ix index
	var csi bool
	switch string(magic) {
	case "BAI\x01":
		ix.minShift, ix.depth = 14, 5
	case "CSI\x01":
		csi = true
		ix.minShift, ix.depth = int(d.u32()), int(d.u32())
		d.bytes(int(d.u32())) // aux
		if ix.minShift < 1 || ix.minShift > 30 || ix.depth < 1 || ix.depth > 10 {
			return index{}, fmt.Errorf("%w: CSI min_shift %d, depth %d", errIndex, ix.minShift, ix.depth)
		}
	default:
		return index{}, fmt.Errorf("%w: magic % x, want BAI\\1 or CSI\\1", errIndex, magic)
	}
	nRef := d.count()
	for i := 0; i < nRef && d.err == nil; i++ {
		r := indexRef{bins: map[uint32][]chunk{}}
		nBin := d.count()
		for j := 0; j < nBin && d.err == nil; j++ {
			bin := d.u32()
			if csi {
				d.u64() // loffset
			}
			nChunk := d.count()
			for k := 0; k < nChunk && d.err == nil; k++ {
				r.bins[bin] = append(r.bins[bin], chunk{d.u64(), d.u64()})
			}
		}
		if !csi {
			nIntv := d.count()
			r.linear = make([]uint64, 0, min(nIntv, len(b)/8))
			for k := 0; k < nIntv && d.err == nil; k++ {
				r.linear = append(r.linear, d.u64())
			}
		}
		ix.refs = append(ix.refs, r)
	}
	if d.err != nil {
		return index{}, d.err
	}
	return ix, nil
}

// reader reads little-endian integers of b, remembering the first error.
type reader struct {
	b   []byte
	pos int
	err error
}

func (d *reader) bytes(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.pos {
		d.err = fmt.Errorf("%w: %d bytes wanted at offset %d of %d", errIndex, n, d.pos, len(d.b))
		return nil
	}
	d.pos += n
	return d.b[d.pos-n : d.pos]
}

func (d *reader) u32() uint32 {
	if b := d.bytes(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *reader) u64() uint64 {
	if b := d.bytes(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// count reads a count, refusing one larger than the bytes left could
// hold (each counted item takes at least 4 bytes).
func (d *reader) count() int {
	n := d.u32()
	if d.err == nil && int64(n) > int64(len(d.b)-d.pos)/4 {
		d.err = fmt.Errorf("%w: count %d at offset %d exceeds the %d bytes left", errIndex, n, d.pos-4, len(d.b)-d.pos)
		return 0
	}
	return int(n)
}
