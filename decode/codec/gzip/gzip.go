// Package gzip decodes gzip data held whole in memory: CRAM block
// compression method 1 (GZIP). It accepts what cramfs accepted before it,
// klauspost/compress's gzip.Reader in its default multistream mode read
// to the end: one or more gzip members (RFC 1952 §2.2), each a header with
// any of the optional FEXTRA, FNAME, FCOMMENT and FHCRC fields, DEFLATE
// data (RFC 1951) and a trailer whose CRC-32 and ISIZE are checked, with
// nothing after the last member, not even zero padding.
//
// Like that reader it checks a header CRC (FHCRC) when present, rejects
// reserved flag bits (compress/gzip ignores them), and limits FNAME and
// FCOMMENT to 511 bytes each. Like it, it accepts an incomplete Huffman
// code only when the code is empty or a single one-bit code (zlib also
// rejects the latter as a code length code, but no block whose code
// lengths are all the same one value can be valid). Each member's matches
// reach back only into that member's output.
//
// Decoding is specialised for a whole input in memory: a 64-bit bit
// buffer refilled a word at a time, a fast loop that runs without
// end-of-input or end-of-output tests while a word of input and 266 bytes
// of output room remain, and a careful loop for the rest; table-driven Huffman decoding (11-bit main
// table with subtables for literals and lengths, 8-bit for distances),
// whose entries pack the bits to consume with the extra bits, and hold two
// literals where both codes fit the main table; matches copied a word at
// a time.
//
// Why an inflater of its own rather than klauspost/compress or
// compress/gzip: a CRAM block is whole in memory with its decoded size
// known, so it inflates straight into the block buffer, about 2.2 times as
// fast as klauspost's gzip.Reader on the real blocks of the benchmark files
// (BenchmarkDecodeReal against BenchmarkKlauspostReal), where gzip takes
// about 5% of the CPU of a convert. That it accepts and outputs what both
// readers do is what FuzzDecode checks, with more time in .ci/fuzz than
// other targets get; without that gain it should go.
//
// The package is pure: no goroutines, no logging and no global mutable
// state beyond a sync.Pool of working memory (about 30 KB of Huffman
// tables, a cache with no observable behaviour). It never panics on
// malformed input, and output never exceeds the expected size.
package gzip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
)

// ErrCorrupt is returned (wrapped, with context) for every malformed,
// truncated or inconsistent stream, and for a stream whose output length
// differs from the expected one.
var ErrCorrupt = errors.New("gzip: corrupt stream")

// preallocCap caps the output buffer allocated up front from the expected
// size; beyond it the buffer grows with what the stream produces.
const preallocCap = 64 << 20

// maxRatio bounds DEFLATE's expansion: a 258-byte match can take as
// little as 2 bits (RFC 1951 §3.2.5), so no stream of n bytes decodes to
// more than 1032n bytes.
const maxRatio = 1032

var statePool = sync.Pool{New: func() any { return new(state) }}

// AppendDecode decodes the gzip data src (RFC 1952), which must expand to
// exactly rawSize bytes, or to any length if rawSize is -1, appends the
// bytes to dst and returns the extended slice. It decodes straight into
// dst's spare capacity when that holds rawSize bytes; otherwise it
// allocates once, at most 64 MiB and no more than src can expand to,
// growing the buffer as output is produced beyond that. It never writes
// past rawSize bytes after len(dst), and stops with an error as soon as
// the output would exceed them. The spare capacity of dst must not
// overlap src. On error the returned slice is dst unchanged in length
// (its spare capacity may have been written).
func AppendDecode(dst, src []byte, rawSize int) ([]byte, error) {
	if rawSize < -1 {
		return dst, fmt.Errorf("%w: invalid expected size %d", ErrCorrupt, rawSize)
	}
	base := len(dst)
	var out []byte
	limit := base + int(^uint(0)>>2)
	if rawSize >= 0 {
		limit = base + rawSize
		if cap(dst) >= limit {
			out = dst[:limit]
		} else {
			out = make([]byte, base+min(rawSize, preallocCap, maxRatio*len(src)))
			copy(out, dst)
		}
	} else if cap(dst) > base {
		out = dst[:cap(dst)]
	} else {
		out = make([]byte, base+min(preallocCap, 4*len(src)+4096))
		copy(out, dst)
	}

	st := statePool.Get().(*state)
	defer statePool.Put(st)
	z := inflater{src: src, out: out, op: base, limit: limit, base: base, st: st}
	for pos, member := 0, 0; ; member++ {
		p, err := readHeader(src, pos)
		if err != nil {
			return dst, fmt.Errorf("member %d: %w", member, err)
		}
		z.ip, z.start = p, z.op
		if err := z.inflate(); err != nil {
			return dst, fmt.Errorf("member %d: %w", member, err)
		}
		p = z.ip
		if len(src)-p < 8 {
			return dst, fmt.Errorf("%w: member %d: trailer truncated: %d bytes at input byte %d, want 8", ErrCorrupt, member, len(src)-p, p)
		}
		body := z.out[z.start:z.op]
		wantCRC := binary.LittleEndian.Uint32(src[p:])
		wantSize := binary.LittleEndian.Uint32(src[p+4:])
		if crc := crc32.ChecksumIEEE(body); crc != wantCRC {
			return dst, fmt.Errorf("%w: member %d: CRC-32 %08x, trailer at input byte %d says %08x", ErrCorrupt, member, crc, p, wantCRC)
		}
		if uint32(len(body)) != wantSize {
			return dst, fmt.Errorf("%w: member %d: %d bytes (mod 2^32), trailer at input byte %d says %d", ErrCorrupt, member, uint32(len(body)), p+4, wantSize)
		}
		pos = p + 8
		if pos == len(src) {
			break
		}
	}
	if rawSize >= 0 && z.op != limit {
		return dst, fmt.Errorf("%w: stream holds %d bytes, expected %d", ErrCorrupt, z.op-base, rawSize)
	}
	return z.out[:z.op], nil
}

