package decode

import (
	"fmt"
	"slices"
)

// EncodingID names a data series encoding (CRAMv3 §13).
type EncodingID int32

// Encodings.
const (
	EncodingNull          EncodingID = 0
	EncodingExternal      EncodingID = 1
	EncodingGolomb        EncodingID = 2
	EncodingHuffman       EncodingID = 3
	EncodingByteArrayLen  EncodingID = 4
	EncodingByteArrayStop EncodingID = 5
	EncodingBeta          EncodingID = 6
	EncodingSubexp        EncodingID = 7
	EncodingGolombRice    EncodingID = 8
	EncodingGamma         EncodingID = 9

	// CRAM 4.0 (htslib's draft; see encoding_varint.go, encoding_const.go).
	EncodingVarintUnsigned EncodingID = 41
	EncodingVarintSigned   EncodingID = 42
	EncodingConstByte      EncodingID = 43
	EncodingConstInt       EncodingID = 44
	// CRAM 4.0's transforms of a sub-encoding, which htslib 1.16 reads
	// but none of the writers emit (encoding_xpack.go, encoding_xrle.go,
	// encoding_xdelta.go).
	EncodingXPack  EncodingID = 51
	EncodingXRLE   EncodingID = 52
	EncodingXDelta EncodingID = 53
)

// valueType is what a data series holds; it decides how an encoding reads.
type valueType int

const (
	typeInt valueType = iota
	typeByte
	typeByteArray
	// typeLong is a 64-bit integer: AP, NP and TS from CRAM 4.0 on.
	typeLong
	// typeByteBlock is a byte array appended to a buffer (htslib's
	// E_BYTE_ARRAY_BLOCK): read names and tag values. CRAM 4.0 tells it
	// from typeByteArray (BB, QQ, IN, SC) since its transforms do.
	typeByteBlock
)

// isArray reports whether vt is a byte array of either kind.
func (vt valueType) isArray() bool { return vt == typeByteArray || vt == typeByteBlock }

// Encoding is a parsed encoding of one data series or tag (CRAMv3 §13).
type Encoding struct {
	ID        EncodingID
	vt        valueType // what it was parsed to read
	ContentID int32     // EXTERNAL, BYTE_ARRAY_STOP
	Stop      byte      // BYTE_ARRAY_STOP
	Offset    int32     // BETA, SUBEXP, GAMMA
	NBits     int32     // BETA
	K         int32     // SUBEXP
	// Base is what VARINT adds to each value read, or CONST's value.
	Base     int64
	Len, Val *Encoding // BYTE_ARRAY_LEN
	// CRAM 4.0's transforms: Val is XPACK's and XDELTA's sub-encoding
	// and XRLE's literals, Len XRLE's run lengths; Table is XPACK's
	// value map or XRLE's set of repeated symbols (1: repeated); NBits
	// is XPACK's bits per value and NVal its number of values; Word is
	// XDELTA's word size.
	Table *[256]byte
	NVal  int32
	Word  int32
	huff  *huffman
	// The external block of ContentID in the slice being decoded, found
	// once per slice (streams.gen tells which slice it belongs to).
	x    *extStream
	xGen uint64
	// What XPACK or XRLE expanded for the slice of generation
	// xformGen-1 (0: none yet), and xpos, the next byte to read there or,
	// for XDELTA's arrays, in its sub-encoding's block (xposGen-1 the
	// slice); last is XDELTA's running value, kept from slice to slice
	// of the container as htslib does.
	xform             []byte
	xformGen, xposGen uint64
	xpos              int
	last              uint32
}

// stream returns the external block the encoding reads in the current
// slice of s.
func (e *Encoding) stream(s *streams) (*extStream, error) {
	if x := e.x; x != nil && e.xGen == s.gen && !x.pending {
		return x, nil
	}
	return e.findStream(s)
}

// findStream is stream's lookup, once per slice, kept apart so that the
// cached case inlines.
func (e *Encoding) findStream(s *streams) (*extStream, error) {
	x, err := s.external(e.ContentID)
	if err != nil {
		return nil, err
	}
	e.x, e.xGen = x, s.gen
	return x, nil
}

