package gzip

import "fmt"

// Decoding tables (RFC 1951 §3.2.2, §3.2.5, §3.2.6).
//
// A table is indexed by the next bits of the input, first bit lowest (a
// DEFLATE Huffman code is sent first bit first, so a code's entries sit at
// its bit-reversed value, repeated for every value of the bits after it).
// Codes up to the table's main width resolve in one look-up; a longer
// code's first main-width bits lead to a subtable indexed by the bits that
// follow. Every entry is a uint32:
//
//	bits 0-7    bits to consume: the code's length (within its table
//	            level) plus the extra bits that follow it; for a
//	            subtable link, the main width
//	bits 8-11   the code's length within its level; for a link, the
//	            subtable's width
//	bit  12     flagEOB (literal/length table), with flagExceptional
//	bit  13     flagSubtable, with flagExceptional
//	bits 12-13  for a literal: how many literals the entry holds, 1 or 2
//	bit  14     flagExceptional: end of block, subtable link or an
//	            invalid code (neither of the other two flags)
//	bit  15     flagLiteral (literal/length table)
//	bits 16-31  the value: one literal byte, or two (the first in bits
//	            16-23), a length or distance base, or a link's subtable
//	            offset
//
// so a length or distance is base + ((bits & (1<<consume - 1)) >> length).
// A main table entry for a literal code followed by a second literal
// code, both within the main width, holds both (addPairs).
const (
	flagEOB         = 1 << 12
	flagSubtable    = 1 << 13
	flagExceptional = 1 << 14
	flagLiteral     = 1 << 15

	entryInvalid = flagExceptional
)

// Table widths and sizes. A complete code of 288 symbols and at most 15
// bits needs at most 2048+294 literal/length entries with an 11-bit main
// table, and 30 symbols at most 256+146 distance entries with an 8-bit
// one; the arrays are powers of two so that masked indexes need no bounds
// checks, and building checks the sizes all the same.
const (
	litBits      = 11
	litMask      = 1<<litBits - 1
	litTableSize = 4096
	distBits     = 8
	distMask     = 1<<distBits - 1
	distTabSize  = 1024
	clenBits     = 7

	maxCodeLen = 15
	numLit     = 288 // literal/length symbols of the fixed code
	maxLit     = 286 // most literal/length codes a dynamic block declares
	numDist    = 32  // distance symbols of the fixed code
	maxDist    = 30  // most distance codes a dynamic block declares
	numCLen    = 19
)

type (
	litTable  [litTableSize]uint32
	distTable [distTabSize]uint32
	clenTable [1 << clenBits]uint32
)

// Per-symbol entry payloads: an entry is its symbol's payload plus
// (length<<8 | length), length being the code's length within its level.
var (
	litPayload  [numLit]uint32
	distPayload [numDist]uint32
	clenPayload [numCLen]uint32
)

// The fixed codes of RFC 1951 §3.2.6, built at init and never modified.
var (
	fixedLit  litTable
	fixedDist distTable
)

// clenOrder is the order in which a dynamic block's header sends the code
// length code's lengths (RFC 1951 §3.2.7).
var clenOrder = [numCLen]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

func init() {
	for s := range 256 {
		litPayload[s] = flagLiteral | 1<<12 | uint32(s)<<16
	}
	litPayload[256] = flagExceptional | flagEOB
	// Lengths (RFC 1951 §3.2.5): codes 257-264 are 3-10 with no extra
	// bits, then four codes per extra bit count 1-5, then 285 is 258.
	base := uint32(3)
	for i := range 28 {
		extra := uint32(0)
		if i >= 8 {
			extra = uint32(i-4) / 4
		}
		litPayload[257+i] = base<<16 | extra
		base += 1 << extra
	}
	litPayload[285] = 258 << 16
	litPayload[286] = entryInvalid
	litPayload[287] = entryInvalid
	// Distances: codes 0-3 are 1-4, then two codes per extra bit count
	// 1-13; 30 and 31 are invalid.
	base = 1
	for c := range maxDist {
		extra := uint32(0)
		if c >= 4 {
			extra = uint32(c)/2 - 1
		}
		distPayload[c] = base<<16 | extra
		base += 1 << extra
	}
	distPayload[30] = entryInvalid
	distPayload[31] = entryInvalid
	for s := range numCLen {
		clenPayload[s] = uint32(s) << 16
	}

	var lens [numLit]uint8
	for s := range lens {
		switch {
		case s < 144:
			lens[s] = 8
		case s < 256:
			lens[s] = 9
		case s < 280:
			lens[s] = 7
		default:
			lens[s] = 8
		}
	}
	var b tableBuilder
	if err := b.build(fixedLit[:], lens[:], litPayload[:], litBits); err != nil {
		panic(err)
	}
	for s := range lens[:numDist] {
		lens[s] = 5
	}
	if err := b.build(fixedDist[:], lens[:numDist], distPayload[:], distBits); err != nil {
		panic(err)
	}
}

// tableBuilder is the working memory of build.
type tableBuilder struct {
	count  [maxCodeLen + 1]uint16
	offset [maxCodeLen + 2]uint16
	sorted [numLit]uint16 // symbols by code length, then by value
	rev    [numLit]uint16 // each sorted symbol's code, bit-reversed
	single [1 << litBits]uint32
}

