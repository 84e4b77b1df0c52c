// Package rans4x8 decodes rANS 4x8 streams (CRAM block compression method
// 4, "rANS"), as specified in CRAMcodecs section 2 "rANS 4x8": order-0 and
// order-1 static-frequency rANS with 4 interleaved states, 12-bit
// frequencies and byte-wise renormalisation.
//
// The package is pure: no goroutines, no logging and no global mutable
// state beyond a sync.Pool of decode tables (a cache with no observable
// behaviour). It never panics on malformed input and bounds every
// allocation by the caller's expected size or MaxSize.
package rans4x8

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// MaxSize is the largest decoded length accepted, whatever the stream
// declares (CRAMcodecs section 2.4, n_out).
const MaxSize = 1 << 30

// ErrCorrupt is returned (wrapped, with context) for every malformed,
// truncated or inconsistent stream.
var ErrCorrupt = errors.New("rans4x8: corrupt stream")

const (
	headerLen = 9       // order byte, compressed size, uncompressed size
	ransL     = 1 << 23 // lower bound of a normalised state (section 2.3)
	tfShift   = 12
	totFreq   = 1 << tfShift
	tfMask    = totFreq - 1
)

// AppendDecode decodes one rANS 4x8 stream (CRAM block method 4,
// CRAMcodecs section 2.4) and appends the decoded bytes to dst, returning
// the extended slice. It allocates only when dst lacks the capacity; the
// spare capacity of dst must not overlap src. rawSize is the expected
// decoded length (from the CRAM block header), or -1 when unknown; the
// stored length must agree with it when given and never exceeds MaxSize.
// On error the returned slice is dst unchanged in length (its spare
// capacity may have been written).
func AppendDecode(dst, src []byte, rawSize int) ([]byte, error) {
	return appendDecode(dst, src, rawSize, flatMinOut)
}