// huffman is a canonical Huffman code (CRAMv3 §13.3).
type huffman struct {
	symbols []int32 // sorted by (length, symbol)
	// for each length l in 0..maxLen: first canonical code, number of
	// codes and index of the first symbol of that length.
	first, count, index []int32
	maxLen              int32
	// one holds the four slices of a one-symbol code, the most common
	// (a constant series), so that it costs a single allocation.
	one [4]int32
}

// encodings holds the Encodings and Huffman codes of one compression
// header in blocks that a Decoder reuses from container to container, so
// that parsing a header allocates little once the blocks have grown (files
// of one-read containers parse one header per read). A nil *encodings, or
// one without room, allocates each one.
type encodings struct {
	encs  []Encoding
	huffs []huffman
	used  int // encodings handed out since reset
}

// reset makes the blocks free for the next header; what the previous
// one's encodings pointed to must no longer be used.
func (a *encodings) reset() {
	a.encs, a.huffs, a.used = a.encs[:0], a.huffs[:0], 0
}

// ensure makes room for n more top-level encodings, each of at most
// maxParts Encodings and as many Huffman codes. A new block takes the
// ones already handed out into account, so that the next header of the
// same shape fits in it; those stay where they are, in the old block.
func (a *encodings) ensure(n int) {
	need := n * maxParts
	if a == nil || cap(a.encs)-len(a.encs) >= need {
		return
	}
	a.encs = make([]Encoding, 0, a.used+need)
	a.huffs = make([]huffman, 0, a.used+need)
}

// maxTransformDepth bounds how deep CRAM 4.0's transforms nest (htslib
// sets no bound; its writers nest none).
const maxTransformDepth = 4

// maxParts is the most Encodings one top-level encoding holds: a
// BYTE_ARRAY_LEN and its two parts, which cannot nest further.
const maxParts = 3

func (a *encodings) encoding(id EncodingID) *Encoding {
	if a == nil || len(a.encs) == cap(a.encs) {
		return &Encoding{ID: id}
	}
	a.used++
	a.encs = a.encs[:len(a.encs)+1]
	e := &a.encs[len(a.encs)-1]
	*e = Encoding{ID: id}
	return e
}

func (a *encodings) huffman() *huffman {
	if a == nil || len(a.huffs) == cap(a.huffs) {
		return &huffman{}
	}
	a.huffs = a.huffs[:len(a.huffs)+1]
	h := &a.huffs[len(a.huffs)-1]
	*h = huffman{}
	return h
}

// parseEncoding parses an encoding (id, parameter length, parameters) at
// *pos (CRAMv3 §3, with the parameters of each codec in §13), taking its
// storage from a; r reads the integers as the file's version writes them.
func parseEncoding(b []byte, pos *int, vt valueType, depth int, a *encodings, r varints) (*Encoding, error) {
	id, err := r.u32(b, pos)
	if err != nil {
		return nil, err
	}
	n, err := r.u32(b, pos)
	if err != nil {
		return nil, err
	}
	if n < 0 || int(n) > len(b)-*pos {
		return nil, corruptf("encoding %d: %d parameter bytes, %d remain", id, n, len(b)-*pos)
	}
	params := b[*pos : *pos+int(n)]
	*pos += int(n)
	if EncodingID(id) == EncodingNull {
		return nil, nil
	}
	e := a.encoding(EncodingID(id))
	e.vt = vt
	p := 0
	if err := e.parseParams(params, &p, vt, depth, a, r); err != nil {
		return nil, err
	}
	if p != len(params) && r.v4 && e.ID != EncodingXRLE {
		// htslib 1.16 checks the length of CRAM 4.0's parameters (of
		// all but XRLE's).
		return nil, corruptf("encoding %d: %d parameter bytes, %d read", e.ID, len(params), p)
	}
	if (e.ID == EncodingBeta || e.ID == EncodingSubexp || e.ID == EncodingGamma) && vt.isArray() {
		return nil, corruptf("encoding %d used for a byte array series", e.ID)
	}
	return e, nil
}

