// Package arith decodes the CRAM 3.1 adaptive arithmetic coder, CRAM block
// compression method 6 (CRAMcodecs.tex, "Range coding" and the sections that
// follow it). It also exports the range decoder and the adaptive frequency
// model that the fqzcomp quality codec shares.
package arith

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cramfs/cramfs/decode/codec/bzip2"
)

// ErrCorrupt is returned (wrapped with context) for any malformed stream.
var ErrCorrupt = errors.New("arith: corrupt stream")

// MaxSize is the largest decoded length accepted.
const MaxSize = 1 << 30

// Format flag bits of the first stream byte (CRAMcodecs.tex, the flag table
// of ArithDecode).
const (
	flagOrderMask = 0x03
	flagExt       = 0x04
	flagStripe    = 0x08
	flagNoSize    = 0x10
	flagCat       = 0x20
	flagRLE       = 0x40
	flagPack      = 0x80
)

// maxDepth bounds STRIPE recursion; encoders use a single level.
const maxDepth = 8

// Run-length model parameters (CRAMcodecs.tex, "RLE with Order-0 and
// Order-1 Encoding"): 258 run contexts of 4 symbols, 3 meaning "continue".
const (
	runContexts = 258
	runSymbols  = 4
)

// minChunk is the smallest initial output allocation when the decoded size
// is only claimed by the stream; larger outputs grow as symbols are decoded.
const minChunk = 1 << 20

// AppendDecode decodes one adaptive arithmetic coder stream (ArithDecode,
// CRAMcodecs.tex) and appends the decoded bytes to dst, returning the
// extended slice; it allocates only when dst lacks the capacity. rawSize is
// the expected decoded length (the CRAM block header's raw size), or -1 when
// unknown; required when the stream has NOSZ. The result never aliases src.
// On error the returned slice is unspecified.
func AppendDecode(dst, src []byte, rawSize int) ([]byte, error) {
	if rawSize > MaxSize {
		return dst, fmt.Errorf("%w: raw size %d exceeds limit %d", ErrCorrupt, rawSize, MaxSize)
	}
	if rawSize < -1 {
		rawSize = -1
	}
	start := len(dst)
	out, err := appendStream(dst, src, rawSize, 0)
	if err != nil {
		return out, err
	}
	if rawSize >= 0 && len(out)-start != rawSize {
		return out, fmt.Errorf("%w: decoded %d bytes, expected %d", ErrCorrupt, len(out)-start, rawSize)
	}
	return out, nil
}

// appendStream decodes one cdata stream whose expected length is size (-1
// when unknown) and appends it to dst. What it appends is exactly the
// stream's declared length.
func appendStream(dst, src []byte, size int, depth int) ([]byte, error) {
	if len(src) == 0 {
		return dst, fmt.Errorf("%w: empty stream", ErrCorrupt)
	}
	flags := src[0]
	pos := 1
	n := size
	// htscodecs always stores the length with STRIPE, whatever NOSZ says.
	if flags&flagNoSize == 0 || flags&flagStripe != 0 {
		v, k, err := readUint7(src, pos)
		if err != nil {
			return dst, fmt.Errorf("uncompressed length: %w", err)
		}
		pos += k
		if v > MaxSize {
			return dst, fmt.Errorf("%w: uncompressed length %d exceeds limit %d", ErrCorrupt, v, MaxSize)
		}
		if size >= 0 && int(v) != size {
			return dst, fmt.Errorf("%w: stream length %d, expected %d", ErrCorrupt, v, size)
		}
		n = int(v)
	} else if size < 0 {
		return dst, fmt.Errorf("%w: NOSZ stream without a known raw size", ErrCorrupt)
	}

	if flags&flagStripe != 0 {
		if depth >= maxDepth {
			return dst, fmt.Errorf("%w: STRIPE nested deeper than %d", ErrCorrupt, maxDepth)
		}
		return appendStripe(dst, src, pos, n, depth)
	}

	if flags&flagPack == 0 {
		start := len(dst)
		out, err := appendPayload(dst, src[pos:], flags, n)
		if err != nil {
			return out, err
		}
		if len(out)-start != n {
			return out, fmt.Errorf("%w: payload holds %d bytes, expected %d", ErrCorrupt, len(out)-start, n)
		}
		return out, nil
	}

	// PACK meta-data (DecodePackMeta), then the packed payload, unpacked
	// from a scratch buffer.
	pk, pos, err := readPackMeta(src, pos)
	if err != nil {
		return dst, err
	}
	if pk.plen > n {
		return dst, fmt.Errorf("%w: packed length %d exceeds unpacked length %d", ErrCorrupt, pk.plen, n)
	}
	tmp := getScratch()
	defer putScratch(tmp)
	*tmp, err = appendPayload((*tmp)[:0], src[pos:], flags, pk.plen)
	if err != nil {
		return dst, err
	}
	return appendUnpacked(dst, *tmp, n, &pk)
}

