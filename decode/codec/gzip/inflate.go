package gzip

import (
	"encoding/binary"
	"fmt"
)

// Margins of the fast loop: it runs while a word of input remains for
// its one refill per iteration (the gzip trailer follows the DEFLATE
// data, so that is nearly to its end) and the output has room for the
// longest match plus the up to 7 bytes that a word-at-a-time copy writes
// past it.
const (
	fastInMargin  = 8
	fastOutMargin = 258 + 8
)

// pairMinOut is the expected output left below which a dynamic block
// does not pair its literal codes (addPairs): too little to repay it.
const pairMinOut = 2048

// inflater decodes the DEFLATE data (RFC 1951) of a gzip member from src
// into out.
//
// Input is read through a 64-bit bit buffer, first bit lowest, refilled a
// word at a time where the input allows: bitbuf holds bitsleft unread
// bits at its bottom, and above them either zeros or copies of the input
// bits that follow, so a refill may OR a word over them. ip is the index
// of the next input byte to load; near the end of the input bytes are
// loaded one at a time and past it zero bytes are, which ip counts too, so
// the bits consumed, 8*ip - bitsleft, can be checked against the input's
// length at the end of each block (at most 8 zero bytes are ever loaded
// that a valid stream does not consume, so more is a truncated stream).
//
// Output goes to out[op:], out being the output buffer up to the point it
// has room for (its capacity, or the output limit if that comes first).
type inflater struct {
	src      []byte
	ip       int
	bitbuf   uint64
	bitsleft uint

	out   []byte
	op    int
	limit int // out may grow up to out[:limit]; beyond is an error
	base  int // out[:base] is the caller's dst
	start int // out[start:op] is the current member's output

	st *state
}

// state is the working memory of a decode, kept in a pool: the dynamic
// Huffman tables and what building them needs.
type state struct {
	lit  litTable
	dist distTable
	clen clenTable
	lens [maxLit + maxDist]uint8
	b    tableBuilder
}

// consumed returns the bits of src consumed so far.
func (z *inflater) consumed() int { return 8*z.ip - int(z.bitsleft) }

// offset returns the input byte offset of the next unconsumed bit, for
// errors.
func (z *inflater) offset() int { return z.consumed() / 8 }

// truncated is the error for DEFLATE data that ends early.
func (z *inflater) truncated() error {
	return fmt.Errorf("%w: DEFLATE data truncated at input byte %d", ErrCorrupt, len(z.src))
}

// refill tops the bit buffer up to at least 56 bits, loading zero bytes
// past the end of the input, and reports whether the input was overrun
// by more than a valid stream can leave unconsumed.
func (z *inflater) refill() bool {
	if z.ip+8 <= len(z.src) {
		z.bitbuf |= binary.LittleEndian.Uint64(z.src[z.ip:]) << (z.bitsleft & 63)
		z.ip += int((63 - z.bitsleft) >> 3)
		z.bitsleft |= 56
		return true
	}
	for z.bitsleft < 56 {
		if z.ip < len(z.src) {
			z.bitbuf |= uint64(z.src[z.ip]) << (z.bitsleft & 63)
		}
		z.ip++
		z.bitsleft += 8
	}
	return z.ip <= len(z.src)+8
}

// bits consumes and returns the next n bits, n <= 32, refilling as needed.
// It returns ok false on overrun.
func (z *inflater) bits(n uint) (uint32, bool) {
	if z.bitsleft < n {
		if !z.refill() {
			return 0, false
		}
	}
	v := uint32(z.bitbuf & (1<<(n&63) - 1))
	z.bitbuf >>= n & 63
	z.bitsleft -= n
	return v, true
}

// inflate decodes the blocks of one DEFLATE stream (RFC 1951 §3.2.3)
// starting at src[z.ip], and leaves z.ip at the byte after its last.
func (z *inflater) inflate() error {
	z.bitbuf, z.bitsleft = 0, 0
	for {
		hdr, ok := z.bits(3)
		if !ok {
			return z.truncated()
		}
		final := hdr&1 != 0
		var err error
		switch hdr >> 1 {
		case 0:
			err = z.stored()
		case 1:
			err = z.huffman(&fixedLit, &fixedDist)
		case 2:
			if err = z.readDynamic(); err == nil {
				err = z.huffman(&z.st.lit, &z.st.dist)
			}
		default:
			err = fmt.Errorf("%w: reserved DEFLATE block type 3 at input byte %d", ErrCorrupt, z.offset())
		}
		if err != nil {
			return err
		}
		if z.consumed() > 8*len(z.src) {
			return z.truncated()
		}
		if final {
			// Drop the rest of the last byte; unconsumed whole
			// bytes in the bit buffer go back to the input.
			z.ip -= int(z.bitsleft >> 3)
			z.bitbuf, z.bitsleft = 0, 0
			return nil
		}
	}
}

