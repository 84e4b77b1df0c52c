// Package ransnx16 decodes rANS Nx16 streams (CRAM block compression method
// 5, "rANSNx16"), as specified in CRAMcodecs section 3 "rANS Nx16": order-0
// and order-1 entropy coding with 4 or 32 interleaved states, and the STRIPE,
// NOSZ, CAT, RLE and PACK transforms.
//
// The package is pure: no goroutines, no logging and no global mutable
// state beyond a sync.Pool of decode tables and transform buffers (a cache
// with no observable behaviour). It never panics on malformed input and
// bounds every allocation by the caller's expected size, MaxSize, or the
// bytes actually present.
package ransnx16

import (
	"errors"
	"fmt"
	"sync"
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

// scratch is the per-call working memory of a decode: decode tables and
// the buffers between the entropy coder and the RLE and PACK transforms.
// Scratches are recycled through scratchPool; every user overwrites what
// it reads (see o0Table and o1Tables), so no state leaks between calls.
type scratch struct {
	o0      o0Table
	o1      *o1Tables // allocated on first order-1 use
	lit     []byte    // entropy-coded data before RLE or PACK
	mid     []byte    // RLE output before PACK
	rleMeta []byte    // decoded RLE metadata
	freqTab []byte    // decoded order-1 frequency table
	stripe  []byte    // one STRIPE sub-stream
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// scratchRef takes a scratch from scratchPool on first use, so that a
// stream that needs no working memory (CAT with stored RLE metadata, the
// common tiny stream) skips the pool; release returns it.
type scratchRef struct{ s *scratch }

func (p *scratchRef) get() *scratch {
	if p.s == nil {
		p.s = scratchPool.Get().(*scratch)
	}
	return p.s
}

func (p *scratchRef) release() {
	if p.s != nil {
		scratchPool.Put(p.s)
		p.s = nil
	}
}

// sized returns *b resized to n bytes, reallocating only when its capacity
// is short. The contents are unspecified.
func sized(b *[]byte, n int) []byte {
	if cap(*b) < n {
		*b = make([]byte, n)
	}
	return (*b)[:n]
}

// grow returns dst extended by n bytes, reallocating (and copying dst)
// only when its capacity is short.
func grow(dst []byte, n int) []byte {
	if cap(dst)-len(dst) >= n {
		return dst[:len(dst)+n]
	}
	b := make([]byte, len(dst)+n)
	copy(b, dst)
	return b
}

// AppendDecode decodes one rANS Nx16 stream (CRAM block method 5,
// CRAMcodecs section 3.6) and appends the decoded bytes to dst, returning
// the extended slice. It allocates only when dst lacks the capacity (or,
// once per pool refill, for its working memory); the spare capacity of
// dst must not overlap src. rawSize is the expected decoded length (from
// the CRAM block header), or -1 when unknown; the stored length must agree
// with it when given and never exceeds MaxSize. A stream with the NOSZ
// flag carries no length, so rawSize is then required. On error the
// returned slice is dst unchanged in length (its spare capacity may have
// been written).
func AppendDecode(dst, src []byte, rawSize int) ([]byte, error) {
	if rawSize > MaxSize {
		return dst, fmt.Errorf("%w: expected size %d exceeds maximum %d", ErrCorrupt, rawSize, MaxSize)
	}
	if rawSize < -1 {
		return dst, fmt.Errorf("%w: invalid expected size %d", ErrCorrupt, rawSize)
	}
	var sr scratchRef
	out, err := decodeStream(dst, src, rawSize, 0, &sr)
	sr.release()
	if err != nil {
		return dst, err
	}
	return out, nil
}

// decodeStream implements RansDecodeNx16 (CRAMcodecs section 3.6) for one
// stream occupying src, appending the output to dst. want is the required
// output length or -1. sr provides the working memory.
func decodeStream(dst, src []byte, want int, depth int, sr *scratchRef) ([]byte, error) {
	r := reader{b: src}
	flags, err := r.u8()
	if err != nil {
		return nil, fmt.Errorf("%w: missing format byte", ErrCorrupt)
	}

	if flags&flagStripe != 0 {
		// htscodecs always stores the total length before a stripe
		// table, whatever NOSZ says.
		return decodeStripe(dst, &r, want, depth, sr)
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
	rle := flags&flagRLE != 0
	var rl rleMeta
	if rle {
		if err = readRLEMeta(&r, dataLen, nstates, sr, &rl); err != nil {
			return nil, err
		}
		dataLen = rl.litLen
	}
	// With more than 16 symbols PACK stores the data as is.
	pack := flags&flagPack != 0 && pk.perByte != 1
	empty := r.remaining() == 0
	if empty {
		// htscodecs treats an empty payload as empty data.
		dataLen = 0
	}

	base := len(dst)
	dst = grow(dst, n)
	out := dst[base:]

	// The entropy coder writes straight into out when no transform
	// follows, else into scratch (or, for CAT, the input is used as is).
	var data []byte
	if !rle && !pack {
		if dataLen != n {
			return nil, fmt.Errorf("%w: decoded %d bytes, stream declares %d", ErrCorrupt, dataLen, n)
		}
		data = out
	} else if flags&flagCat == 0 {
		data = sized(&sr.get().lit, dataLen)
	}
	switch {
	case empty:
	case flags&flagCat != 0:
		if dataLen > r.remaining() {
			return nil, fmt.Errorf("%w: CAT data needs %d bytes, %d left at offset %d", ErrCorrupt, dataLen, r.remaining(), r.p)
		}
		if data != nil {
			copy(data, r.b[r.p:])
		} else {
			data = r.b[r.p : r.p+dataLen]
		}
	case flags&flagOrder != 0:
		err = decodeO1(data, r.b[r.p:], nstates, sr.get())
	default:
		err = decodeO0(data, r.b[r.p:], nstates, &sr.get().o0)
	}
	if err != nil {
		return nil, err
	}

	if rle {
		target := out
		if pack {
			target = sized(&sr.get().mid, n)
		}
		j, err := unRLE(target, data, &rl)
		if err != nil {
			return nil, err
		}
		if !pack && j != n {
			return nil, fmt.Errorf("%w: decoded %d bytes, stream declares %d", ErrCorrupt, j, n)
		}
		data = target[:j]
	}
	if pack {
		// RLE output with long runs on average (as from few literals)
		// repays unpack's run detection; quality data, whose runs are
		// short, does not.
		runs := rle && len(data) >= 16*rl.litLen
		if err := unpack(out, data, &pk, runs); err != nil {
			return nil, err
		}
	}
	return dst, nil
}

// decodeStripe implements RansDecodeStripe (CRAMcodecs section 3.5): N
// sub-streams whose bytes interleave as out[i*N+j] = T_j[i], appended to
// dst.
func decodeStripe(dst []byte, r *reader, want int, depth int, sr *scratchRef) ([]byte, error) {
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
	base := len(dst)
	dst = grow(dst, n)
	out := dst[base:]
	// The sub-streams decode with their own working memory into
	// s.stripe, one at a time, and are scattered into out.
	s := sr.get()
	var sub scratchRef
	defer sub.release()
	p := r.p
	for j := 0; j < N; j++ {
		ulen := n / N
		if n%N > j {
			ulen++
		}
		t, err := decodeStream(s.stripe[:0], r.b[p:p+clen[j]], ulen, depth+1, &sub)
		if err != nil {
			return nil, fmt.Errorf("stripe %d of %d: %w", j, N, err)
		}
		s.stripe = t[:0]
		// len(t) == ulen was checked by decodeStream, and
		// (ulen-1)*N+j < n.
		if len(t) > 0 {
			o := out[j:]
			o = o[:(len(t)-1)*N+1]
			for i, b := range t {
				o[i*N] = b
			}
		}
		p += clen[j]
	}
	return dst, nil
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
