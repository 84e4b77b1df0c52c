package reference

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/cramfs/cramfs/decode/codec/gzip"
)

// A FASTA file compressed with bgzip (BGZF, SAMv1 §4.1) is read the way
// htslib's faidx reads it: its .fai gives offsets in the uncompressed
// text, and its .gzi index (which samtools faidx writes with the .fai)
// the compressed and uncompressed offsets of each block, so that the
// bases of a range come from inflating the few blocks that hold them. The
// compressed file is memory-mapped as a plain FASTA is (the same fault
// guard, its pages dropped once inflated), and the blocks inflated last
// are kept in a cache of fixed size shared by a Store's files. Nothing is
// decompressed ahead of use, held whole in memory, or written to disk.

const (
	// maxBlockData is the most uncompressed bytes of a BGZF block.
	maxBlockData = 1 << 16
	// blockCacheBlocks is how many inflated blocks a Store keeps, 4 MiB
	// at most: a few per decoding thread reading its slice's span.
	blockCacheBlocks = 64
)

// bgzfBlock is one entry of a .gzi index: where a block starts in the
// compressed file and in the uncompressed text.
type bgzfBlock struct{ coff, uoff int64 }

// bgzfText is the uncompressed text of a BGZF file mapped in m.
type bgzfText struct {
	m      *mapping
	blocks []bgzfBlock // ascending; blocks[0] is {0, 0}
	size   int64       // bytes of the uncompressed text
	cache  *blockCache
}

// blockCache keeps the BGZF blocks a Store inflated last: a reader moving
// along a contig inflates each block once, and the memory held grows
// neither with the size of the references nor with their number.
type blockCache struct {
	lru *lru.Cache[blockKey, []byte]
}

type blockKey struct {
	z *bgzfText
	i int
}

func newBlockCache() *blockCache {
	c, err := lru.New[blockKey, []byte](blockCacheBlocks)
	if err != nil {
		panic(err) // only for a size below 1
	}
	return &blockCache{lru: c}
}

// isBGZF reports whether b starts with a BGZF block header: a gzip member
// header with FEXTRA holding the BC subfield (SAMv1 §4.1).
func isBGZF(b []byte) bool { return blockSize(b) > 0 }

// blockSize returns the size of the whole block (BSIZE+1) whose header
// starts b, or 0 when b does not start with a BGZF block header.
func blockSize(b []byte) int64 {
	if len(b) < 18 || b[0] != 0x1f || b[1] != 0x8b || b[2] != 8 || b[3]&4 == 0 {
		return 0
	}
	xlen := int(binary.LittleEndian.Uint16(b[10:]))
	if len(b) < 12+xlen {
		return 0
	}
	for x := b[12 : 12+xlen]; len(x) >= 4; {
		n := int(binary.LittleEndian.Uint16(x[2:]))
		if len(x) < 4+n {
			break
		}
		if x[0] == 'B' && x[1] == 'C' && n == 2 {
			return int64(binary.LittleEndian.Uint16(x[4:])) + 1
		}
		x = x[4+n:]
	}
	return 0
}

// openBGZF indexes the BGZF file mapped in m from its .gzi index, read
// from m.path+".gzi". The caller guards against faults reading m.
func openBGZF(m *mapping, cache *blockCache) (*bgzfText, error) {
	gziPath := m.path + ".gzi"
	gzi, err := os.ReadFile(gziPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s is compressed with bgzip and has no %s: make its .fai and .gzi index with samtools faidx %s",
			ErrUnsupported, m.path, gziPath, m.path)
	}
	if err != nil {
		return nil, fmt.Errorf("reference index: %w", err)
	}
	blocks, err := parseGzi(gzi, int64(len(m.data)))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gziPath, err)
	}
	z := &bgzfText{m: m, blocks: blocks, cache: cache}
	// The text ends with the last block the index lists.
	last := blocks[len(blocks)-1]
	n := blockSize(m.data[last.coff:])
	if n < 26 || last.coff+n > int64(len(m.data)) {
		return nil, fmt.Errorf("%w: %s: no whole BGZF block at byte %d, where %s says the last one starts; is the index stale?",
			ErrCorrupt, m.path, last.coff, gziPath)
	}
	isize := int64(binary.LittleEndian.Uint32(m.data[last.coff+n-4:]))
	m.dropAround(last.coff, last.coff+n)
	if isize > maxBlockData {
		return nil, fmt.Errorf("%w: %s: BGZF block at byte %d says it holds %d bytes, more than %d", ErrCorrupt, m.path, last.coff, isize, maxBlockData)
	}
	z.size = last.uoff + isize
	return z, nil
}

