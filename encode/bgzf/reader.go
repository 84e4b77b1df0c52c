package bgzf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/klauspost/compress/flate"
)

// blockInfo is the parsed header of one block.
type blockInfo struct {
	size  int // total block size, header and footer included
	cdata int // offset of the deflate data from the block start
}

// parseHeader checks the gzip member header at the start of b (which holds
// at least 12 bytes, and the whole extra field when XLEN says so) and
// finds BSIZE in the BC subfield (SAMv1 §4.1). need > 0 asks for that many
// more bytes before the header can be parsed.
func parseHeader(b []byte, at int64) (info blockInfo, need int, err error) {
	if len(b) < 12 {
		return info, 12 - len(b), nil
	}
	if b[0] != 0x1f || b[1] != 0x8b || b[2] != 8 || b[3]&4 == 0 {
		return info, 0, fmt.Errorf("%w: block at offset %d: header % x, want gzip with FEXTRA", ErrCorrupt, at, b[:4])
	}
	xlen := int(binary.LittleEndian.Uint16(b[10:]))
	if len(b) < 12+xlen {
		return info, 12 + xlen - len(b), nil
	}
	extra := b[12 : 12+xlen]
	bsize := -1
	for len(extra) >= 4 {
		slen := int(binary.LittleEndian.Uint16(extra[2:]))
		if len(extra) < 4+slen {
			break
		}
		if extra[0] == 'B' && extra[1] == 'C' && slen == 2 {
			bsize = int(binary.LittleEndian.Uint16(extra[4:])) + 1
		}
		extra = extra[4+slen:]
	}
	if bsize < 0 {
		return info, 0, fmt.Errorf("%w: block at offset %d: no BC extra subfield", ErrCorrupt, at)
	}
	if bsize < 12+xlen+footerLen {
		return info, 0, fmt.Errorf("%w: block at offset %d: BSIZE+1 %d smaller than header %d plus footer", ErrCorrupt, at, bsize, 12+xlen)
	}
	return blockInfo{size: bsize, cdata: 12 + xlen}, 0, nil
}

// inflater decompresses the deflate payload of a block and checks its
// footer, reusing a flate reader.
type inflater struct {
	fr  io.ReadCloser
	src bytes.Reader
}

// inflate appends the decompressed contents of block (one whole block) to
// dst, verifying CRC32 and ISIZE.
func (f *inflater) inflate(dst, block []byte, info blockInfo, at int64) ([]byte, error) {
	body := block[info.cdata : info.size-footerLen]
	wantCRC := binary.LittleEndian.Uint32(block[info.size-8:])
	isize := binary.LittleEndian.Uint32(block[info.size-4:])
	if isize > MaxBlockSize {
		return dst, fmt.Errorf("%w: block at offset %d: ISIZE %d exceeds %d", ErrCorrupt, at, isize, MaxBlockSize)
	}
	f.src.Reset(body)
	if f.fr == nil {
		f.fr = flate.NewReader(&f.src)
	} else if err := f.fr.(flate.Resetter).Reset(&f.src, nil); err != nil {
		return dst, fmt.Errorf("%w: block at offset %d: %v", ErrCorrupt, at, err)
	}
	start := len(dst)
	dst = growLen(dst, int(isize)+1)
	n, err := io.ReadFull(f.fr, dst[start:])
	dst = dst[:start+n]
	switch {
	case err == nil:
		return dst, fmt.Errorf("%w: block at offset %d: inflates to more than ISIZE %d", ErrCorrupt, at, isize)
	case err != io.ErrUnexpectedEOF && err != io.EOF:
		return dst, fmt.Errorf("%w: block at offset %d: inflate: %v", ErrCorrupt, at, err)
	case n != int(isize):
		return dst, fmt.Errorf("%w: block at offset %d: inflated %d bytes, ISIZE %d", ErrCorrupt, at, n, isize)
	}
	if got := crc32.ChecksumIEEE(dst[start:]); got != wantCRC {
		return dst, fmt.Errorf("%w: block at offset %d: CRC32 %08x, stored %08x", ErrCorrupt, at, got, wantCRC)
	}
	return dst, nil
}