// parseParams reads the parameters of e's encoding from params at *p.
func (e *Encoding) parseParams(params []byte, p *int, vt valueType, depth int, a *encodings, r varints) error {
	var err error
	switch e.ID {
	case EncodingExternal:
		if r.v4 && (vt == typeInt || vt == typeLong) {
			// CRAM 4.0 stores integers as VARINT, never as EXTERNAL bytes.
			return corruptf("EXTERNAL used for an integer series in CRAM 4")
		}
		e.ContentID, err = r.u32(params, p)
		return err
	case EncodingHuffman:
		if vt.isArray() {
			return corruptf("HUFFMAN used for a byte array series")
		}
		if vt == typeLong {
			return fmt.Errorf("%w: HUFFMAN for a 64-bit series", ErrUnsupported)
		}
		if e.huff, err = parseHuffman(params, a, r); err != nil {
			return err
		}
		*p = len(params)
	case EncodingByteArrayLen:
		if !vt.isArray() || depth > 0 {
			return corruptf("BYTE_ARRAY_LEN outside a byte array series")
		}
		if e.Len, err = parseEncoding(params, p, typeInt, depth+1, a, r); err != nil {
			return err
		}
		// The bytes are read as the array is: appended to a buffer for
		// names and tags (which CRAM 4.0's transforms care about).
		valVT := typeByte
		if vt == typeByteBlock {
			valVT = typeByteBlock
		}
		if e.Val, err = parseEncoding(params, p, valVT, depth+1, a, r); err != nil {
			return err
		}
		if e.Len == nil || e.Val == nil {
			return corruptf("BYTE_ARRAY_LEN with a NULL sub-encoding")
		}
	case EncodingByteArrayStop:
		if !vt.isArray() {
			return corruptf("BYTE_ARRAY_STOP outside a byte array series")
		}
		if len(params) < 1 {
			return corruptf("BYTE_ARRAY_STOP: no stop byte")
		}
		e.Stop = params[0]
		*p = 1
		e.ContentID, err = r.u32(params, p)
		return err
	case EncodingBeta:
		if e.Offset, err = r.u32(params, p); err != nil {
			return err
		}
		if e.NBits, err = r.u32(params, p); err != nil {
			return err
		}
		if e.NBits < 0 || e.NBits > 32 {
			return corruptf("BETA with %d bits", e.NBits)
		}
	case EncodingSubexp:
		if e.Offset, err = r.u32(params, p); err != nil {
			return err
		}
		if e.K, err = r.u32(params, p); err != nil {
			return err
		}
		if e.K < 0 || e.K > 31 {
			return corruptf("SUBEXP with k=%d", e.K)
		}
	case EncodingGamma:
		e.Offset, err = r.u32(params, p)
		return err
	case EncodingVarintUnsigned, EncodingVarintSigned:
		if !r.v4 {
			return fmt.Errorf("%w: encoding %d before CRAM 4", ErrUnsupported, e.ID)
		}
		return e.parseVarint(params, p, vt, r)
	case EncodingConstByte, EncodingConstInt:
		if !r.v4 {
			return fmt.Errorf("%w: encoding %d before CRAM 4", ErrUnsupported, e.ID)
		}
		return e.parseConst(params, p, vt, r)
	case EncodingXPack, EncodingXRLE, EncodingXDelta:
		if !r.v4 {
			return fmt.Errorf("%w: encoding %d before CRAM 4", ErrUnsupported, e.ID)
		}
		if depth > maxTransformDepth {
			return corruptf("encoding %d nested %d deep", e.ID, depth)
		}
		switch e.ID {
		case EncodingXPack:
			return e.parseXPack(params, p, vt, depth, a, r)
		case EncodingXRLE:
			return e.parseXRLE(params, p, vt, depth, a, r)
		}
		return e.parseXDelta(params, p, vt, depth, a, r)
	default:
		return fmt.Errorf("%w: encoding %d", ErrUnsupported, e.ID)
	}
	return nil
}

