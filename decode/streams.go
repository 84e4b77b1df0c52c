package decode

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
)

// bitReader reads the core data block (CRAMv3 §8.6) most significant bit
// first (§2.2).
type bitReader struct {
	data []byte
	pos  int // next byte
	cur  uint64
	n    uint // bits held in cur
}

func (br *bitReader) reset(b []byte) { *br = bitReader{data: b} }

func (br *bitReader) fill() {
	for br.n <= 56 && br.pos < len(br.data) {
		br.cur |= uint64(br.data[br.pos]) << (56 - br.n)
		br.pos++
		br.n += 8
	}
}

func (br *bitReader) readBit() (uint32, error) {
	if br.n == 0 {
		br.fill()
		if br.n == 0 {
			return 0, corruptf("core data block: read past its end")
		}
	}
	v := uint32(br.cur >> 63)
	br.cur <<= 1
	br.n--
	return v, nil
}

// readBits reads n (0..32) bits as an unsigned value.
func (br *bitReader) readBits(n int) (uint32, error) {
	if n == 0 {
		return 0, nil
	}
	if br.n < uint(n) {
		br.fill()
		if br.n < uint(n) {
			return 0, corruptf("core data block: read past its end")
		}
	}
	v := uint32(br.cur >> (64 - uint(n)))
	br.cur <<= uint(n)
	br.n -= uint(n)
	return v, nil
}

// extStream is one external block's raw bytes being consumed (CRAMv3
// §8.7).
type extStream struct {
	id   int32
	data []byte
	pos  int
	// pending is set for a block the lean pass (shapes.go) has not
	// decompressed yet: data is nil and size its raw size, so that reads of
	// known length move pos without it.
	pending bool
	size    int
	blk     Block
	// measured is set for a block of names the lean pass measured
	// without decoding them: data is nil and lens holds each name's length
	// (nextLen reads them; see blockLoader.load).
	measured bool
	lens     []uint32
}

// The readers below build their errors from a plain struct rather than
// through fmt, so that the common case inlines into the record loop.

// extError is a read past the end of an external block: want bytes at
// offset pos of a block of size bytes (want -1: an ITF-8 value, -2: a
// uint7).
type extError struct {
	id              int32
	pos, want, size int
}

func (e *extError) Error() string {
	switch e.want {
	case -1:
		return fmt.Sprintf("%v: external block %d: ITF-8 at offset %d runs past its end (%d bytes)", ErrCorrupt, e.id, e.pos, e.size)
	case -2:
		return fmt.Sprintf("%v: external block %d: uint7 at offset %d runs past its end or is too long (%d bytes)", ErrCorrupt, e.id, e.pos, e.size)
	}
	return fmt.Sprintf("%v: external block %d: %d bytes wanted at offset %d, %d remain", ErrCorrupt, e.id, e.want, e.pos, e.size-e.pos)
}

func (e *extError) Unwrap() error { return ErrCorrupt }

func (x *extStream) readByte() (byte, error) {
	if p := x.pos; p < len(x.data) {
		x.pos = p + 1
		return x.data[p], nil
	}
	return 0, &extError{id: x.id, pos: x.pos, want: 1, size: len(x.data)}
}

// readITF8Long reads one ITF-8 integer (CRAMv3 §2.3) of any length; the
// one-byte values (below 128) are decoded inline by its callers.
func (x *extStream) readITF8Long() (int32, error) {
	v, err := readITF8(x.data, &x.pos)
	if err != nil {
		return 0, &extError{id: x.id, pos: x.pos, want: -1, size: len(x.data)}
	}
	return v, nil
}

// itf8 reads one ITF-8 integer (CRAMv3 §2.3) of any length when at
// least five bytes remain, with no branch on its length but for the
// five-byte form (readITF8Long reads the last values of a block). ok is
// false, and nothing read, when fewer remain. readInt has it written out.
func (x *extStream) itf8() (v int32, ok bool) {
	p := x.pos
	if len(x.data)-p < 5 {
		return 0, false
	}
	u := binary.BigEndian.Uint32(x.data[p:])
	n := bits.LeadingZeros32(^u) // the bytes after the first
	if n >= 4 {
		x.pos = p + 5
		return int32(u<<4 | uint32(x.data[p+4]&0x0f)), true
	}
	x.pos = p + 1 + n
	return int32(u >> itf8Shift[n&3] & itf8Mask[n&3]), true
}

// itf8Shift and itf8Mask take the value of an ITF-8 integer of 1 to 4
// bytes, by the bytes after its first, from its first four bytes read
// big-endian.
var (
	itf8Shift = [4]uint8{24, 16, 8, 0}
	itf8Mask  = [4]uint32{1<<7 - 1, 1<<14 - 1, 1<<21 - 1, 1<<28 - 1}
)

func (x *extStream) readN(n int) ([]byte, error) {
	if p := x.pos; n >= 0 && n <= len(x.data)-p {
		x.pos = p + n
		return x.data[p : p+n], nil
	}
	return nil, &extError{id: x.id, pos: x.pos, want: n, size: len(x.data)}
}