// reverse16 reverses the low n bits of c.
func reverse16(c uint32, n uint8) uint32 {
	c = c>>1&0x5555 | c&0x5555<<1
	c = c>>2&0x3333 | c&0x3333<<2
	c = c>>4&0x0f0f | c&0x0f0f<<4
	c = c>>8&0x00ff | c&0x00ff<<8
	return c >> (16 - n&15)
}

// build fills table from the code lengths lens of a canonical Huffman
// code (RFC 1951 §3.2.2), symbol s taking payload[s], with a main table
// of mainBits bits. It rejects over-subscribed codes and incomplete ones,
// except as compress/flate and klauspost/compress accept them: a code
// with no symbols at all, or with a single symbol of length 1; their
// unused bit patterns decode as invalid entries.
func (b *tableBuilder) build(table []uint32, lens []uint8, payload []uint32, mainBits uint8) error {
	b.count = [maxCodeLen + 1]uint16{}
	for _, l := range lens {
		b.count[l&maxCodeLen]++
	}
	b.count[0] = 0
	// The code's Kraft sum, in units of 2^-15.
	kraft := 0
	for l := 1; l <= maxCodeLen; l++ {
		kraft += int(b.count[l]) << (maxCodeLen - l)
	}
	mainSize := 1 << mainBits
	switch {
	case kraft > 1<<maxCodeLen:
		return fmt.Errorf("%w: over-subscribed Huffman code", ErrCorrupt)
	case kraft == 1<<maxCodeLen:
	case kraft == 0 || kraft == 1<<(maxCodeLen-1) && b.count[1] == 1:
		// The unused patterns of the one-bit (or empty) code; the
		// doubling below spreads them.
		table[0], table[1] = entryInvalid, entryInvalid
	default:
		return fmt.Errorf("%w: incomplete Huffman code", ErrCorrupt)
	}

	// Sort the symbols by length, then value, and give each its
	// canonical code.
	b.offset[1] = 0
	for l := 1; l <= maxCodeLen; l++ {
		b.offset[l+1] = b.offset[l] + b.count[l]
	}
	for s, l := range lens {
		if l != 0 {
			o := b.offset[l]
			b.sorted[o] = uint16(s)
			b.offset[l] = o + 1
		}
	}
	n := int(b.offset[maxCodeLen])
	code := uint32(0)
	i := 0
	for l := uint8(1); l <= maxCodeLen; l++ {
		for range b.count[l] {
			b.rev[i] = uint16(reverse16(code, l))
			code++
			i++
		}
		code <<= 1
	}

	// Codes that fit the main table, shortest first: with the table
	// filled for the codes up to l bits as if it were l bits wide, its
	// entries for l+1 bits are two copies of those (the extra bit is
	// not part of any of those codes) with the (l+1)-bit codes added.
	i = 0
	for l := uint8(1); l <= mainBits; l++ {
		size := 1 << l
		if l > 1 {
			copy(table[size/2:size], table[:size/2])
		}
		for ; i < n && lens[b.sorted[i]] == l; i++ {
			s := b.sorted[i]
			table[b.rev[i]&uint16(size-1)] = payload[s] + uint32(l)<<8 + uint32(l)
		}
	}
	// Longer codes, in runs sharing their first mainBits bits; the
	// run's last code is its longest and sets the subtable's width.
	next := mainSize
	mask := uint16(mainSize - 1)
	for i < n {
		prefix := b.rev[i] & mask
		j := i
		for j+1 < n && b.rev[j+1]&mask == prefix {
			j++
		}
		subBits := lens[b.sorted[j]] - mainBits
		size := 1 << subBits
		if next+size > len(table) {
			return fmt.Errorf("%w: Huffman table overflow", ErrCorrupt)
		}
		table[prefix] = flagExceptional | flagSubtable | uint32(next)<<16 | uint32(subBits)<<8 | uint32(mainBits)
		for ; i <= j; i++ {
			s := b.sorted[i]
			l := lens[s] - mainBits
			e := payload[s] + uint32(l)<<8 + uint32(l)
			for k := int(b.rev[i] >> mainBits); k < size; k += 1 << l {
				table[next+k] = e
			}
		}
		next += size
	}
	return nil
}

// addPairs makes each entry of the main literal/length table t whose code
// is a literal followed, within the main width, by a second literal's
// code an entry for both, so that a literal-heavy block decodes up to two
// literals per look-up. It must follow b.build(t, lens, ...), whose
// sorted codes it reuses.
func (b *tableBuilder) addPairs(t *litTable, lens []uint8) {
	minLen := uint8(maxCodeLen)
	n := 0
	for ; n < len(lens) && n < 256; n++ {
		if l := lens[n]; l != 0 && l < minLen {
			minLen = l
		}
	}
	if 2*minLen > litBits {
		return
	}
	// The entries of the first code's continuations are read from a
	// copy, as t fills with pairs.
	single := &b.single
	copy(single[:], t[:len(single)])
	for i, s := range b.sorted[:b.offset[maxCodeLen]] {
		l := lens[s]
		if l+minLen > litBits {
			break
		}
		if s >= 256 {
			continue
		}
		// The second code's bits follow the first's l: index r|j<<l
		// for every j below 1<<(litBits-l), whose entry is single[j].
		r := int(b.rev[i])
		room := litBits - uint32(l)
		for j, e2 := range single[:1<<room] {
			if e2&flagLiteral != 0 && e2&0xff <= room {
				t[(r|j<<l)&litMask] = flagLiteral | 2<<12 | (uint32(s)|e2>>16<<8)<<16 | (uint32(l) + e2&0xff)
			}
		}
	}
}