// parseHuffman reads the alphabet and code lengths and assigns canonical
// codes in (length, symbol) order (CRAMv3 §13.3), taking its storage from a. Every
// container's compression header has a few dozen codes, so it allocates
// little: the code itself and, for more than one symbol, one block for
// its tables.
func parseHuffman(params []byte, a *encodings, r varints) (*huffman, error) {
	p := 0
	n, err := r.u32(params, &p)
	if err != nil {
		return nil, err
	}
	if n < 0 || int(n) > len(params)-p {
		return nil, corruptf("HUFFMAN: %d symbols in %d bytes", n, len(params)-p)
	}
	// codes holds (length<<32 | symbol with its sign bit flipped): sorted
	// as integers, they are in (length, symbol) order.
	var small [32]uint64
	codes := small[:0]
	if n > int32(len(small)) {
		codes = make([]uint64, 0, n)
	}
	for range n {
		v, err := r.u32(params, &p)
		if err != nil {
			return nil, err
		}
		codes = append(codes, uint64(uint32(v)^1<<31))
	}
	nl, err := r.u32(params, &p)
	if err != nil {
		return nil, err
	}
	if nl != n {
		return nil, corruptf("HUFFMAN: %d symbols, %d code lengths", n, nl)
	}
	h := a.huffman()
	for i := range codes {
		l, err := r.u32(params, &p)
		if err != nil {
			return nil, err
		}
		if l < 0 || l > 31 {
			return nil, corruptf("HUFFMAN: code length %d", l)
		}
		if int(l) >= len(codes) && !(len(codes) == 1 && l == 0) {
			return nil, corruptf("HUFFMAN: code length %d for %d symbols", l, len(codes))
		}
		codes[i] |= uint64(l) << 32
		h.maxLen = max(h.maxLen, l)
	}
	if p != len(params) {
		return nil, corruptf("HUFFMAN: %d parameter bytes unused", len(params)-p)
	}
	if n == 0 {
		// An empty alphabet parses, and fails when read (decode). count
		// has its length-0 entry, zero, so that the one-symbol tests of
		// decodeInt and appendArray see no constant.
		h.count = h.one[:1]
		return h, nil
	}
	slices.Sort(codes)
	// maxLen < n (checked above), so each table has at most n entries.
	tables := h.one[:]
	if n > 1 {
		tables = make([]int32, int(n)+3*int(h.maxLen+1))
	}
	k := int(h.maxLen + 1)
	h.symbols = tables[:n:n]
	h.first = tables[n : int(n)+k : int(n)+k]
	h.count = tables[int(n)+k : int(n)+2*k : int(n)+2*k]
	h.index = tables[int(n)+2*k : int(n)+3*k]
	val, lastLen := int64(-1), int32(0)
	for i, c := range codes {
		sym, l := int32(uint32(c)^1<<31), int32(c>>32)
		val++
		if l > lastLen {
			val <<= uint(l - lastLen)
			lastLen = l
		}
		if val >= int64(1)<<uint(l) && l > 0 {
			return nil, corruptf("HUFFMAN: code lengths over-subscribe the code space")
		}
		if h.count[l] == 0 {
			h.first[l] = int32(val)
			h.index[l] = int32(i)
		}
		h.count[l]++
		h.symbols[i] = sym
	}
	return h, nil
}

// decode reads one symbol (CRAMv3 §13.3).
func (h *huffman) decode(br *bitReader) (int32, error) {
	if len(h.symbols) == 0 {
		return 0, corruptf("HUFFMAN with an empty alphabet used")
	}
	if h.count[0] > 0 {
		return h.symbols[0], nil
	}
	code := int32(0)
	for l := int32(1); l <= h.maxLen; l++ {
		bit, err := br.readBit()
		if err != nil {
			return 0, err
		}
		code = code<<1 | int32(bit)
		if d := code - h.first[l]; h.count[l] > 0 && d >= 0 && d < h.count[l] {
			return h.symbols[h.index[l]+d], nil
		}
	}
	return 0, corruptf("HUFFMAN: no code matches the bits read")
}