// parseGzi reads a .gzi index (htslib's bgzf_index_dump: a little-endian
// 64-bit count, then per block after the first its compressed and
// uncompressed offsets) of a BGZF file of fileSize bytes, and checks that
// the blocks follow each other within the file.
func parseGzi(gzi []byte, fileSize int64) ([]bgzfBlock, error) {
	if len(gzi) < 8 {
		return nil, fmt.Errorf("%w: %d bytes, want at least 8", ErrCorrupt, len(gzi))
	}
	n := binary.LittleEndian.Uint64(gzi)
	if have := uint64(len(gzi)-8) / 16; n != have || (len(gzi)-8)%16 != 0 {
		return nil, fmt.Errorf("%w: says %d blocks, holds %d bytes of entries (16 per block)", ErrCorrupt, n, len(gzi)-8)
	}
	blocks := make([]bgzfBlock, 1, n+1)
	for i := range int(n) {
		e := gzi[8+16*i:]
		c, u := int64(binary.LittleEndian.Uint64(e)), int64(binary.LittleEndian.Uint64(e[8:]))
		prev := blocks[len(blocks)-1]
		if c <= prev.coff || c >= fileSize || u < prev.uoff || u-prev.uoff > maxBlockData {
			return nil, fmt.Errorf("%w: entry %d (block at byte %d, text byte %d) does not follow block at byte %d, text byte %d, within the %d-byte file; is the index stale?",
				ErrCorrupt, i+1, c, u, prev.coff, prev.uoff, fileSize)
		}
		blocks = append(blocks, bgzfBlock{coff: c, uoff: u})
	}
	return blocks, nil
}

// find returns the index of the block holding text byte off (< z.size).
func (z *bgzfText) find(off int64) int {
	return sort.Search(len(z.blocks), func(i int) bool { return z.blocks[i].uoff > off }) - 1
}

// end returns the text offset just past block i.
func (z *bgzfText) end(i int) int64 {
	if i+1 < len(z.blocks) {
		return z.blocks[i+1].uoff
	}
	return z.size
}

// block returns the text of block i, from the cache or inflated from the
// mapping and cached; the caller holds z.m.mu for reading and guards
// against faults. The bytes are shared: they must not be changed.
func (z *bgzfText) block(i int) ([]byte, error) {
	if b, ok := z.cache.lru.Get(blockKey{z, i}); ok {
		return b, nil
	}
	b, err := z.inflate(i)
	if err == nil {
		z.cache.lru.Add(blockKey{z, i}, b)
	}
	return b, err
}

// inflate returns the text of block i, inflated from the mapping, whose
// pages it then drops; the caller holds z.m.mu for reading and guards
// against faults.
func (z *bgzfText) inflate(i int) ([]byte, error) {
	data := z.m.data
	b := z.blocks[i]
	want := z.end(i) - b.uoff
	n := blockSize(data[b.coff:])
	if n == 0 || b.coff+n > int64(len(data)) {
		return nil, z.bad(i, "no whole BGZF block there")
	}
	out, err := gzip.AppendDecode(make([]byte, 0, want), data[b.coff:b.coff+n], int(want))
	z.m.dropAround(b.coff, b.coff+n)
	if err != nil {
		return nil, z.bad(i, err.Error())
	}
	return out, nil
}

// bad is the error of block i that could not be read: ErrChanged when the
// file is no longer the one mapped, else ErrCorrupt.
func (z *bgzfText) bad(i int, why string) error {
	b := z.blocks[i]
	if z.m.changed() {
		return fmt.Errorf("%w: %s: BGZF block at byte %d: %s: the file changed since it was opened", ErrChanged, z.m.path, b.coff, why)
	}
	return fmt.Errorf("%w: %s: BGZF block at byte %d (text byte %d): %s; is %s.gzi stale?", ErrCorrupt, z.m.path, b.coff, b.uoff, why, z.m.path)
}

// byteAt returns text byte off (< z.size), for parseFai's checks at
// open: through the cache, so that contigs sharing a block inflate it once.
func (z *bgzfText) byteAt(off int64) (byte, error) {
	i := z.find(off)
	b, err := z.block(i)
	if err != nil {
		return 0, err
	}
	return b[off-z.blocks[i].uoff], nil
}

func (z *bgzfText) textSize() int64 { return z.size }

// bgzfCursor reads a BGZF text for one walk, holding the block read last,
// so that the lines of a range cost one cache look-up per block.
type bgzfCursor struct {
	z   *bgzfText
	i   int    // cur's block, -1 for none
	cur []byte // its text
}

// emit gives text bytes [off, off+k), which lie within the text and are
// bases pos... of a contig, to sink, one piece per block.
func (c *bgzfCursor) emit(pos, off, k int64, sink segmentSink) error {
	for k > 0 {
		if c.i < 0 || off < c.z.blocks[c.i].uoff || off >= c.z.blocks[c.i].uoff+int64(len(c.cur)) {
			i := c.z.find(off)
			b, err := c.z.block(i)
			if err != nil {
				return err
			}
			if off-c.z.blocks[i].uoff >= int64(len(b)) {
				return c.z.bad(i, fmt.Sprintf("text byte %d is not in it", off))
			}
			c.i, c.cur = i, b
		}
		rel := off - c.z.blocks[c.i].uoff
		n := min(k, int64(len(c.cur))-rel)
		sink.segment(pos, c.cur[rel:rel+n])
		pos, off, k = pos+n, off+n, k-n
	}
	return nil
}