// appendPayload appends the decoded payload of a stream with the given
// flags, at most dlen bytes, to dst: stored (CAT), bzip2 (EXT) or entropy
// coded. An empty payload decodes to nothing, as in htscodecs.
func appendPayload(dst, rest []byte, flags byte, dlen int) ([]byte, error) {
	switch {
	case len(rest) == 0:
		return dst, nil
	case flags&flagCat != 0:
		if dlen > len(rest) {
			return dst, fmt.Errorf("%w: CAT needs %d bytes, have %d", ErrCorrupt, dlen, len(rest))
		}
		return append(dst, rest[:dlen]...), nil
	case flags&flagExt != 0:
		return appendExt(dst, rest, dlen)
	default:
		// htscodecs selects order 1 only for order bits == 1.
		return appendEntropy(dst, rest, dlen, flags&flagOrderMask == 1, flags&flagRLE != 0)
	}
}

// scratchPool recycles the buffers that hold PACK payloads and STRIPE
// sub-streams before they are unpacked or interleaved into the output.
var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

// getScratch returns a scratch buffer from scratchPool.
func getScratch() *[]byte { return scratchPool.Get().(*[]byte) }

// putScratch returns b to scratchPool, dropping it when oversized.
func putScratch(b *[]byte) {
	// Keep the pool's buffers to a sane size.
	if cap(*b) > 64<<20 {
		*b = nil
	}
	scratchPool.Put(b)
}

// appendStripe decodes the N interleaved sub-streams of a STRIPE stream
// (DecodeStripe, CRAMcodecs.tex) starting at src[pos] and appends their
// interleaving to dst.
func appendStripe(dst, src []byte, pos, n, depth int) ([]byte, error) {
	if pos >= len(src) {
		return dst, fmt.Errorf("%w: STRIPE stream truncated before N at offset %d", ErrCorrupt, pos)
	}
	ns := int(src[pos])
	pos++
	if ns == 0 {
		return dst, fmt.Errorf("%w: STRIPE with 0 sub-streams", ErrCorrupt)
	}
	var clen [256]int
	total := 0
	for j := 0; j < ns; j++ {
		v, k, err := readUint7(src, pos)
		if err != nil {
			return dst, fmt.Errorf("STRIPE length %d: %w", j, err)
		}
		pos += k
		if v < 1 || int64(v) > int64(len(src)) {
			return dst, fmt.Errorf("%w: STRIPE sub-stream %d length %d out of range", ErrCorrupt, j, v)
		}
		clen[j] = int(v)
		total += int(v)
	}
	if total > len(src)-pos {
		return dst, fmt.Errorf("%w: STRIPE sub-streams need %d bytes, have %d", ErrCorrupt, total, len(src)-pos)
	}
	// The sub-streams are decoded one after another into one scratch
	// buffer; sub-stream j holds ulen(j) bytes from offset off[j].
	tmp := getScratch()
	defer putScratch(tmp)
	subs := (*tmp)[:0]
	var off [257]int
	for j := 0; j < ns; j++ {
		ulen := n / ns
		if n%ns > j {
			ulen++
		}
		var err error
		subs, err = appendStream(subs, src[pos:pos+clen[j]], ulen, depth+1)
		*tmp = subs
		if err != nil {
			return dst, fmt.Errorf("STRIPE sub-stream %d: %w", j, err)
		}
		off[j+1] = len(subs)
		pos += clen[j]
	}
	start := len(dst)
	dst = extend(dst, n)
	out := dst[start:]
	for j := 0; j < ns; j++ {
		o := j
		for _, b := range subs[off[j]:off[j+1]] {
			out[o] = b
			o += ns
		}
	}
	return dst, nil
}

// appendExt decodes the EXT payload: a bzip2 stream (DecodeExt,
// CRAMcodecs.tex) of at most n bytes, appended to dst.
func appendExt(dst, src []byte, n int) ([]byte, error) {
	out, err := bzip2.AppendDecodeUpTo(dst, src, n)
	if err != nil {
		return dst, fmt.Errorf("%w: EXT: %w", ErrCorrupt, err)
	}
	return out, nil
}

// packMeta is the PACK meta-data (DecodePackMeta, CRAMcodecs.tex "rANS Nx16
// Bit Packing").
type packMeta struct {
	nsym int
	p    [16]byte
	plen int
}

