// Package arith decodes the CRAM 3.1 adaptive arithmetic coder, CRAM block
// compression method 6 (CRAMcodecs.tex, "Range coding" and the sections that
// follow it). It also exports the range decoder and the adaptive frequency
// model that the fqzcomp quality codec shares.
package arith

import (
	"bytes"
	"compress/bzip2"
	"errors"
	"fmt"
	"io"
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

// Decode decodes one adaptive arithmetic coder stream (ArithDecode,
// CRAMcodecs.tex). rawSize is the expected decoded length (the CRAM block
// header's raw size), or -1 when unknown; required when the stream has NOSZ.
func Decode(src []byte, rawSize int) ([]byte, error) {
	if rawSize > MaxSize {
		return nil, fmt.Errorf("%w: raw size %d exceeds limit %d", ErrCorrupt, rawSize, MaxSize)
	}
	if rawSize < -1 {
		rawSize = -1
	}
	out, err := decodeStream(src, rawSize, 0)
	if err != nil {
		return nil, err
	}
	if rawSize >= 0 && len(out) != rawSize {
		return nil, fmt.Errorf("%w: decoded %d bytes, expected %d", ErrCorrupt, len(out), rawSize)
	}
	return out, nil
}

// decodeStream decodes one cdata stream whose expected length is size (-1
// when unknown). The result is exactly the stream's declared length.
func decodeStream(src []byte, size int, depth int) ([]byte, error) {
	if len(src) == 0 {
		return nil, fmt.Errorf("%w: empty stream", ErrCorrupt)
	}
	flags := src[0]
	pos := 1
	n := size
	// htscodecs always stores the length with STRIPE, whatever NOSZ says.
	if flags&flagNoSize == 0 || flags&flagStripe != 0 {
		v, k, err := readUint7(src, pos)
		if err != nil {
			return nil, fmt.Errorf("uncompressed length: %w", err)
		}
		pos += k
		if v > MaxSize {
			return nil, fmt.Errorf("%w: uncompressed length %d exceeds limit %d", ErrCorrupt, v, MaxSize)
		}
		if size >= 0 && int(v) != size {
			return nil, fmt.Errorf("%w: stream length %d, expected %d", ErrCorrupt, v, size)
		}
		n = int(v)
	} else if size < 0 {
		return nil, fmt.Errorf("%w: NOSZ stream without a known raw size", ErrCorrupt)
	}

	if flags&flagStripe != 0 {
		if depth >= maxDepth {
			return nil, fmt.Errorf("%w: STRIPE nested deeper than %d", ErrCorrupt, maxDepth)
		}
		return decodeStripe(src, pos, n, depth)
	}

	// PACK meta-data (DecodePackMeta).
	var pk packMeta
	dlen := n
	if flags&flagPack != 0 {
		var err error
		pk, pos, err = readPackMeta(src, pos)
		if err != nil {
			return nil, err
		}
		if pk.plen > n {
			return nil, fmt.Errorf("%w: packed length %d exceeds unpacked length %d", ErrCorrupt, pk.plen, n)
		}
		dlen = pk.plen
	}

	rest := src[pos:]
	var data []byte
	switch {
	case len(rest) == 0:
		// As htscodecs: no payload means no entropy-coded bytes; only a
		// constant PACK or an empty stream can then be valid.
		data = nil
	case flags&flagCat != 0:
		if dlen > len(rest) {
			return nil, fmt.Errorf("%w: CAT needs %d bytes, have %d", ErrCorrupt, dlen, len(rest))
		}
		data = bytes.Clone(rest[:dlen])
	case flags&flagExt != 0:
		var err error
		if data, err = decodeExt(rest, dlen); err != nil {
			return nil, err
		}
	default:
		// htscodecs selects order 1 only for order bits == 1.
		order1 := flags&flagOrderMask == 1
		var err error
		if data, err = decodeEntropy(rest, dlen, order1, flags&flagRLE != 0); err != nil {
			return nil, err
		}
	}

	if flags&flagPack != 0 {
		return unpack(data, n, &pk)
	}
	if len(data) != n {
		return nil, fmt.Errorf("%w: payload holds %d bytes, expected %d", ErrCorrupt, len(data), n)
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// decodeStripe decodes the N interleaved sub-streams of a STRIPE stream
// (DecodeStripe, CRAMcodecs.tex) starting at src[pos] and interleaves them.
func decodeStripe(src []byte, pos, n, depth int) ([]byte, error) {
	if pos >= len(src) {
		return nil, fmt.Errorf("%w: STRIPE stream truncated before N at offset %d", ErrCorrupt, pos)
	}
	ns := int(src[pos])
	pos++
	if ns == 0 {
		return nil, fmt.Errorf("%w: STRIPE with 0 sub-streams", ErrCorrupt)
	}
	var clen [256]int
	total := 0
	for j := 0; j < ns; j++ {
		v, k, err := readUint7(src, pos)
		if err != nil {
			return nil, fmt.Errorf("STRIPE length %d: %w", j, err)
		}
		pos += k
		if v < 1 || int64(v) > int64(len(src)) {
			return nil, fmt.Errorf("%w: STRIPE sub-stream %d length %d out of range", ErrCorrupt, j, v)
		}
		clen[j] = int(v)
		total += int(v)
	}
	if total > len(src)-pos {
		return nil, fmt.Errorf("%w: STRIPE sub-streams need %d bytes, have %d", ErrCorrupt, total, len(src)-pos)
	}
	var subs [256][]byte
	for j := 0; j < ns; j++ {
		ulen := n / ns
		if n%ns > j {
			ulen++
		}
		sub, err := decodeStream(src[pos:pos+clen[j]], ulen, depth+1)
		if err != nil {
			return nil, fmt.Errorf("STRIPE sub-stream %d: %w", j, err)
		}
		subs[j] = sub
		pos += clen[j]
	}
	out := make([]byte, n)
	for j := 0; j < ns; j++ {
		o := j
		for _, b := range subs[j] {
			out[o] = b
			o += ns
		}
	}
	return out, nil
}

// decodeExt decodes the EXT payload: a bzip2 stream (DecodeExt,
// CRAMcodecs.tex) of at most n bytes.
func decodeExt(src []byte, n int) ([]byte, error) {
	if len(src) < 3 || src[0] != 'B' || src[1] != 'Z' || src[2] != 'h' {
		return nil, fmt.Errorf("%w: EXT payload lacks the bzip2 magic", ErrCorrupt)
	}
	r := io.LimitReader(bzip2.NewReader(bytes.NewReader(src)), int64(n)+1)
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%w: EXT bzip2: %v", ErrCorrupt, err)
	}
	if len(data) > n {
		return nil, fmt.Errorf("%w: EXT bzip2 output exceeds %d bytes", ErrCorrupt, n)
	}
	return data, nil
}

// packMeta is the PACK meta-data (DecodePackMeta, CRAMcodecs.tex "rANS Nx16
// Bit Packing").
type packMeta struct {
	nsym int
	p    [16]byte
	plen int
}

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

// unpack expands packed data into n symbols (DecodePack, CRAMcodecs.tex
// "rANS Nx16 Bit Packing"); values are unpacked from the low bits up.
func unpack(data []byte, n int, pk *packMeta) ([]byte, error) {
	var bits int
	switch {
	case pk.nsym <= 1:
		out := make([]byte, n)
		if c := pk.p[0]; c != 0 {
			for i := range out {
				out[i] = c
			}
		}
		return out, nil
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
		return nil, fmt.Errorf("%w: PACK needs %d packed bytes for %d symbols, have %d", ErrCorrupt, need, n, len(data))
	}
	out := make([]byte, n)
	mask := byte(1<<bits - 1)
	full := n / per
	o := 0
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
	if o < n {
		v := data[full]
		for ; o < n; o++ {
			out[o] = pk.p[v&mask]
			v >>= bits
		}
	}
	return out, nil
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
