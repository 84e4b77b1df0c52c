package bzip2

import "encoding/binary"

// bitReader reads a bzip2 bit stream, most significant bit of each byte
// first. The unread bits sit at the top of a 64-bit register that is
// refilled eight bytes at a time while the input lasts; past the end of the
// input it is filled with zero bits, which bitPos still counts, so a
// caller detects truncation by comparing bitPos with the input length
// (overrun) at points of its choosing instead of on every read.
//
// The hot symbol loop (decodeSymbols) copies bits, nb and pos into locals
// and refills them itself; every other reader uses the methods.
type bitReader struct {
	src []byte
	// pos is the index in src of the next byte to load. Zero bytes loaded
	// past the end of src advance it too, so it may exceed len(src).
	pos int
	// bits holds the nb unread bits in its top bits. The bits below them
	// are zero or copies of the bits of src that follow, never anything
	// else, so a refill may OR new bytes over them.
	bits uint64
	nb   uint
}

// refill tops the register up to at least 57 bits. It requires nb <= 56.
func (r *bitReader) refill() {
	if r.pos+8 <= len(r.src) {
		r.bits |= binary.BigEndian.Uint64(r.src[r.pos:]) >> r.nb
		r.pos += int(63-r.nb) >> 3
		r.nb |= 56
		return
	}
	r.refillTail()
}

// refillTail is refill near and past the end of the input, one byte at a
// time, loading zero bytes once src is exhausted.
func (r *bitReader) refillTail() {
	for r.nb <= 56 {
		if r.pos < len(r.src) {
			r.bits |= uint64(r.src[r.pos]) << (56 - r.nb)
		}
		r.pos++
		r.nb += 8
	}
}

// bitsN consumes and returns the next k bits, 1 <= k <= 56, first bit
// most significant.
func (r *bitReader) bitsN(k uint) uint64 {
	if r.nb < k {
		r.refill()
	}
	v := r.bits >> (64 - k)
	r.bits <<= k
	r.nb -= k
	return v
}

// bit consumes and returns the next bit.
func (r *bitReader) bit() uint32 {
	return uint32(r.bitsN(1))
}

// ones consumes a run of 1 bits and the 0 bit that ends it, and returns the
// number of 1 bits, or max+1 as soon as the run is longer than max (then
// max+1 ones and nothing more are consumed). max must be below 56.
func (r *bitReader) ones(max uint) uint {
	if r.nb <= max {
		r.refill()
	}
	n := uint(0)
	for r.bits&(1<<63) != 0 {
		r.bits <<= 1
		r.nb--
		n++
		if n > max {
			return n
		}
	}
	r.bits <<= 1
	r.nb--
	return n
}

// bitPos returns the number of bits consumed so far, padding included.
func (r *bitReader) bitPos() int {
	return r.pos*8 - int(r.nb)
}

// overrun reports whether more bits were consumed than the input holds.
func (r *bitReader) overrun() bool {
	return r.bitPos() > 8*len(r.src)
}
