package bzip2

const (
	// maxCodeLen is the longest Huffman code a bzip2 stream may declare.
	maxCodeLen = 20
	// maxAlpha is the largest alphabet: RUNA, RUNB, up to 255 MTF
	// positions and the end-of-block symbol.
	maxAlpha = 258
	// fastBits is the width of the primary lookup table. Codes up to this
	// long decode with one lookup; longer ones search the canonical code
	// ranges in decodeSlow.
	fastBits = 10
	// symBits is the number of low bits of a fast entry holding the
	// symbol; the code length is stored above them.
	symBits = 9
	symMask = 1<<symBits - 1
)

// huffTable decodes one of a block's Huffman codes.
//
// bzip2 codes are canonical: symbols are ranked by (code length, symbol)
// and codes are handed out in that order, each length starting at twice
// the code that follows the last code of the previous length. libbz2
// decodes by that rule without checking that the lengths form a complete
// prefix code, and htslib's output follows libbz2, so this table follows
// the same rule for every length set: with an over-subscribed set, codes
// that do not fit in their length are unreachable (as are all longer
// lengths); with an incomplete set, the bit patterns left over are
// corrupt data. Neither occurs in streams written by bzip2, whose code
// lengths always form a complete code; irregular marks the tables whose
// lengths do not.
type huffTable struct {
	// fast maps the next fastBits bits of the stream to the symbol whose
	// code they start with, in the low symBits bits, and that code's
	// length above them. Length 0 means the code is longer than fastBits
	// or the pattern is invalid: see decodeSlow.
	fast [1 << fastBits]uint16

	minLen, maxLen uint
	// For each code length l: the first code, the number of codes and the
	// index in perm of the first symbol with that length.
	start [maxCodeLen + 1]uint32
	count [maxCodeLen + 1]uint32
	first [maxCodeLen + 1]uint16
	// perm lists the symbols ranked by (code length, symbol).
	perm [maxAlpha]uint16

	// irregular is set when the lengths do not form a complete prefix
	// code (see the type comment).
	irregular bool
}

// build prepares t to decode the canonical code with the given lengths,
// one per symbol. Every length must be within 1..maxCodeLen, and there
// must be between 1 and maxAlpha of them.
func (t *huffTable) build(lengths []uint8) {
	var count [maxCodeLen + 1]uint32
	minLen, maxLen := uint(maxCodeLen), uint(1)
	for _, l := range lengths {
		count[l]++
		minLen = min(minLen, uint(l))
		maxLen = max(maxLen, uint(l))
	}
	t.minLen, t.maxLen = minLen, maxLen

	var next [maxCodeLen + 1]uint16
	rank := uint16(0)
	code := uint32(0)
	for l := minLen; l <= maxLen; l++ {
		t.start[l] = code
		t.count[l] = count[l]
		t.first[l] = rank
		next[l] = rank
		rank += uint16(count[l])
		code = (code + count[l]) << 1
	}
	// code is now twice the code after the last one of length maxLen;
	// the lengths form a complete code exactly when that is 2^maxLen.
	t.irregular = code != 2<<maxLen
	for s, l := range lengths {
		t.perm[next[l]] = uint16(s)
		next[l]++
	}

	// The codes of lengths up to fastBits cover one contiguous range of
	// fastBits-bit prefixes starting at 0, in canonical order; whatever
	// follows is a longer code or invalid.
	p := 0
	for l := minLen; l <= min(maxLen, fastBits); l++ {
		span := 1 << (fastBits - l)
		c := t.start[l]
		for j := uint32(0); j < t.count[l] && c+j < 1<<l; j++ {
			e := t.perm[uint32(t.first[l])+j] | uint16(l)<<symBits
			fill := t.fast[p : p+span]
			for k := range fill {
				fill[k] = e
			}
			p += span
		}
	}
	clear(t.fast[p:])
}

// decodeSlow decodes a symbol whose fast entry is 0, from the bits at the
// top of bits (at least maxLen of them must be valid). It returns the
// symbol and its code length, or ok false if no code matches, which
// libbz2 also treats as corrupt data.
//
// As a prefix of the stream, the top l bits of a valid code of length l
// lie within the codes of length l; if they lie above them, the code is
// longer (or invalid), and no shorter prefix matched by construction.
func (t *huffTable) decodeSlow(bits uint64) (sym uint32, l uint, ok bool) {
	for l = max(t.minLen, fastBits+1); l <= t.maxLen; l++ {
		d := uint32(bits>>(64-l)) - t.start[l]
		if d < t.count[l] {
			return uint32(t.perm[uint32(t.first[l])+d]), l, true
		}
	}
	return 0, 0, false
}
