package decode

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/cramfs/cramfs/decode/codec/bzip2"
	"github.com/cramfs/cramfs/decode/codec/gzip"
	"github.com/ulikunitz/xz"
)

// BlockMethod is a block's compression method (CRAMv3 §8.1).
type BlockMethod byte

// Block compression methods.
const (
	MethodRaw      BlockMethod = 0
	MethodGzip     BlockMethod = 1
	MethodBzip2    BlockMethod = 2
	MethodLZMA     BlockMethod = 3
	MethodRANS4x8  BlockMethod = 4
	MethodRANSNx16 BlockMethod = 5
	MethodArith    BlockMethod = 6
	MethodFQZComp  BlockMethod = 7
	MethodTok3     BlockMethod = 8
)

// ContentType is a block's content type (CRAMv3 §8.1).
type ContentType byte

// Block content types.
const (
	ContentFileHeader        ContentType = 0
	ContentCompressionHeader ContentType = 1
	ContentSliceHeader       ContentType = 2
	ContentExternal          ContentType = 4
	ContentCore              ContentType = 5
)

// MaxBlockSize caps a block's declared raw or compressed size. Nothing is
// allocated from a size read off the disk beyond this.
const MaxBlockSize = 1 << 30

// Block is one CRAM block (CRAMv3 §8).
type Block struct {
	Method      BlockMethod
	ContentType ContentType
	ContentID   int32
	RawSize     int32
	// Data is the compressed payload as stored; it aliases the container
	// bytes it was parsed from.
	Data []byte
}

// AppendDecoder decodes a block's compressed data src, whose decoded size
// is rawSize, appending the decoded bytes to dst (allocating only when dst
// lacks capacity) and returning the extended slice, which never aliases
// src.
type AppendDecoder func(dst, src []byte, rawSize int) ([]byte, error)

// Codecs decodes the block methods that live in their own packages. The
// zero value handles raw, gzip, bzip2 and lzma only.
type Codecs struct {
	RANS4x8  AppendDecoder
	RANSNx16 AppendDecoder
	Arith    AppendDecoder
	FQZComp  AppendDecoder
	Tok3     AppendDecoder
	// Tok3Lengths, when set, measures a method-8 block's names without
	// decoding them (tok3.AppendLengths), for the lean pass; nil: the lean
	// pass decodes them with Tok3.
	Tok3Lengths func(dst []uint32, src []byte, rawSize int) ([]uint32, error)
}

// parseBlock reads one block from b at *pos (CRAMv3 §8). Major version 3
// and later carry a CRC32 over the block (§4), which is verified; from
// 4.0 on, its content id and sizes are uint7 rather than ITF-8.
func parseBlock(b []byte, pos *int, major int) (Block, error) {
	start := *pos
	if start+2 > len(b) {
		return Block{}, corruptf("block at container byte %d: end of data", start)
	}
	var blk Block
	blk.Method = BlockMethod(b[start])
	blk.ContentType = ContentType(b[start+1])
	*pos = start + 2
	var err error
	r := varintsFor(major)
	if blk.ContentID, err = r.u32(b, pos); err != nil {
		return Block{}, err
	}
	size, err := r.u32(b, pos)
	if err != nil {
		return Block{}, err
	}
	if blk.RawSize, err = r.u32(b, pos); err != nil {
		return Block{}, err
	}
	if size < 0 || blk.RawSize < 0 || blk.RawSize > MaxBlockSize {
		return Block{}, corruptf("block at container byte %d: sizes %d compressed, %d raw", start, size, blk.RawSize)
	}
	if int(size) > len(b)-*pos {
		return Block{}, &blockError{blk.ContentID, corruptf("block at container byte %d: %d bytes declared, %d remain", start, size, len(b)-*pos)}
	}
	blk.Data = b[*pos : *pos+int(size)]
	*pos += int(size)
	if major >= 3 {
		if *pos+4 > len(b) {
			return Block{}, corruptf("block at container byte %d: CRC32 missing", start)
		}
		want := binary.LittleEndian.Uint32(b[*pos:])
		if got := crc32.ChecksumIEEE(b[start:*pos]); got != want {
			return Block{}, &blockError{blk.ContentID, fmt.Errorf("%w: block at container byte %d: CRC32 %08x, header says %08x", ErrChecksum, start, got, want)}
		}
		*pos += 4
	}
	return blk, nil
}

// Decompress returns the block's raw bytes. They are decoded into buf's
// storage when its capacity allows (buf may be nil); a raw block returns
// its Data.
func (blk *Block) Decompress(c *Codecs, buf []byte) ([]byte, error) {
	return blk.decompress(c, buf)
}

// decompress decodes the block with its method (CRAMv3 §8.1, the methods of
// §14).
func (blk *Block) decompress(c *Codecs, buf []byte) ([]byte, error) {
	raw := int(blk.RawSize)
	if raw == 0 {
		// An empty block needs no decompression, whatever its method
		// (Java writers store empty rANS blocks with no payload).
		return nil, nil
	}
	var out []byte
	var err error
	if blk.Method != MethodRaw && raw <= maxPresize*len(blk.Data)+1<<16 {
		// A size no codec could reach from these bytes is left to the
		// codec's own bounds.
		buf = roomFor(buf, raw)
	}
	switch blk.Method {
	case MethodRaw:
		out = blk.Data
	case MethodGzip:
		out, err = gzip.AppendDecode(buf[:0], blk.Data, raw)
	case MethodBzip2:
		out, err = bzip2.AppendDecode(buf[:0], blk.Data, raw)
	case MethodLZMA:
		out, err = readAllCapped(func() (io.Reader, error) { return xz.NewReader(bytes.NewReader(blk.Data)) }, raw, buf)
	default:
		var f AppendDecoder
		if c != nil {
			switch blk.Method {
			case MethodRANS4x8:
				f = c.RANS4x8
			case MethodRANSNx16:
				f = c.RANSNx16
			case MethodArith:
				f = c.Arith
			case MethodFQZComp:
				f = c.FQZComp
			case MethodTok3:
				f = c.Tok3
			}
		}
		if f == nil {
			return nil, &blockError{blk.ContentID, fmt.Errorf("%w: block compression method %d", ErrUnsupported, blk.Method)}
		}
		out, err = f(buf[:0], blk.Data, raw)
	}
	if err != nil {
		return nil, &blockError{blk.ContentID, fmt.Errorf("%w: method %d: %w", ErrCorrupt, blk.Method, err)}
	}
	if len(out) != raw {
		return nil, &blockError{blk.ContentID, corruptf("method %d: decoded %d bytes, header says %d", blk.Method, len(out), raw)}
	}
	return out, nil
}

// readAllCapped reads a stream expected to hold exactly raw bytes into
// buf's storage. The buffer starts at 1 MiB at most, whatever the declared
// size, and grows with what the stream produces, up to raw+1 bytes.
func readAllCapped(open func() (io.Reader, error), raw int, buf []byte) ([]byte, error) {
	r, err := open()
	if err != nil {
		return nil, err
	}
	want := min(raw+1, 1<<20)
	buf = buf[:0]
	if cap(buf) < want {
		buf = make([]byte, 0, want)
	}
	for len(buf) <= raw {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(cap(buf), raw+1-len(buf)))
		}
		n, err := r.Read(buf[len(buf):min(cap(buf), raw+1)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(buf) > raw {
		return nil, fmt.Errorf("stream holds more than the %d bytes declared", raw)
	}
	return buf, nil
}