// stored copies a stored block (RFC 1951 §3.2.4).
func (z *inflater) stored() error {
	p := z.ip - int(z.bitsleft>>3)
	z.bitbuf, z.bitsleft = 0, 0
	if p+4 > len(z.src) {
		z.ip = p
		return z.truncated()
	}
	n := int(binary.LittleEndian.Uint16(z.src[p:]))
	if nn := binary.LittleEndian.Uint16(z.src[p+2:]); uint16(n) != ^nn {
		return fmt.Errorf("%w: stored block length %#04x and its complement %#04x disagree at input byte %d", ErrCorrupt, n, nn, p)
	}
	p += 4
	if n > len(z.src)-p {
		return z.truncated()
	}
	if err := z.room(n); err != nil {
		return err
	}
	copy(z.out[z.op:], z.src[p:p+n])
	z.op += n
	z.ip = p + n
	return nil
}

// room makes out hold at least n more bytes after op, growing it up to
// the limit.
func (z *inflater) room(n int) error {
	if n <= len(z.out)-z.op {
		return nil
	}
	if n > z.limit-z.op {
		return fmt.Errorf("%w: output exceeds the expected %d bytes (at input byte %d)", ErrCorrupt, z.limit-z.base, z.offset())
	}
	size := min(z.limit, max(2*len(z.out), z.op+n, 4096))
	grown := make([]byte, size)
	copy(grown, z.out[:z.op])
	z.out = grown
	return nil
}

// readDynamic reads a dynamic block's code lengths and builds its tables
// (RFC 1951 §3.2.7).
func (z *inflater) readDynamic() error {
	h, ok := z.bits(14)
	if !ok {
		return z.truncated()
	}
	nlit := int(h&0x1f) + 257
	ndist := int(h>>5&0x1f) + 1
	nclen := int(h>>10) + 4
	if nlit > maxLit || ndist > maxDist {
		return fmt.Errorf("%w: dynamic block declares %d literal/length and %d distance codes (at most %d and %d) at input byte %d", ErrCorrupt, nlit, ndist, maxLit, maxDist, z.offset())
	}
	st := z.st
	var clens [numCLen]uint8
	for i := range nclen {
		v, ok := z.bits(3)
		if !ok {
			return z.truncated()
		}
		clens[clenOrder[i]] = uint8(v)
	}
	if err := st.b.build(st.clen[:], clens[:], clenPayload[:], clenBits); err != nil {
		return fmt.Errorf("code length code at input byte %d: %w", z.offset(), err)
	}
	n := nlit + ndist
	lens := st.lens[:n]
	for i := 0; i < n; {
		if z.bitsleft < 14 && !z.refill() {
			return z.truncated()
		}
		e := st.clen[z.bitbuf&(1<<clenBits-1)]
		if e&flagExceptional != 0 {
			return fmt.Errorf("%w: invalid code length code at input byte %d", ErrCorrupt, z.offset())
		}
		z.bitbuf >>= e & 15
		z.bitsleft -= uint(e & 15)
		sym := e >> 16
		if sym < 16 {
			lens[i] = uint8(sym)
			i++
			continue
		}
		var rep int
		var v uint8
		switch sym {
		case 16:
			if i == 0 {
				return fmt.Errorf("%w: code length repeat with no previous length at input byte %d", ErrCorrupt, z.offset())
			}
			rep = 3 + int(z.bitbuf&3)
			z.bitbuf >>= 2
			z.bitsleft -= 2
			v = lens[i-1]
		case 17:
			rep = 3 + int(z.bitbuf&7)
			z.bitbuf >>= 3
			z.bitsleft -= 3
		default:
			rep = 11 + int(z.bitbuf&0x7f)
			z.bitbuf >>= 7
			z.bitsleft -= 7
		}
		if rep > n-i {
			return fmt.Errorf("%w: code lengths repeat %d times past the %d declared at input byte %d", ErrCorrupt, rep, n, z.offset())
		}
		for k := range lens[i : i+rep] {
			lens[i+k] = v
		}
		i += rep
	}
	if lens[256] == 0 {
		// klauspost/compress accepts the code but can never end the
		// block; the stream fails either way.
		return fmt.Errorf("%w: dynamic block has no end-of-block code at input byte %d", ErrCorrupt, z.offset())
	}
	if err := st.b.build(st.lit[:], lens[:nlit], litPayload[:], litBits); err != nil {
		return fmt.Errorf("literal/length code at input byte %d: %w", z.offset(), err)
	}
	if z.limit-z.op >= pairMinOut {
		st.b.addPairs(&st.lit, lens[:nlit])
	}
	if err := st.b.build(st.dist[:], lens[nlit:], distPayload[:], distBits); err != nil {
		return fmt.Errorf("distance code at input byte %d: %w", z.offset(), err)
	}
	return nil
}

