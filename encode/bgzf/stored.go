package bgzf

import (
	"encoding/binary"
	"hash/crc32"
)

// storedHeaderLen is a block header followed by the header of a stored
// deflate block (BFINAL=1, BTYPE=00, LEN, NLEN; RFC 1951 §3.2.4).
const storedHeaderLen = headerLen + 5

// storedOverhead is what a stored block adds to its payload.
const storedOverhead = storedHeaderLen + footerLen

// Stored writes level-0 BGZF blocks (SAMv1 §4.1) in place: data appended
// to the buffer after Begin becomes block payload, and Cut closes every
// full block by moving only the bytes past the block boundary to make room
// for the footer and the next header. The blocks are the bytes
// Compressor.AppendBlocks produces at level 0 for the same data, without
// first collecting the data in a separate buffer and copying it.
//
//	dst = s.Begin(dst)
//	for ... { dst = append(dst, ...); dst = s.Cut(dst) }
//	dst = s.End(dst)
type Stored struct {
	hdr int   // offset of the open block's header in the buffer
	raw int64 // payload bytes of the blocks closed so far
}

// Begin opens the first block at the end of dst.
func (s *Stored) Begin(dst []byte) []byte {
	s.hdr, s.raw = len(dst), 0
	return append(dst, make([]byte, storedHeaderLen)...)
}

// Cut closes every full block of dst (MaxBlockData payload bytes) and
// opens the next; call it after appending data, as often as convenient.
func (s *Stored) Cut(dst []byte) []byte {
	for len(dst)-(s.hdr+storedHeaderLen) > MaxBlockData {
		b := s.hdr + storedHeaderLen + MaxBlockData // block boundary
		tail := len(dst) - b
		dst = append(dst, make([]byte, storedOverhead)...)
		copy(dst[b+storedOverhead:], dst[b:b+tail])
		s.close(dst, MaxBlockData)
		s.hdr = b + footerLen
	}
	return dst
}

// End closes the last block, or drops it when it holds no data (so that
// no data at all gives no block), and returns the finished buffer.
func (s *Stored) End(dst []byte) []byte {
	dst = s.Cut(dst)
	n := len(dst) - (s.hdr + storedHeaderLen)
	if n == 0 {
		return dst[:s.hdr]
	}
	dst = append(dst, make([]byte, footerLen)...)
	s.close(dst, n)
	return dst
}

// Raw returns the payload bytes of the blocks closed so far (after End,
// all the data).
func (s *Stored) Raw() int64 { return s.raw }

// Pos returns the offset in the data (not in the buffer) of the end of
// dst, the buffer as returned by the last Begin or Cut with data appended
// since.
func (s *Stored) Pos(dst []byte) int64 {
	return s.raw + int64(len(dst)-(s.hdr+storedHeaderLen))
}

// close fills the header and footer of the open block, which holds n
// payload bytes followed by room for its footer.
func (s *Stored) close(dst []byte, n int) {
	h := dst[s.hdr:]
	copy(h, blockHeader[:])
	binary.LittleEndian.PutUint16(h[16:], uint16(storedOverhead+n-1))
	h[18] = 1
	binary.LittleEndian.PutUint16(h[19:], uint16(n))
	binary.LittleEndian.PutUint16(h[21:], ^uint16(n))
	payload := h[storedHeaderLen : storedHeaderLen+n]
	binary.LittleEndian.PutUint32(h[storedHeaderLen+n:], crc32.ChecksumIEEE(payload))
	binary.LittleEndian.PutUint32(h[storedHeaderLen+n+4:], uint32(n))
	s.raw += int64(n)
}

// StoredSize returns the size of the level-0 BGZF blocks of n bytes.
func StoredSize(n int64) int64 {
	blocks := (n + MaxBlockData - 1) / MaxBlockData
	return n + blocks*storedOverhead
}