// decodeInt reads one integer value of the series: EXTERNAL (CRAMv3
// §13.2), HUFFMAN (§13.3), BETA (§13.5), SUBEXP (§13.6) or GAMMA (§13.7).
func (e *Encoding) decodeInt(s *streams) (int32, error) {
	switch e.ID {
	case EncodingExternal:
		// The most frequent call of the record loop: intFast's one-byte
		// case first.
		if v, ok := e.intFast(s); ok {
			return v, nil
		}
		x, err := e.stream(s)
		if err != nil {
			return 0, err
		}
		if v, ok := x.itf8(); ok {
			return v, nil
		}
		return x.readITF8Long()
	case EncodingHuffman:
		if h := e.huff; h.count[0] > 0 {
			// One symbol: a constant, read with no bits.
			return h.symbols[0], nil
		}
		return e.huff.decode(&s.core)
	case EncodingVarintUnsigned, EncodingVarintSigned:
		return e.varint32(s)
	case EncodingConstByte, EncodingConstInt:
		return e.const32(), nil
	case EncodingXPack:
		return e.xpackInt(s)
	case EncodingXDelta:
		return e.xdeltaInt(s)
	case EncodingXRLE:
		return 0, fmt.Errorf("%w: XRLE of an integer series (htslib 1.16 fails it)", ErrUnsupported)
	case EncodingBeta:
		v, err := s.core.readBits(int(e.NBits))
		return int32(v) - e.Offset, err
	case EncodingSubexp:
		u := 0
		for {
			bit, err := s.core.readBit()
			if err != nil {
				return 0, err
			}
			if bit == 0 {
				break
			}
			u++
			if u > 32 {
				return 0, corruptf("SUBEXP: unary prefix too long")
			}
		}
		var v uint32
		if u == 0 {
			x, err := s.core.readBits(int(e.K))
			if err != nil {
				return 0, err
			}
			v = x
		} else {
			b := u + int(e.K) - 1
			if b > 31 {
				return 0, corruptf("SUBEXP: %d bits", b)
			}
			x, err := s.core.readBits(b)
			if err != nil {
				return 0, err
			}
			v = 1<<uint(b) | x
		}
		return int32(v) - e.Offset, nil
	case EncodingGamma:
		n := 0
		for {
			bit, err := s.core.readBit()
			if err != nil {
				return 0, err
			}
			if bit == 1 {
				break
			}
			n++
			if n > 31 {
				return 0, corruptf("GAMMA: prefix too long")
			}
		}
		x, err := s.core.readBits(n)
		if err != nil {
			return 0, err
		}
		return int32(uint32(1)<<uint(n)|x) - e.Offset, nil
	}
	return 0, corruptf("encoding %d cannot decode an integer", e.ID)
}

// decodeLong reads one value of a 64-bit series (CRAM 4.0's AP, NP and
// TS): VARINT and CONST in 64 bits, the bit codecs as for 32.
func (e *Encoding) decodeLong(s *streams) (int64, error) {
	switch e.ID {
	case EncodingVarintUnsigned, EncodingVarintSigned:
		return e.varint64(s)
	case EncodingConstByte:
		return int64(e.constByte()), nil
	case EncodingConstInt:
		return e.Base, nil
	case EncodingXDelta:
		return 0, fmt.Errorf("%w: XDELTA of a 64-bit series (htslib 1.16 fails it)", ErrUnsupported)
	}
	v, err := e.decodeInt(s)
	return int64(v), err
}

// decodeByte reads one byte value of the series.
func (e *Encoding) decodeByte(s *streams) (byte, error) {
	switch e.ID {
	case EncodingXPack, EncodingXRLE, EncodingXDelta:
		var one [1]byte
		b, err := e.appendBytes(s, one[:0], 1)
		if err != nil {
			return 0, err
		}
		return b[0], nil
	}
	if e.ID == EncodingExternal {
		if v, ok := e.byteFast(s); ok {
			return v, nil
		}
		x, err := e.stream(s)
		if err != nil {
			return 0, err
		}
		return x.readByte()
	}
	v, err := e.decodeInt(s)
	return byte(v), err
}

// byteFast reads one value of an EXTERNAL byte series from the block
// found earlier in the slice, small enough to inline at the record
// loop's call sites; ok is false in every other case (another encoding,
// the block not yet found, its end), which decodeByte then handles.
func (e *Encoding) byteFast(s *streams) (v byte, ok bool) {
	x := e.x
	if x == nil || e.xGen != s.gen || e.ID != EncodingExternal || x.pos >= len(x.data) {
		return 0, false
	}
	v = x.data[x.pos]
	x.pos++
	return v, true
}

