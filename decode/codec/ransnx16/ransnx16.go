// Package ransnx16 decodes rANS Nx16 streams (CRAM block compression method
// 5, "rANSNx16"), as specified in CRAMcodecs section 3 "rANS Nx16": order-0
// and order-1 entropy coding with 4 or 32 interleaved states, and the STRIPE,
// NOSZ, CAT, RLE and PACK transforms.
//
// The package is pure: no goroutines, no logging and no global mutable
// state. It never panics on malformed input and bounds every allocation by
// the caller's expected size, MaxSize, or the bytes actually present.
package ransnx16

import (
	"errors"
	"fmt"
)

// MaxSize is the largest decoded length accepted (CRAMcodecs section 3.6,
// the uint7 uncompressed length), whatever the stream declares.
const MaxSize = 1 << 30

// ErrCorrupt is returned (wrapped, with context) for every malformed,
// truncated or inconsistent stream.
var ErrCorrupt = errors.New("ransnx16: corrupt stream")

// Format flag bits of the first byte (CRAMcodecs section 3.6).
const (
	flagOrder  = 0x01
	flagX32    = 0x04
	flagStripe = 0x08
	flagNoSize = 0x10
	flagCat    = 0x20
	flagRLE    = 0x40
	flagPack   = 0x80
)

// maxStripeDepth bounds STRIPE recursion; real streams nest at most once.
const maxStripeDepth = 4

// Decode decodes one rANS Nx16 stream (CRAM block method 5, CRAMcodecs
// section 3.6). rawSize is the expected decoded length (from the CRAM block
// header), or -1 when unknown; the stored length must agree with it when
// given and never exceeds MaxSize. A stream with the NOSZ flag carries no
// length, so rawSize is then required.
func Decode(src []byte, rawSize int) ([]byte, error) {
	if rawSize > MaxSize {
		return nil, fmt.Errorf("%w: expected size %d exceeds maximum %d", ErrCorrupt, rawSize, MaxSize)
	}
	if rawSize < -1 {
		return nil, fmt.Errorf("%w: invalid expected size %d", ErrCorrupt, rawSize)
	}
	return decodeStream(src, rawSize, 0)
}

// decodeStream implements RansDecodeNx16 (CRAMcodecs section 3.6) for one
// stream occupying src. want is the required output length or -1.
func decodeStream(src []byte, want int, depth int) ([]byte, error) {
	r := reader{b: src}
	flags, err := r.u8()
	if err != nil {
		return nil, fmt.Errorf("%w: missing format byte", ErrCorrupt)
	}

	if flags&flagStripe != 0 {
		// htscodecs always stores the total length before a stripe
		// table, whatever NOSZ says.
		return decodeStripe(&r, want, depth)
	}

	var n int
	if flags&flagNoSize != 0 {
		if want < 0 {
			return nil, fmt.Errorf("%w: NOSZ stream (flags %#x) needs the decoded size from the caller", ErrCorrupt, flags)
		}
		n = want
	} else {
		v, err := r.uint7()
		if err != nil {
			return nil, err
		}
		if v > MaxSize {
			return nil, fmt.Errorf("%w: stored size %d exceeds maximum %d", ErrCorrupt, v, MaxSize)
		}
		n = int(v)
		if want >= 0 && n != want {
			return nil, fmt.Errorf("%w: stored size %d, expected %d", ErrCorrupt, n, want)
		}
	}
	nstates := 4
	if flags&flagX32 != 0 {
		nstates = 32
	}

	// Metadata: PACK then RLE (CRAMcodecs section 3.6).
	dataLen := n
	var pk packMeta
	if flags&flagPack != 0 {
		if pk, err = readPackMeta(&r, n); err != nil {
			return nil, err
		}
		dataLen = pk.packedLen
	}
	var rl rleMeta
	if flags&flagRLE != 0 {
		if rl, err = readRLEMeta(&r, dataLen, nstates); err != nil {
			return nil, err
		}
		dataLen = rl.litLen
	}

	// Entropy-coded (or raw) data.
	var data []byte
	switch {
	case r.remaining() == 0:
		// htscodecs treats an empty payload as empty data.
		data = nil
	case flags&flagCat != 0:
		if dataLen > r.remaining() {
			return nil, fmt.Errorf("%w: CAT data needs %d bytes, %d left at offset %d", ErrCorrupt, dataLen, r.remaining(), r.p)
		}
		data = make([]byte, dataLen)
		copy(data, r.b[r.p:])
	case flags&flagOrder != 0:
		data, err = decodeO1(r.b[r.p:], dataLen, nstates)
	default:
		data, err = decodeO0(r.b[r.p:], dataLen, nstates)
	}
	if err != nil {
		return nil, err
	}

	if flags&flagRLE != 0 {
		lim := n
		if data, err = unRLE(data, &rl, lim); err != nil {
			return nil, err
		}
	}
	if flags&flagPack != 0 {
		if data, err = unpack(data, &pk, n); err != nil {
			return nil, err
		}
	}
	if len(data) != n {
		return nil, fmt.Errorf("%w: decoded %d bytes, stream declares %d", ErrCorrupt, len(data), n)
	}
	return data, nil
}