// readPackMeta reads the PACK meta-data at src[pos] (DecodePackMeta,
// CRAMcodecs.tex "rANS Nx16 Bit Packing") and returns it with the position
// after it.
func readPackMeta(src []byte, pos int) (packMeta, int, error) {
	var pk packMeta
	if pos >= len(src) {
		return pk, pos, fmt.Errorf("%w: PACK meta-data truncated at offset %d", ErrCorrupt, pos)
	}
	nsym := int(src[pos])
	pos++
	if nsym == 0 || nsym > 16 {
		return pk, pos, fmt.Errorf("%w: PACK with %d symbols (want 1..16)", ErrCorrupt, nsym)
	}
	if len(src)-pos < nsym {
		return pk, pos, fmt.Errorf("%w: PACK map truncated at offset %d", ErrCorrupt, pos)
	}
	pk.nsym = nsym
	copy(pk.p[:], src[pos:pos+nsym])
	pos += nsym
	v, k, err := readUint7(src, pos)
	if err != nil {
		return pk, pos, fmt.Errorf("PACK length: %w", err)
	}
	pos += k
	if v > MaxSize {
		return pk, pos, fmt.Errorf("%w: PACK length %d exceeds limit", ErrCorrupt, v)
	}
	pk.plen = int(v)
	return pk, pos, nil
}

// unpackTableMin is the number of whole packed bytes from which
// appendUnpacked builds a table rather than shifting bits out one by one.
const unpackTableMin = 1024

// appendUnpacked expands packed data into n symbols appended to dst
// (DecodePack, CRAMcodecs.tex "rANS Nx16 Bit Packing"); values are unpacked
// from the low bits up.
func appendUnpacked(dst, data []byte, n int, pk *packMeta) ([]byte, error) {
	var bits int
	switch {
	case pk.nsym <= 1:
		start := len(dst)
		dst = extend(dst, n)
		c := pk.p[0]
		out := dst[start:]
		for i := range out {
			out[i] = c
		}
		return dst, nil
	case pk.nsym <= 2:
		bits = 1
	case pk.nsym <= 4:
		bits = 2
	default:
		bits = 4
	}
	per := 8 / bits
	need := (n + per - 1) / per
	if len(data) < need {
		return dst, fmt.Errorf("%w: PACK needs %d packed bytes for %d symbols, have %d", ErrCorrupt, need, n, len(data))
	}
	start := len(dst)
	dst = extend(dst, n)
	out := dst[start:]
	mask := byte(1<<bits - 1)
	full := n / per
	o := 0
	if full >= unpackTableMin {
		// Expand whole packed bytes through a table of their per output
		// bytes, built for this symbol map.
		var tab [256]uint64
		for v := range tab {
			var w uint64
			for k := per - 1; k >= 0; k-- {
				w = w<<8 | uint64(pk.p[byte(v>>(k*bits))&mask])
			}
			tab[v] = w
		}
		switch per {
		case 8:
			for _, v := range data[:full] {
				binary.LittleEndian.PutUint64(out[o:o+8], tab[v])
				o += 8
			}
		case 4:
			for _, v := range data[:full] {
				binary.LittleEndian.PutUint32(out[o:o+4], uint32(tab[v]))
				o += 4
			}
		default:
			for _, v := range data[:full] {
				binary.LittleEndian.PutUint16(out[o:o+2], uint16(tab[v]))
				o += 2
			}
		}
	} else {
		switch bits {
		case 1:
			for _, v := range data[:full] {
				d := out[o : o+8 : o+8]
				d[0], d[1], d[2], d[3] = pk.p[v&1], pk.p[v>>1&1], pk.p[v>>2&1], pk.p[v>>3&1]
				d[4], d[5], d[6], d[7] = pk.p[v>>4&1], pk.p[v>>5&1], pk.p[v>>6&1], pk.p[v>>7&1]
				o += 8
			}
		case 2:
			for _, v := range data[:full] {
				d := out[o : o+4 : o+4]
				d[0], d[1], d[2], d[3] = pk.p[v&3], pk.p[v>>2&3], pk.p[v>>4&3], pk.p[v>>6&3]
				o += 4
			}
		default:
			for _, v := range data[:full] {
				d := out[o : o+2 : o+2]
				d[0], d[1] = pk.p[v&15], pk.p[v>>4]
				o += 2
			}
		}
	}
	if o < n {
		v := data[full]
		for ; o < n; o++ {
			out[o] = pk.p[v&mask]
			v >>= bits
		}
	}
	return dst, nil
}

// readUint7 reads a big-endian base-128 integer of at most 5 bytes
// (ReadUint7, CRAMcodecs.tex "Other basic functions") at src[pos]. It
// returns the value and the number of bytes read.
func readUint7(src []byte, pos int) (uint32, int, error) {
	var v uint32
	for i := 0; i < 5; i++ {
		if pos+i >= len(src) {
			return 0, 0, fmt.Errorf("%w: uint7 truncated at offset %d", ErrCorrupt, pos+i)
		}
		c := src[pos+i]
		if v >= 1<<25 {
			return 0, 0, fmt.Errorf("%w: uint7 at offset %d overflows 32 bits", ErrCorrupt, pos)
		}
		v = v<<7 | uint32(c&0x7F)
		if c&0x80 == 0 {
			return v, i + 1, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: uint7 at offset %d longer than 5 bytes", ErrCorrupt, pos)
}
