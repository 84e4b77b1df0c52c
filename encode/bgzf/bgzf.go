// Package bgzf writes BGZF, the blocked gzip format of BAM files (SAMv1
// §4.1). Blocks are cut like htslib 1.16 cuts them: at most MaxBlockData
// uncompressed bytes each, one raw deflate stream per block. Nothing in
// the module reads BGZF but its tests (internal/bgzftest).
package bgzf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/klauspost/compress/flate"
)

// MaxBlockData is the number of uncompressed bytes in a full block, the
// BGZF_BLOCK_SIZE of htslib (SAMv1 §4.1).
const MaxBlockData = 0xff00

// MaxBlockSize is the largest total size of one BGZF block, header and
// footer included (BSIZE is stored minus one in 16 bits, SAMv1 §4.1).
const MaxBlockSize = 0x10000

const (
	headerLen = 18 // gzip header with the 6-byte BC extra field
	footerLen = 8  // CRC32 and ISIZE
	// maxDeflate is the largest deflate payload that still fits a block.
	maxDeflate = MaxBlockSize - headerLen - footerLen
)

// ErrLevel is returned, wrapped, for an unsupported compression level.
var ErrLevel = errors.New("bgzf: invalid compression level")

// EOF is the 28-byte empty block that ends a BGZF file (SAMv1 §4.1.2): a
// string, so that no caller can change it.
const EOF = "\x1f\x8b\x08\x04\x00\x00\x00\x00\x00\xff\x06\x00" +
	"BC\x02\x00\x1b\x00\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00"

// blockHeader is the fixed part of every block header (SAMv1 §4.1): gzip
// magic, CM=8, FLG=FEXTRA, MTIME=0, XFL=0, OS=255, XLEN=6, then the BC
// subfield with SLEN=2; BSIZE follows.
var blockHeader = [16]byte{
	0x1f, 0x8b, 0x08, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0x06, 0x00,
	0x42, 0x43, 0x02, 0x00,
}

// sliceWriter appends whatever is written to it to b.
type sliceWriter struct{ b []byte }

func (s *sliceWriter) Write(p []byte) (int, error) {
	s.b = append(s.b, p...)
	return len(p), nil
}

// Compressor compresses BGZF blocks (SAMv1 §4.1) with klauspost/compress
// flate, reusing its state from block to block. It is not safe for
// concurrent use.
type Compressor struct {
	level int
	fw    *flate.Writer // nil at level 0
	out   sliceWriter

	// The run of blocks between Begin and End (stream.go).
	stored Stored // level 0
	run    []byte // level > 0: dst with the blocks cut so far
	raw    int64  // level > 0: data bytes in those blocks
	stage  []byte // level > 0: data not yet in a block, kept for reuse

	// Where the blocks of a run go as they are cut (SetSink), and from
	// how many bytes of them on they are offered.
	sink    Sink
	sinkMin int
	start   int // the run's first byte in dst (Begin), blocks before it not the run's
}

// NewCompressor returns a Compressor for level 0 (stored deflate blocks, no
// compression) or 1 to 9.
func NewCompressor(level int) (*Compressor, error) {
	if level < 0 || level > 9 {
		return nil, fmt.Errorf("%w: %d, want 0..9", ErrLevel, level)
	}
	c := &Compressor{level: level}
	if level > 0 {
		fw, err := flate.NewWriter(&c.out, level)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrLevel, err)
		}
		c.fw = fw
	}
	return c, nil
}

// AppendBlocks cuts src into MaxBlockData-byte pieces (the last one
// shorter) and appends each to dst as one BGZF block (SAMv1 §4.1): header
// with the BC extra field, raw deflate data, CRC32 and ISIZE. An empty src
// appends nothing. The output is a pure function of src and the level.
func (c *Compressor) AppendBlocks(dst, src []byte) ([]byte, error) {
	if c.level == 0 {
		// Stored blocks: the output size is known, so grow dst once.
		blocks := (len(src) + MaxBlockData - 1) / MaxBlockData
		dst = slices.Grow(dst, len(src)+blocks*(headerLen+5+footerLen))
	}
	for len(src) > 0 {
		n := min(len(src), MaxBlockData)
		var err error
		dst, err = c.appendBlock(dst, src[:n])
		if err != nil {
			return dst, err
		}
		src = src[n:]
	}
	return dst, nil
}

// appendBlock appends one block holding src (at most MaxBlockData bytes).
func (c *Compressor) appendBlock(dst, src []byte) ([]byte, error) {
	start := len(dst)
	dst = append(dst, blockHeader[:]...)
	dst = append(dst, 0, 0) // BSIZE, set below
	stored := c.level == 0
	if !stored {
		c.out.b = dst
		c.fw.Reset(&c.out)
		if _, err := c.fw.Write(src); err != nil {
			return dst[:start], fmt.Errorf("bgzf: deflate: %w", err)
		}
		if err := c.fw.Close(); err != nil {
			return dst[:start], fmt.Errorf("bgzf: deflate: %w", err)
		}
		dst = c.out.b
		c.out.b = nil
		if len(dst)-start-headerLen > maxDeflate {
			// Incompressible data: store it, as htslib does.
			dst = dst[:start+headerLen]
			stored = true
		}
	}
	if stored {
		n := uint16(len(src))
		dst = append(dst, 1, byte(n), byte(n>>8), byte(^n), byte(^n>>8)) // BFINAL=1, BTYPE=00, LEN, NLEN
		dst = append(dst, src...)
	}
	dst = binary.LittleEndian.AppendUint32(dst, crc32.ChecksumIEEE(src))
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(src)))
	binary.LittleEndian.PutUint16(dst[start+16:], uint16(len(dst)-start-1))
	return dst, nil
}