// Header flags (RFC 1952 §2.3.1).
const (
	flagHCRC     = 1 << 1
	flagExtra    = 1 << 2
	flagName     = 1 << 3
	flagComment  = 1 << 4
	flagReserved = 0xe0
)

// maxString is the most bytes, terminator included, that klauspost's and
// the standard library's readers take for FNAME or FCOMMENT.
const maxString = 512

// readHeader checks the member header at src[pos:] (RFC 1952 §2.3) and
// returns the offset of the DEFLATE data after it.
func readHeader(src []byte, pos int) (int, error) {
	start := pos
	if len(src)-pos < 10 {
		return 0, fmt.Errorf("%w: header truncated: %d bytes at input byte %d, want at least 10", ErrCorrupt, len(src)-pos, pos)
	}
	if src[pos] != 0x1f || src[pos+1] != 0x8b {
		return 0, fmt.Errorf("%w: magic %02x %02x at input byte %d, want 1f 8b", ErrCorrupt, src[pos], src[pos+1], pos)
	}
	if src[pos+2] != 8 {
		return 0, fmt.Errorf("%w: compression method %d at input byte %d, want 8 (deflate)", ErrCorrupt, src[pos+2], pos+2)
	}
	flg := src[pos+3]
	pos += 10
	if flg&flagExtra != 0 {
		if len(src)-pos < 2 {
			return 0, fmt.Errorf("%w: FEXTRA length truncated at input byte %d", ErrCorrupt, pos)
		}
		n := int(binary.LittleEndian.Uint16(src[pos:]))
		pos += 2
		if len(src)-pos < n {
			return 0, fmt.Errorf("%w: FEXTRA of %d bytes truncated at input byte %d", ErrCorrupt, n, pos)
		}
		pos += n
	}
	for _, f := range [...]struct {
		flag byte
		name string
	}{{flagName, "FNAME"}, {flagComment, "FCOMMENT"}} {
		if flg&f.flag == 0 {
			continue
		}
		rest := src[pos:]
		if len(rest) > maxString {
			rest = rest[:maxString]
		}
		i := 0
		for i < len(rest) && rest[i] != 0 {
			i++
		}
		if i == len(rest) {
			if len(rest) == maxString {
				return 0, fmt.Errorf("%w: %s at input byte %d longer than %d bytes", ErrCorrupt, f.name, pos, maxString-1)
			}
			return 0, fmt.Errorf("%w: %s truncated at input byte %d", ErrCorrupt, f.name, pos)
		}
		pos += i + 1
	}
	if flg&flagHCRC != 0 {
		if len(src)-pos < 2 {
			return 0, fmt.Errorf("%w: FHCRC truncated at input byte %d", ErrCorrupt, pos)
		}
		want := binary.LittleEndian.Uint16(src[pos:])
		if got := uint16(crc32.ChecksumIEEE(src[start:pos])); got != want {
			return 0, fmt.Errorf("%w: header CRC %04x, FHCRC at input byte %d says %04x", ErrCorrupt, got, pos, want)
		}
		pos += 2
	}
	if flg&flagReserved != 0 {
		return 0, fmt.Errorf("%w: reserved header flags %#02x at input byte %d", ErrCorrupt, flg&flagReserved, start+3)
	}
	return pos, nil
}