func (x *extStream) readUntil(stop byte) ([]byte, error) {
	i := bytes.IndexByte(x.data[x.pos:], stop)
	if i < 0 {
		return nil, corruptf("external block %d: no stop byte %#x after offset %d", x.id, stop, x.pos)
	}
	b := x.data[x.pos : x.pos+i]
	x.pos += i + 1
	return b, nil
}

// streams is the core and external blocks of one slice.
type streams struct {
	core     bitReader
	small    [64]*extStream // content IDs 0..63
	large    map[int32]*extStream
	pool     []extStream
	maxArray int    // bound on one byte array: the slice's total raw bytes
	gen      uint64 // counts resets, so encodings know their cached stream is stale
	// lazy decompresses pending blocks on first use; nil when every block
	// is added decompressed.
	lazy *blockLoader
	// late is the block a BlockRunner may still be decompressing (see
	// lateBlock); nil when none.
	late *lateBlock
	// series is how each data series is read in the slice, found once
	// per slice (bindSeries), so that a value is read without going
	// through the encoding.
	series [numDataSeries]seriesBlock
}

// seriesBlock is how a data series is read in a slice: from the block
// of its EXTERNAL encoding (readInt, readQuals) or of its BYTE_ARRAY_STOP
// one (readName), or as the constant of a one-symbol HUFFMAN code (read
// with no bits), or else (neither set) through its encoding.
type seriesBlock struct {
	x        *extStream // nil: another encoding, or the slice lacks the block
	constant int32
	isConst  bool
}

func (s *streams) reset() {
	s.gen++
	s.small = [64]*extStream{}
	for k := range s.large {
		delete(s.large, k)
	}
	s.pool = s.pool[:0]
	s.maxArray = 0
	s.lazy = nil
	s.late = nil
	s.series = [numDataSeries]seriesBlock{}
}

// bindSeries sets how the data series of encodings ds are read in the
// slice (series); once all its blocks were added and indexed.
func (s *streams) bindSeries(ds *[numDataSeries]*Encoding) {
	for i, e := range ds {
		r := seriesBlock{x: s.externalOf(e)}
		if r.x == nil {
			r.x = s.byteArrayStopOf(e) // RN's, for readName
		}
		if e != nil && e.ID == EncodingHuffman && e.huff.count[0] > 0 {
			r.constant, r.isConst = e.huff.symbols[0], true
		}
		s.series[i] = r
	}
}

func (s *streams) add(id int32, data []byte) {
	s.pool = append(s.pool, extStream{id: id, data: data, size: len(data)})
	s.maxArray += len(data)
}

// index makes the added blocks findable by content ID. It is called once
// all blocks were added, since add may move the pool.
func (s *streams) index() {
	for i := range s.pool {
		x := &s.pool[i]
		if x.id >= 0 && x.id < int32(len(s.small)) {
			if s.small[x.id] == nil {
				s.small[x.id] = x
			}
			continue
		}
		if s.large == nil {
			s.large = make(map[int32]*extStream)
		}
		if _, ok := s.large[x.id]; !ok {
			s.large[x.id] = x
		}
	}
}

func (s *streams) external(id int32) (*extStream, error) {
	x, err := s.lookup(id)
	if err == nil && x.pending {
		if l := s.late; l != nil && l.x == x {
			err = l.finish()
		} else {
			err = s.lazy.load(x)
		}
	}
	return x, err
}

// externalOf is the block of the slice that EXTERNAL encoding e reads,
// without decompressing it if pending; nil for another encoding or a
// block the slice lacks (whose reader then fails).
func (s *streams) externalOf(e *Encoding) *extStream {
	if e == nil || e.ID != EncodingExternal {
		return nil
	}
	return s.find(e.ContentID)
}

// byteArrayStopOf is externalOf for a BYTE_ARRAY_STOP encoding.
func (s *streams) byteArrayStopOf(e *Encoding) *extStream {
	if e == nil || e.ID != EncodingByteArrayStop {
		return nil
	}
	return s.find(e.ContentID)
}

// lookup is external without decompressing a pending block.
func (s *streams) lookup(id int32) (*extStream, error) {
	x := s.find(id)
	if x == nil {
		return nil, corruptf("no external block with content id %d in the slice", id)
	}
	return x, nil
}

// find is the block of content id, nil when the slice has none. Binding a
// slice's series asks for every series' block, of which a small slice
// lacks many: that answer costs no error.
func (s *streams) find(id int32) *extStream {
	if id >= 0 && id < int32(len(s.small)) {
		return s.small[id]
	}
	return s.large[id]
}

// readUint7 reads one uint7 (CRAM 4.0) of at most maxBytes bytes.
func (x *extStream) readUint7(maxBytes int) (uint64, error) {
	v, err := readUint7(x.data, &x.pos, maxBytes)
	if err != nil {
		return 0, &extError{id: x.id, pos: x.pos, want: -2, size: len(x.data)}
	}
	return v, nil
}