// huffman decodes the symbols of a Huffman-coded block with the tables lt
// and dt (RFC 1951 §3.2.5), up to and including its end-of-block code: a
// fast loop while input and output room allow, one symbol at a time with
// every check otherwise.
func (z *inflater) huffman(lt *litTable, dt *distTable) error {
	src, out := z.src, z.out
	ip, op := z.ip, z.op
	bitbuf, bitsleft := z.bitbuf, z.bitsleft
	start := z.start
	var err error
	for {
		// The fast loop: no end-of-input or end-of-output checks
		// beyond its condition. After a word refill all 64 bits of
		// bitbuf are input bits, of which bitsleft are counted; an
		// iteration consumes at most 48, so the next symbol's main
		// table entry can be looked up before the refill that counts
		// its bits (a refill leaves the bits below bitsleft alone),
		// taking the refill off the critical path.
		fastIn := len(src) - fastInMargin
		fastOut := len(out) - fastOutMargin
		if ip <= fastIn && op <= fastOut {
			bitbuf |= binary.LittleEndian.Uint64(src[ip:]) << (bitsleft & 63)
			ip += int((63 - bitsleft) >> 3)
			bitsleft |= 56
			e := lt[bitbuf&litMask]
			for {
				if e&flagLiteral != 0 {
					// Up to three literal entries (15 bits
					// each at most) per refill, each of one or
					// two literals; the second byte stored is
					// overwritten if not one.
					bitbuf >>= e & 63
					bitsleft -= uint(e & 0xff)
					binary.LittleEndian.PutUint16(out[op:], uint16(e>>16))
					op += int(e >> 12 & 3)
					e = lt[bitbuf&litMask]
					if e&flagLiteral != 0 {
						bitbuf >>= e & 63
						bitsleft -= uint(e & 0xff)
						binary.LittleEndian.PutUint16(out[op:], uint16(e>>16))
						op += int(e >> 12 & 3)
						e = lt[bitbuf&litMask]
						if e&flagLiteral != 0 {
							bitbuf >>= e & 63
							bitsleft -= uint(e & 0xff)
							binary.LittleEndian.PutUint16(out[op:], uint16(e>>16))
							op += int(e >> 12 & 3)
							e = lt[bitbuf&litMask]
						}
					}
					goto next
				}
				if e&flagExceptional != 0 {
					if e&flagSubtable != 0 {
						bitbuf >>= litBits
						bitsleft -= litBits
						e = lt[(e>>16+uint32(bitbuf)&(1<<(e>>8&15)-1))&(litTableSize-1)]
						if e&flagLiteral != 0 {
							bitbuf >>= e & 63
							bitsleft -= uint(e & 0xff)
							binary.LittleEndian.PutUint16(out[op:], uint16(e>>16))
							op += int(e >> 12 & 3)
							e = lt[bitbuf&litMask]
							goto next
						}
					}
					if e&flagExceptional != 0 {
						if e&flagEOB != 0 {
							bitbuf >>= e & 63
							bitsleft -= uint(e & 0xff)
							goto done
						}
						err = z.invalid("literal/length", ip, bitsleft)
						goto fail
					}
				}
				{
					// A length (at most 20 bits with its
					// subtable) and a distance (at most 28).
					saved := bitbuf
					bitbuf >>= e & 63
					bitsleft -= uint(e & 0xff)
					length := int(e>>16) + int((saved&(1<<(e&63)-1))>>(e>>8&15))
					e = dt[bitbuf&distMask]
					if e&flagExceptional != 0 {
						if e&flagSubtable != 0 {
							bitbuf >>= distBits
							bitsleft -= distBits
							e = dt[(e>>16+uint32(bitbuf)&(1<<(e>>8&15)-1))&(distTabSize-1)]
						}
						if e&flagExceptional != 0 {
							err = z.invalid("distance", ip, bitsleft)
							goto fail
						}
					}
					saved = bitbuf
					bitbuf >>= e & 63
					bitsleft -= uint(e & 0xff)
					dist := int(e>>16) + int((saved&(1<<(e&63)-1))>>(e>>8&15))
					e = lt[bitbuf&litMask]
					if dist > op-start {
						err = z.farDistance(dist, op-start, ip, bitsleft)
						goto fail
					}
					from := op - dist
					if length > 64 && dist >= 32 {
						// Long matches by memmove, in chunks of at
						// most dist bytes: each chunk's source ends
						// before its destination begins (one chunk
						// when the match does not overlap itself).
						for n := 0; n < length; n += dist {
							c := min(dist, length-n)
							copy(out[op+n:op+n+c], out[from+n:from+n+c])
						}
					} else if dist >= 8 {
						// Each word read lies before the word
						// written, so the copy repeats
						// overlapping data as it should.
						binary.LittleEndian.PutUint64(out[op:], binary.LittleEndian.Uint64(out[from:]))
						binary.LittleEndian.PutUint64(out[op+8:], binary.LittleEndian.Uint64(out[from+8:]))
						for n := 16; n < length; n += 8 {
							binary.LittleEndian.PutUint64(out[op+n:], binary.LittleEndian.Uint64(out[from+n:]))
						}
					} else {
						// The output repeats the dist bytes
						// before op: a word of them, repeated,
						// is right at every multiple of dist, so
						// it is stored at the largest such step
						// of at most 8 bytes.
						p := binary.LittleEndian.Uint64(out[from:]) & (1<<(8*uint(dist)&63) - 1)
						w := p
						for s := 8 * uint(dist); s < 64; s += 8 * uint(dist) {
							w |= p << s
						}
						step := 8 - 8%dist
						for n := 0; n < length; n += step {
							binary.LittleEndian.PutUint64(out[op+n:], w)
						}
					}
					op += length
				}
			next:
				if ip > fastIn || op > fastOut {
					break
				}
				bitbuf |= binary.LittleEndian.Uint64(src[ip:]) << (bitsleft & 63)
				ip += int((63 - bitsleft) >> 3)
				bitsleft |= 56
			}
		}

		// One symbol at a time, with every check.
		if bitsleft < 48 {
			z.ip, z.bitbuf, z.bitsleft = ip, bitbuf, bitsleft
			ok := z.refill()
			ip, bitbuf, bitsleft = z.ip, z.bitbuf, z.bitsleft
			if !ok {
				err = z.truncated()
				goto fail
			}
		}
		e := lt[bitbuf&litMask]
		if e&(flagExceptional|flagSubtable) == flagExceptional|flagSubtable {
			bitbuf >>= litBits
			bitsleft -= litBits
			e = lt[(e>>16+uint32(bitbuf)&(1<<(e>>8&15)-1))&(litTableSize-1)]
		}
		if e&flagLiteral != 0 {
			n := int(e >> 12 & 3)
			if n > len(out)-op {
				z.op = op
				if err = z.room(n); err != nil {
					goto fail
				}
				out = z.out
			}
			bitbuf >>= e & 63
			bitsleft -= uint(e & 0xff)
			out[op] = byte(e >> 16)
			if n == 2 {
				out[op+1] = byte(e >> 24)
			}
			op += n
			continue
		}
		if e&flagExceptional != 0 {
			if e&flagEOB != 0 {
				bitbuf >>= e & 63
				bitsleft -= uint(e & 0xff)
				goto done
			}
			err = z.invalid("literal/length", ip, bitsleft)
			goto fail
		}
		{
			saved := bitbuf
			bitbuf >>= e & 63
			bitsleft -= uint(e & 0xff)
			length := int(e>>16) + int((saved&(1<<(e&63)-1))>>(e>>8&15))
			e = dt[bitbuf&distMask]
			if e&flagSubtable != 0 {
				bitbuf >>= distBits
				bitsleft -= distBits
				e = dt[(e>>16+uint32(bitbuf)&(1<<(e>>8&15)-1))&(distTabSize-1)]
			}
			if e&flagExceptional != 0 {
				err = z.invalid("distance", ip, bitsleft)
				goto fail
			}
			saved = bitbuf
			bitbuf >>= e & 63
			bitsleft -= uint(e & 0xff)
			dist := int(e>>16) + int((saved&(1<<(e&63)-1))>>(e>>8&15))
			if dist > op-start {
				err = z.farDistance(dist, op-start, ip, bitsleft)
				goto fail
			}
			if length > len(out)-op {
				z.op = op
				if err = z.room(length); err != nil {
					goto fail
				}
				out = z.out
			}
			from := op - dist
			for n := range length {
				out[op+n] = out[from+n]
			}
			op += length
		}
	}
done:
	z.ip, z.op, z.bitbuf, z.bitsleft = ip, op, bitbuf, bitsleft
	return nil
fail:
	z.ip, z.op, z.bitbuf, z.bitsleft = ip, op, bitbuf, bitsleft
	return err
}

// invalid is the error for an unused code of an incomplete Huffman code or
// an invalid symbol (RFC 1951 §3.2.6: literal/length 286 and 287,
// distance 30 and 31).
func (z *inflater) invalid(what string, ip int, bitsleft uint) error {
	return fmt.Errorf("%w: invalid %s code at input byte %d", ErrCorrupt, what, (8*ip-int(bitsleft))/8)
}

// farDistance is the error for a distance reaching before the start of
// the member's output (RFC 1951 §3.2.5).
func (z *inflater) farDistance(dist, have, ip int, bitsleft uint) error {
	return fmt.Errorf("%w: distance %d reaches before the member's %d bytes of output at input byte %d", ErrCorrupt, dist, have, (8*ip-int(bitsleft))/8)
}