// intFast is byteFast for an integer series: a one-byte ITF-8 value
// (below 128) from EXTERNAL; decodeInt handles every other case.
func (e *Encoding) intFast(s *streams) (v int32, ok bool) {
	x := e.x
	if x == nil || e.xGen != s.gen || e.ID != EncodingExternal || x.pos >= len(x.data) || x.data[x.pos] >= 0x80 {
		return 0, false
	}
	v = int32(x.data[x.pos])
	x.pos++
	return v, true
}

// appendBytes appends n byte values of the series to dst. Zero values
// need no block: a writer leaves out the block of a series that no record
// of the slice reads (htslib accepts that too).
func (e *Encoding) appendBytes(s *streams, dst []byte, n int) ([]byte, error) {
	if e.ID == EncodingExternal {
		if n == 0 {
			return dst, nil
		}
		x, err := e.stream(s)
		if err != nil {
			return dst, err
		}
		b, err := x.readN(n)
		if err != nil {
			return dst, err
		}
		return append(dst, b...), nil
	}
	if c, ok := e.constant(); ok {
		for i := 0; i < n; i++ {
			dst = append(dst, c)
		}
		return dst, nil
	}
	switch e.ID {
	case EncodingXPack:
		return e.xpackBytes(s, dst, n)
	case EncodingXRLE:
		return e.readExpanded(s, dst, n)
	case EncodingXDelta:
		if e.vt != typeByteBlock {
			return dst, fmt.Errorf("%w: XDELTA of a byte series (htslib 1.16 fails it)", ErrUnsupported)
		}
		return e.xdeltaArray(s, dst, n)
	}
	for i := 0; i < n; i++ {
		c, err := e.decodeByte(s)
		if err != nil {
			return dst, err
		}
		dst = append(dst, c)
	}
	return dst, nil
}

// constant returns the byte every value of a byte series is when the
// encoding reads nothing: a one-symbol HUFFMAN code or a CONST.
func (e *Encoding) constant() (byte, bool) {
	switch {
	case e.ID == EncodingConstByte || e.ID == EncodingConstInt:
		return e.constByte(), true
	case e.ID == EncodingHuffman && len(e.huff.count) > 0 && e.huff.count[0] > 0:
		return byte(e.huff.symbols[0]), true
	}
	return 0, false
}

// appendArray appends one byte-array value of the series to dst:
// BYTE_ARRAY_LEN or BYTE_ARRAY_STOP (CRAMv3 §13.4), or one EXTERNAL byte.
func (e *Encoding) appendArray(s *streams, dst []byte) ([]byte, error) {
	switch e.ID {
	case EncodingByteArrayLen:
		if l := e.Len; l.ID == EncodingHuffman && l.huff.count[0] > 0 && e.Val.ID == EncodingExternal {
			// A constant length (a one-symbol code, read with no bits)
			// of bytes from one external block: how CRAM writers store
			// integer tags. appendBytes checks the length.
			return e.Val.appendBytes(s, dst, int(l.huff.symbols[0]))
		}
		n, err := e.Len.decodeInt(s)
		if err != nil {
			return dst, err
		}
		if n < 0 {
			return dst, corruptf("BYTE_ARRAY_LEN: length %d", n)
		}
		if int(n) > s.maxArray {
			return dst, corruptf("BYTE_ARRAY_LEN: length %d exceeds the slice's data", n)
		}
		return e.Val.appendBytes(s, dst, int(n))
	case EncodingByteArrayStop:
		x, err := e.stream(s)
		if err != nil {
			return dst, err
		}
		b, err := x.readUntil(e.Stop)
		if err != nil {
			return dst, err
		}
		return append(dst, b...), nil
	case EncodingExternal, EncodingXPack, EncodingXRLE, EncodingXDelta:
		return e.appendBytes(s, dst, 1)
	}
	return dst, corruptf("encoding %d cannot decode a byte array", e.ID)
}