// decodeStripe implements RansDecodeStripe (CRAMcodecs section 3.5): N
// sub-streams whose bytes interleave as out[i*N+j] = T_j[i].
func decodeStripe(r *reader, want int, depth int) ([]byte, error) {
	if depth >= maxStripeDepth {
		return nil, fmt.Errorf("%w: STRIPE nested deeper than %d", ErrCorrupt, maxStripeDepth)
	}
	v, err := r.uint7()
	if err != nil {
		return nil, err
	}
	if v > MaxSize {
		return nil, fmt.Errorf("%w: stripe size %d exceeds maximum %d", ErrCorrupt, v, MaxSize)
	}
	n := int(v)
	if want >= 0 && n != want {
		return nil, fmt.Errorf("%w: stripe size %d, expected %d", ErrCorrupt, n, want)
	}
	ns, err := r.u8()
	if err != nil {
		return nil, err
	}
	N := int(ns)
	if N == 0 {
		return nil, fmt.Errorf("%w: stripe with zero sub-streams at offset %d", ErrCorrupt, r.p-1)
	}
	var clen [256]int
	total := 0
	for j := 0; j < N; j++ {
		c, err := r.uint7()
		if err != nil {
			return nil, err
		}
		if c == 0 || int64(c) > int64(r.remaining()) {
			return nil, fmt.Errorf("%w: stripe %d length %d with %d bytes left", ErrCorrupt, j, c, r.remaining())
		}
		clen[j] = int(c)
		total += int(c)
	}
	if total > r.remaining() {
		return nil, fmt.Errorf("%w: stripes need %d bytes, %d left at offset %d", ErrCorrupt, total, r.remaining(), r.p)
	}
	out := make([]byte, n)
	p := r.p
	for j := 0; j < N; j++ {
		ulen := n / N
		if n%N > j {
			ulen++
		}
		sub, err := decodeStream(r.b[p:p+clen[j]], ulen, depth+1)
		if err != nil {
			return nil, fmt.Errorf("stripe %d of %d: %w", j, N, err)
		}
		// len(sub) == ulen was checked by decodeStream.
		for i, b := range sub {
			out[i*N+j] = b
		}
		p += clen[j]
	}
	return out, nil
}

// reader is a bounds-checked cursor over a byte slice.
type reader struct {
	b []byte
	p int
}

func (r *reader) remaining() int { return len(r.b) - r.p }

func (r *reader) u8() (byte, error) {
	if r.p >= len(r.b) {
		return 0, fmt.Errorf("%w: truncated at offset %d", ErrCorrupt, r.p)
	}
	c := r.b[r.p]
	r.p++
	return c, nil
}

// uint7 reads a big-endian 7-bit-group varint (CRAMcodecs section 2.3,
// "uint7"); at most 5 bytes, value at most 32 bits.
func (r *reader) uint7() (uint32, error) {
	start := r.p
	var v uint64
	for k := 0; k < 5; k++ {
		if r.p >= len(r.b) {
			return 0, fmt.Errorf("%w: truncated uint7 at offset %d", ErrCorrupt, start)
		}
		c := r.b[r.p]
		r.p++
		v = v<<7 | uint64(c&0x7f)
		if c&0x80 == 0 {
			if v > 0xffffffff {
				return 0, fmt.Errorf("%w: uint7 at offset %d overflows 32 bits", ErrCorrupt, start)
			}
			return uint32(v), nil
		}
	}
	return 0, fmt.Errorf("%w: uint7 at offset %d longer than 5 bytes", ErrCorrupt, start)
}
