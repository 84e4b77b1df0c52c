// Package bzip2 decodes bzip2 streams: CRAM block compression method 2
// (BZIP2) and the EXT mode of the CRAM 3.1 arithmetic coder. It accepts
// what htslib accepts through libbz2's BZ2_bzBuffToBuffDecompress with the
// destination sized to the expected length: one stream ("BZh", a level
// digit '1' to '9', blocks, the end-of-stream marker and combined CRC),
// whatever bytes follow it being ignored, with every block CRC and the
// combined CRC verified.
//
// Blocks flagged as randomised, an obsolete encoding that bzip2 has not
// written since version 0.9.5, are rejected; libbz2 would still decode
// them.
//
// Why a decoder of its own rather than compress/bzip2: that one allocates
// a 3.6 MB table for every stream and cannot be reset, while this one
// allocates nothing once its pool is warm (0 B/op), and decodes the
// benchmark fixtures (read names, qualities, text) 2.3 to 9.5 times as fast
// (BenchmarkDecode against BenchmarkStdlib; most for small blocks, where
// the allocation dominates).
// That it agrees with compress/bzip2 is what FuzzDecode checks, with more
// time in .ci/fuzz than other targets get; without that gain it should go.
//
// The package is pure: no goroutines, no logging and no global mutable
// state beyond a sync.Pool of working memory (a cache with no observable
// behaviour). It never panics on malformed input. Working memory, about
// 9 bytes per symbol of the largest block decoded, is bounded by the
// level's block size (at most 900,000 symbols) and by what the expected
// output size can need; output never exceeds the expected size.
package bzip2

import (
	"errors"
	"fmt"
	"math/bits"
)

// ErrCorrupt is returned (wrapped, with context) for every malformed,
// truncated or inconsistent stream, and for a stream whose output length
// differs from the expected one.
var ErrCorrupt = errors.New("bzip2: corrupt stream")

// AppendDecode decodes the bzip2 stream src, which must expand to exactly
// rawSize bytes, appends the bytes to dst and returns the extended slice.
// Bytes after the stream's end-of-stream marker are ignored. It allocates
// only when dst lacks the capacity (growing it in steps as output is
// produced, never beyond rawSize bytes) or, once per pool refill, for its
// working memory; the spare capacity of dst must not overlap src. On
// error the returned slice is dst unchanged in length (its spare capacity
// may have been written).
func AppendDecode(dst, src []byte, rawSize int) ([]byte, error) {
	out, err := AppendDecodeUpTo(dst, src, rawSize)
	if err != nil {
		return dst, err
	}
	if got := len(out) - len(dst); got != rawSize {
		return dst, fmt.Errorf("%w: stream holds %d bytes, expected %d", ErrCorrupt, got, rawSize)
	}
	return out, nil
}

// AppendDecodeUpTo is AppendDecode for a stream whose length is only
// bounded: it accepts any output of at most maxSize bytes (the arithmetic
// coder's EXT payload, whose size htscodecs takes from libbz2).
func AppendDecodeUpTo(dst, src []byte, maxSize int) ([]byte, error) {
	if maxSize < 0 {
		return dst, fmt.Errorf("%w: invalid size bound %d", ErrCorrupt, maxSize)
	}
	out, _, err := decode(dst, src, maxSize)
	if err != nil {
		return dst, err
	}
	return out, nil
}

// streamInfo describes a decoded stream, for tests.
type streamInfo struct {
	end       int  // bytes of src up to the end of the end-of-stream marker
	irregular bool // see decoder.irregular
}

// decode decodes the stream at the start of src, appending at most
// maxOut bytes to dst.
func decode(dst, src []byte, maxOut int) ([]byte, streamInfo, error) {
	s := scratchPool.Get().(*scratch)
	defer scratchPool.Put(s)
	return decodeWith(s, dst, src, maxOut)
}

// decodeWith is decode with the working memory s.
func decodeWith(s *scratch, dst, src []byte, maxOut int) ([]byte, streamInfo, error) {
	var info streamInfo
	if len(src) < 4 {
		return dst, info, fmt.Errorf("%w: %d bytes, too short for a stream header", ErrCorrupt, len(src))
	}
	if src[0] != 'B' || src[1] != 'Z' || src[2] != 'h' {
		return dst, info, fmt.Errorf("%w: magic %q, want \"BZh\"", ErrCorrupt, src[:3])
	}
	if src[3] < '1' || src[3] > '9' {
		return dst, info, fmt.Errorf("%w: block size digit %q, want '1' to '9'", ErrCorrupt, src[3])
	}
	d := decoder{
		br:       bitReader{src: src, pos: 4},
		s:        s,
		blockMax: int(src[3]-'0') * 100000,
		start:    len(dst),
	}
	// Keep the limit from overflowing whatever the caller asks.
	limit := len(dst) + min(maxOut, int(^uint(0)>>2))
	out, err := d.stream(dst, limit)
	info.irregular = d.irregular
	if err != nil {
		return dst, info, err
	}
	info.end = (d.br.bitPos() + 7) / 8
	return out, info, nil
}

// stream decodes the blocks and end-of-stream marker that follow the
// stream header, appending their bytes to dst, at most up to limit bytes.
func (d *decoder) stream(dst []byte, limit int) ([]byte, error) {
	combined := uint32(0)
	for {
		magic := d.br.bitsN(48)
		switch magic {
		case blockMagic:
			want := uint32(d.br.bitsN(32))
			pre, err := d.readBlock(limit - len(dst))
			if err != nil {
				return nil, err
			}
			k := len(dst)
			if dst, err = d.unRLE1(dst, pre, limit); err != nil {
				return nil, err
			}
			crc := blockCRC(dst[k:])
			if crc != want {
				return nil, fmt.Errorf("%w: block CRC 0x%08x, stored 0x%08x (block ending at bit %d)", ErrCorrupt, crc, want, d.br.bitPos())
			}
			combined = bits.RotateLeft32(combined, 1) ^ crc
		case eosMagic:
			want := uint32(d.br.bitsN(32))
			if d.br.overrun() {
				return nil, d.truncated()
			}
			if combined != want {
				return nil, fmt.Errorf("%w: stream CRC 0x%08x, stored 0x%08x", ErrCorrupt, combined, want)
			}
			return dst, nil
		default:
			if d.br.overrun() {
				return nil, d.truncated()
			}
			return nil, fmt.Errorf("%w: block magic 0x%012x at bit %d, want 0x%012x or end of stream 0x%012x", ErrCorrupt, magic, d.br.bitPos()-48, uint64(blockMagic), uint64(eosMagic))
		}
	}
}