// appendDecode is AppendDecode with the output length from which order-1
// streams may use the flat table as a parameter, so that tests can run
// both order-1 loops on any stream.
func appendDecode(dst, src []byte, rawSize, flatMin int) ([]byte, error) {
	if rawSize < -1 || rawSize > MaxSize {
		return dst, fmt.Errorf("%w: invalid expected size %d", ErrCorrupt, rawSize)
	}
	if len(src) < headerLen {
		return dst, fmt.Errorf("%w: %d bytes, need a %d-byte header", ErrCorrupt, len(src), headerLen)
	}
	order := src[0]
	inSz := binary.LittleEndian.Uint32(src[1:])
	outSz := binary.LittleEndian.Uint32(src[5:])
	if uint64(inSz) != uint64(len(src)-headerLen) {
		return dst, fmt.Errorf("%w: header says %d compressed bytes, stream has %d", ErrCorrupt, inSz, len(src)-headerLen)
	}
	if outSz > MaxSize {
		return dst, fmt.Errorf("%w: stored size %d exceeds maximum %d", ErrCorrupt, outSz, MaxSize)
	}
	n := int(outSz)
	if rawSize >= 0 && n != rawSize {
		return dst, fmt.Errorf("%w: stored size %d, expected %d", ErrCorrupt, n, rawSize)
	}
	if order > 1 {
		return dst, fmt.Errorf("%w: order byte %d, want 0 or 1", ErrCorrupt, order)
	}
	base := len(dst)
	ext := grow(dst, n)
	out := ext[base : base+n]
	r := &reader{b: src, p: headerLen}
	var err error
	if order == 0 {
		err = decodeO0(r, out)
	} else {
		err = decodeO1(r, out, flatMin)
	}
	if err != nil {
		return ext[:base], err
	}
	return ext, nil
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

// reader is a bounds-checked cursor over a byte slice.
type reader struct {
	b []byte
	p int
}

func (r *reader) u8() (byte, error) {
	if r.p >= len(r.b) {
		return 0, fmt.Errorf("%w: truncated at offset %d", ErrCorrupt, r.p)
	}
	c := r.b[r.p]
	r.p++
	return c, nil
}

// freq reads a frequency: one byte, or two when the first has its top bit
// set (the ITF8 form of CRAMcodecs section 2.2, values below 32768).
func (r *reader) freq() (uint32, error) {
	c, err := r.u8()
	if err != nil {
		return 0, err
	}
	if c < 0x80 {
		return uint32(c), nil
	}
	d, err := r.u8()
	if err != nil {
		return 0, err
	}
	return uint32(c&0x7f)<<8 | uint32(d), nil
}

// readStates reads the 4 little-endian initial states, each within
// [ransL, 1<<31) as an encoder leaves them.
func readStates(r *reader, st *[4]uint32) error {
	if len(r.b)-r.p < 16 {
		return fmt.Errorf("%w: 4 rANS states need 16 bytes, %d left at offset %d", ErrCorrupt, len(r.b)-r.p, r.p)
	}
	for j := range st {
		x := binary.LittleEndian.Uint32(r.b[r.p:])
		if x < ransL || x >= 1<<31 {
			return fmt.Errorf("%w: rANS state %d is %#x at offset %d, outside [%#x, 1<<31)", ErrCorrupt, j, x, r.p, ransL)
		}
		st[j] = x
		r.p += 4
	}
	return nil
}

// renormSafe implements RansRenorm (CRAMcodecs section 2.4) with bounds
// checks, for the tail of a stream.
func renormSafe(x uint32, r *reader) (uint32, error) {
	for x < ransL {
		if r.p >= len(r.b) {
			return 0, fmt.Errorf("%w: rANS input exhausted at offset %d", ErrCorrupt, r.p)
		}
		x = x<<8 | uint32(r.b[r.p])
		r.p++
	}
	return x, nil
}

// renorm is RansRenorm (CRAMcodecs section 2.4) reading at offset k of
// a 16-byte window, of which a round of 4 or 8 symbols consumes at most
// 16 bytes. A decoded state lies in [1<<11, 1<<31), so two bytes always
// suffice. The first, frequent and hard to predict, is selected with a
// mask (m is all ones exactly when x < ransL, computed in 64 bits so that
// it holds for any x, as htscodecs' unsigned comparison does): Go emits no
// conditional move for a value that feeds a load address, and a branch
// here mispredicts. The second byte, needed only below 1<<15, is a rarely
// taken branch.
func renorm(x uint32, w *[16]byte, k uint) (uint32, uint) {
	m := uint32(int64(uint64(x)-ransL) >> 63)
	x ^= (x ^ (x<<8 | uint32(w[k&15]))) & m
	k += uint(m & 1)
	if x < ransL {
		x = x<<8 | uint32(w[k&15])
		k++
	}
	return x, k
}

// fill sets every byte of b to c.
func fill(b []byte, c byte) {
	v := uint64(c) * 0x0101010101010101
	for len(b) >= 8 {
		binary.LittleEndian.PutUint64(b, v)
		b = b[8:]
	}
	for i := range b {
		b[i] = c
	}
}

// nextSymbol moves *sym to the next symbol of a frequency table's symbol
// list (CRAMcodecs section 2.4, ReadFrequencies0): the next one of a run,
// or the next byte, followed by a run length when it is its predecessor
// plus one. It reports done when the list ends (symbol 0). start is the
// table's offset, for messages.
func (r *reader) nextSymbol(sym, rle *int, start int) (done bool, err error) {
	if *rle > 0 {
		*rle--
		*sym++
		if *sym > 255 {
			return false, fmt.Errorf("%w: symbol run at offset %d passes 255", ErrCorrupt, start)
		}
		return false, nil
	}
	c, err := r.u8()
	if err != nil {
		return false, err
	}
	if int(c) == *sym+1 {
		n, err := r.u8()
		if err != nil {
			return false, err
		}
		*rle = int(n)
	}
	*sym = int(c)
	return *sym == 0, nil
}