// growLen extends b by n bytes (contents unspecified), growing its
// capacity geometrically.
func growLen(b []byte, n int) []byte {
	return slices.Grow(b, n)[:len(b)+n]
}

// DecodeBlock decodes the BGZF block at the start of b (SAMv1 §4.1),
// appending its uncompressed data to dst. It returns the extended dst and
// the block's compressed size.
func DecodeBlock(dst, b []byte) ([]byte, int, error) {
	var f inflater
	return decodeBlock(&f, dst, b, 0)
}

func decodeBlock(f *inflater, dst, b []byte, at int64) ([]byte, int, error) {
	info, need, err := parseHeader(b, at)
	if err != nil {
		return dst, 0, err
	}
	if need > 0 || len(b) < info.size {
		return dst, 0, fmt.Errorf("%w: block at offset %d truncated: %d bytes left", ErrCorrupt, at, len(b))
	}
	dst, err = f.inflate(dst, b[:info.size], info, at)
	return dst, info.size, err
}

// DecompressAll decompresses a whole BGZF stream held in b (SAMv1 §4.1).
func DecompressAll(b []byte) ([]byte, error) {
	var f inflater
	var out []byte
	var at int64
	for len(b) > 0 {
		var n int
		var err error
		out, n, err = decodeBlock(&f, out, b, at)
		if err != nil {
			return out, err
		}
		b = b[n:]
		at += int64(n)
	}
	return out, nil
}

// Reader decompresses a BGZF stream (SAMv1 §4.1) block by block,
// verifying each block's CRC32 and ISIZE. It implements io.Reader.
type Reader struct {
	r    io.Reader
	f    inflater
	raw  []byte // current compressed block
	data []byte // current uncompressed block
	pos  int    // read position in data
	at   int64  // compressed offset of the next block
	err  error
}

// NewReader returns a Reader decompressing r.
func NewReader(r io.Reader) *Reader {
	return &Reader{r: r}
}

// Read implements io.Reader.
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for r.pos >= len(r.data) {
		if r.err != nil {
			return 0, r.err
		}
		r.err = r.next()
	}
	n := copy(p, r.data[r.pos:])
	r.pos += n
	return n, nil
}

// next reads and decodes the next block.
func (r *Reader) next() error {
	r.raw = r.raw[:0]
	r.data = r.data[:0]
	r.pos = 0
	var info blockInfo
	for {
		i, need, err := parseHeader(r.raw, r.at)
		if err != nil {
			return err
		}
		if need == 0 {
			info = i
			break
		}
		start := len(r.raw)
		r.raw = growLen(r.raw, need)
		n, err := io.ReadFull(r.r, r.raw[start:])
		if err == io.EOF && start == 0 {
			return io.EOF
		}
		if err != nil {
			if err == io.ErrUnexpectedEOF || err == io.EOF {
				return fmt.Errorf("%w: block at offset %d truncated after %d bytes", ErrCorrupt, r.at, start+n)
			}
			return fmt.Errorf("bgzf: read: %w", err)
		}
	}
	start := len(r.raw)
	r.raw = growLen(r.raw, info.size-start)
	if n, err := io.ReadFull(r.r, r.raw[start:]); err != nil {
		if err == io.ErrUnexpectedEOF || err == io.EOF {
			return fmt.Errorf("%w: block at offset %d truncated after %d of %d bytes", ErrCorrupt, r.at, start+n, info.size)
		}
		return fmt.Errorf("bgzf: read: %w", err)
	}
	var err error
	r.data, err = r.f.inflate(r.data, r.raw, info, r.at)
	if err != nil {
		return err
	}
	r.at += int64(info.size)
	return nil
}
