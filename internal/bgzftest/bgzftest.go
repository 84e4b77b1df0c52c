// Package bgzftest reads BGZF (SAMv1 §4.1) for tests: the module itself
// only writes it, so its reader lives here, checked against the standard
// library's inflater rather than the compressor under test.
package bgzftest

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// ErrCorrupt is returned, wrapped, for a malformed BGZF stream.
var ErrCorrupt = errors.New("bgzftest: corrupt BGZF stream")

const (
	maxBlockSize = 0x10000 // BSIZE+1 fits 16 bits (SAMv1 §4.1)
	footerLen    = 8       // CRC32 and ISIZE
)

// blockSize checks the gzip member header at the start of b and returns
// the block's total size from BSIZE in the BC extra subfield, and the
// offset of its deflate data.
func blockSize(b []byte, at int64) (size, cdata int, err error) {
	if len(b) < 12 {
		return 0, 0, fmt.Errorf("%w: block at offset %d truncated: %d header bytes, want 12", ErrCorrupt, at, len(b))
	}
	if b[0] != 0x1f || b[1] != 0x8b || b[2] != 8 || b[3] != 4 {
		return 0, 0, fmt.Errorf("%w: block at offset %d: header % x, want gzip with FLG FEXTRA only", ErrCorrupt, at, b[:4])
	}
	xlen := int(binary.LittleEndian.Uint16(b[10:]))
	if len(b) < 12+xlen {
		return 0, 0, fmt.Errorf("%w: block at offset %d truncated: extra field of %d bytes, %d left", ErrCorrupt, at, xlen, len(b)-12)
	}
	size = -1
	for extra := b[12 : 12+xlen]; len(extra) >= 4; {
		slen := int(binary.LittleEndian.Uint16(extra[2:]))
		if len(extra) < 4+slen {
			break
		}
		if extra[0] == 'B' && extra[1] == 'C' && slen == 2 {
			size = int(binary.LittleEndian.Uint16(extra[4:])) + 1
		}
		extra = extra[4+slen:]
	}
	switch {
	case size < 0:
		return 0, 0, fmt.Errorf("%w: block at offset %d: no BC extra subfield", ErrCorrupt, at)
	case size < 12+xlen+footerLen:
		return 0, 0, fmt.Errorf("%w: block at offset %d: BSIZE+1 %d smaller than header %d plus footer", ErrCorrupt, at, size, 12+xlen)
	case len(b) < size:
		return 0, 0, fmt.Errorf("%w: block at offset %d truncated: BSIZE+1 %d, %d bytes left", ErrCorrupt, at, size, len(b))
	}
	return size, 12 + xlen, nil
}

// decodeBlock is DecodeBlock for a block at offset at of its stream.
func decodeBlock(dst, b []byte, at int64) ([]byte, int, error) {
	size, cdata, err := blockSize(b, at)
	if err != nil {
		return dst, 0, err
	}
	wantCRC := binary.LittleEndian.Uint32(b[size-8:])
	isize := binary.LittleEndian.Uint32(b[size-4:])
	if isize > maxBlockSize {
		return dst, 0, fmt.Errorf("%w: block at offset %d: ISIZE %d exceeds %d", ErrCorrupt, at, isize, maxBlockSize)
	}
	// One byte more than ISIZE shows a block inflating to more; a deflate
	// stream cut short is an error of its own (io.ErrUnexpectedEOF).
	// The deflate data must end where the footer starts.
	body := bytes.NewReader(b[cdata : size-footerLen])
	out, err := io.ReadAll(io.LimitReader(flate.NewReader(body), int64(isize)+1))
	switch {
	case err != nil:
		return dst, 0, fmt.Errorf("%w: block at offset %d: inflate: %v", ErrCorrupt, at, err)
	case len(out) != int(isize):
		return dst, 0, fmt.Errorf("%w: block at offset %d: inflates to %d bytes or more, ISIZE %d", ErrCorrupt, at, len(out), isize)
	case body.Len() != 0:
		return dst, 0, fmt.Errorf("%w: block at offset %d: %d bytes between the deflate data and the footer", ErrCorrupt, at, body.Len())
	}
	start := len(dst)
	dst = append(dst, out...)
	if got := crc32.ChecksumIEEE(dst[start:]); got != wantCRC {
		return dst, 0, fmt.Errorf("%w: block at offset %d: CRC32 %08x, stored %08x", ErrCorrupt, at, got, wantCRC)
	}
	return dst, size, nil
}

// DecodeBlock decodes the BGZF block at the start of b, appending its
// uncompressed data to dst. It returns the extended dst and the block's
// compressed size; CRC32 and ISIZE are checked.
func DecodeBlock(dst, b []byte) ([]byte, int, error) {
	return decodeBlock(dst, b, 0)
}

// DecompressAll decompresses the whole BGZF stream b.
func DecompressAll(b []byte) ([]byte, error) {
	var out []byte
	for at := 0; at < len(b); {
		var n int
		var err error
		if out, n, err = decodeBlock(out, b[at:], int64(at)); err != nil {
			return out, err
		}
		at += n
	}
	return out, nil
}
