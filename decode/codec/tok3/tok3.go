// Package tok3 decodes the CRAM 3.1 name tokeniser codec (block method 8,
// CRAMcodecs "Name tokenisation codec"): read names split into typed
// tokens whose values live in per-position, per-type byte streams, each
// compressed with rANS Nx16 or the adaptive arithmetic coder.
//
// Where the specification leaves a case open, the decoder follows the
// behaviour of htscodecs 1.3 (the codec library of samtools 1.16.1), so that
// what the reference decodes decodes to the same bytes here: DIGITS 0 prints
// nothing, a DIGITS0 value wider than its length overflows into the first
// digit, unknown token types end a name, fewer names than declared are
// accepted, and DELTA adds to any token's number.
//
// Deliberate differences, all on malformed input: a stream's compressed
// bytes are exactly its clen (htscodecs lets a codec read on into the next
// streams); a duplicate-stream reference may end the input (htscodecs
// rejects it); output beyond uncomp_length or rawSize is an error
// (htscodecs tolerates about 1 KiB more); cases where htscodecs prints
// uninitialised memory (DIGITS0 length over 9, DELTA on a NOP, DELTA0 on a
// token that is not DIGITS0) are errors; and a stream that declares more
// decoded bytes than the names could consume is an error.
package tok3

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"
)

// MaxSize is the largest decoded name buffer, in bytes, that AppendDecode accepts
// (CRAMcodecs "Name tokenisation codec", uncomp_length).
const MaxSize = 1 << 30

// ErrCorrupt reports a malformed or unsupported name tokeniser stream.
var ErrCorrupt = errors.New("tok3: corrupt stream")

// Limits on the serialised form (CRAMcodecs "Name tokenisation codec").
const (
	headerSize = 9       // uncomp_length, num_reads, use_arith
	maxTokens  = 128     // token positions, including position 0
	maxNames   = 1e7     // largest num_reads, as htscodecs allows
	numTypes   = 16      // stream slots per token position
	budgetPad  = 1 << 12 // slack in the decoded token stream budget
)

// Token type identifiers (CRAMcodecs "Name tokenisation codec", token IDs).
const (
	tokType    = 0  // TYPE: the type stream of a position
	tokString  = 1  // STRING (ALPHA): NUL-terminated string
	tokChar    = 2  // CHAR: one byte
	tokDigits0 = 3  // DIGITS0: number with leading zeros
	tokDZLen   = 4  // DZLEN: length of the DIGITS0 token
	tokDup     = 5  // DUP: whole name duplicates an earlier one
	tokDiff    = 6  // DIFF: name is a delta to an earlier one
	tokDigits  = 7  // DIGITS: number without leading zeros
	tokDelta   = 8  // DELTA: DIGITS of the previous name plus a byte
	tokDelta0  = 9  // DELTA0: DIGITS0 of the previous name plus a byte
	tokMatch   = 10 // MATCH: same token as the previous name
	tokNOP     = 11 // NOP: no output
	tokEnd     = 12 // END: end of name
)

// Flags of the ttype byte in the serialised stream list.
const (
	flagDup    = 64  // stream duplicates an earlier one
	flagNewPos = 128 // stream starts the next token position
)

// stream is one token byte stream B[pos,type] with its read cursor.
// An implicit stream (the type stream elided by the encoder) is one type
// byte followed by MATCH, n bytes in all, and is never materialised.
type stream struct {
	data    []byte
	pos     int
	off     int // offset of data in the decoder's arena
	n       int // length of data, or of an implicit stream
	first   byte
	present bool
	implied bool
}

// byte1 returns the next byte of s.
func (s *stream) byte1() (byte, bool) {
	if s.pos < len(s.data) {
		b := s.data[s.pos]
		s.pos++
		return b, true
	}
	return s.byte1Slow()
}

// byte1Slow is byte1 for implicit and exhausted streams.
func (s *stream) byte1Slow() (byte, bool) {
	if !s.implied || s.pos >= s.n {
		return 0, false
	}
	s.pos++
	if s.pos == 1 {
		return s.first, true
	}
	return tokMatch, true
}

// uint32le returns the next four bytes of s as a little-endian integer.
func (s *stream) uint32le() (uint32, bool) {
	if len(s.data)-s.pos >= 4 {
		v := binary.LittleEndian.Uint32(s.data[s.pos:])
		s.pos += 4
		return v, true
	}
	return s.uint32leSlow()
}

// uint32leSlow is uint32le for implicit and nearly exhausted streams.
func (s *stream) uint32leSlow() (uint32, bool) {
	if !s.implied {
		return 0, false
	}
	var v uint32
	for i := range 4 {
		b, ok := s.byte1Slow()
		if !ok {
			return 0, false
		}
		v |= uint32(b) << (8 * i)
	}
	return v, true
}

// token is one decoded token of a name, as later names see it through
// MATCH, DELTA and DELTA0.
type token struct {
	typ uint8  // tokString, tokChar, tokDigits, tokDigits0 or tokNOP
	dz  uint8  // DIGITS0 width
	val uint32 // number, character (sign-extended), or string length
	off uint32 // offset of a string in the output
}

// name records where a decoded name's bytes and tokens are.
type name struct {
	off    uint32 // offset of the name in the output
	size   uint32 // length without the terminating NUL
	tok    uint32 // index of its position-1 token in the token table
	endPos uint8  // position of its END token; 0 when it has none
}

// AppendDecode decodes one name tokeniser stream (CRAMcodecs "Name
// tokenisation codec", DecodeNames) and appends the NUL-terminated names to
// dst, returning the extended slice; it allocates only when dst lacks the
// capacity. rawSize is the expected decoded length (CRAM block raw size)
// or -1 when unknown; a decoded length that differs from it is an error.
// The result never aliases src. On error the returned slice is unspecified.
func AppendDecode(dst, src []byte, rawSize int) ([]byte, error) {
	d, err := newDecoder(src, rawSize)
	if err != nil {
		return dst, err
	}
	defer d.release()
	start := len(dst)
	out, err := d.decodeNames(dst, len(src))
	if err != nil {
		return out, err
	}
	if rawSize >= 0 && len(out)-start != rawSize {
		return out, fmt.Errorf("%w: decoded %d bytes, block raw size is %d", ErrCorrupt, len(out)-start, rawSize)
	}
	return out, nil
}

// newDecoder checks the header of the name tokeniser stream src against
// rawSize (the block's raw size, -1 when unknown) and returns a pooled
// decoder with its token streams read, to be released by the caller.
func newDecoder(src []byte, rawSize int) (*decoder, error) {
	if rawSize > MaxSize {
		return nil, fmt.Errorf("%w: raw size %d exceeds limit %d", ErrCorrupt, rawSize, MaxSize)
	}
	if len(src) < headerSize {
		return nil, fmt.Errorf("%w: %d-byte stream is shorter than the %d-byte header", ErrCorrupt, len(src), headerSize)
	}
	ulen := binary.LittleEndian.Uint32(src[0:])
	nreads := binary.LittleEndian.Uint32(src[4:])
	useArith := src[8] != 0
	if ulen > MaxSize {
		return nil, fmt.Errorf("%w: uncompressed length %d exceeds limit %d", ErrCorrupt, ulen, MaxSize)
	}
	if nreads == 0 || nreads > maxNames {
		return nil, fmt.Errorf("%w: name count %d outside 1..%d", ErrCorrupt, nreads, int(maxNames))
	}
	limit := int(ulen)
	if rawSize >= 0 && rawSize < limit {
		limit = rawSize
	}
	d := decoderPool.Get().(*decoder)
	d.nreads, d.limit, d.declared = int(nreads), limit, int(ulen)
	if err := d.readStreams(src, useArith); err != nil {
		d.release()
		return nil, err
	}
	return d, nil
}

// decoder holds the state of one Decode call. decoders are recycled
// through decoderPool with their buffers; each call sets what it reads.
type decoder struct {
	nreads int
	limit  int // largest output length
	// declared is the stream's own decoded length (its header), which
	// bounds the token streams and the token table: those bounds must
	// not depend on the caller's raw size, or a stream that decodes with
	// an unknown size could fail with the size it decodes to.
	declared int
	streams  []stream // B[pos,type] at index pos*16+type
	arena    []byte   // the decoded token streams, one after another
	out      []byte   // the names decoded so far
	names    []name
	tokens   []token
	col      colState // AppendLengths' column-by-column measuring
}

// decoderPool recycles decoders and their buffers between calls.
var decoderPool = sync.Pool{New: func() any { return new(decoder) }}

// maxPooled is the largest buffer, in bytes, a decoder keeps when it
// returns to the pool.
const maxPooled = 64 << 20

// release drops the decoder's references to the caller's data and to
// oversized buffers, and returns it to the pool.
func (d *decoder) release() {
	d.out = nil
	for i := range d.streams {
		d.streams[i] = stream{}
	}
	if cap(d.arena) > maxPooled {
		d.arena = nil
	}
	if cap(d.names) > maxPooled/16 {
		d.names = nil
	}
	if cap(d.tokens) > maxPooled/16 {
		d.tokens = nil
	}
	if cap(d.col.cur) > maxPooled/16 {
		d.col = colState{}
	}
	decoderPool.Put(d)
}

// readStreams parses and decompresses the token byte streams that follow
// the header (CRAMcodecs "Name tokenisation codec", DecodeTokenByteStreams).
func (d *decoder) readStreams(src []byte, useArith bool) error {
	// Position 0 always exists, as in htscodecs, so that a stream list
	// without positions decodes to no names.
	if cap(d.streams) < 4*numTypes {
		d.streams = make([]stream, numTypes, 4*numTypes)
	}
	d.streams = d.streams[:numTypes]
	clear(d.streams)
	d.arena = d.arena[:0]
	// A name reads at most one token per position, a token at most five
	// value bytes besides its type byte, and every token but NOP yields
	// output: the streams together never need more than this.
	budget := 8*(int64(d.declared)+int64(d.nreads)) + budgetPad
	tnum := -1
	o := headerSize
	for o < len(src) {
		at := o
		ttype := src[o]
		o++
		typ := int(ttype & 15)
		if ttype&flagNewPos != 0 {
			tnum++
			if tnum >= maxTokens {
				return fmt.Errorf("%w: more than %d token positions at offset %d", ErrCorrupt, maxTokens, at)
			}
			if need := (tnum + 1) * numTypes; need > len(d.streams) {
				d.streams = slices.Grow(d.streams, need-len(d.streams))[:need]
				clear(d.streams[need-numTypes:])
			}
		}
		if tnum < 0 {
			return fmt.Errorf("%w: token stream type %d before the first position at offset %d", ErrCorrupt, ttype, at)
		}
		if ttype&flagNewPos != 0 && typ != tokType {
			// The type stream of this position was elided: it is this
			// type once, then MATCH for every later name.
			d.streams[tnum*numTypes] = stream{present: true, implied: true, first: byte(typ), n: d.nreads}
		}
		i := tnum*numTypes + typ

		if ttype&flagDup != 0 {
			if len(src)-o < 2 {
				return fmt.Errorf("%w: duplicate stream reference truncated at offset %d", ErrCorrupt, at)
			}
			j := int(src[o])<<4 + int(src[o+1])
			o += 2
			if j >= i || !d.streams[j].present {
				return fmt.Errorf("%w: stream %d/%d duplicates missing stream %d/%d at offset %d",
					ErrCorrupt, tnum, typ, j>>4, j&15, at)
			}
			s := d.streams[j]
			s.pos = 0
			d.streams[i] = s
			continue
		}

		clen, nb, ok := uint7(src[o:])
		if !ok {
			return fmt.Errorf("%w: bad compressed length of stream %d/%d at offset %d", ErrCorrupt, tnum, typ, o)
		}
		o += nb
		if clen > uint64(len(src)-o) {
			return fmt.Errorf("%w: stream %d/%d claims %d compressed bytes, %d remain at offset %d",
				ErrCorrupt, tnum, typ, clen, len(src)-o, o)
		}
		cdata := src[o : o+int(clen)]
		size, err := innerSize(cdata)
		if err != nil {
			return fmt.Errorf("%w: stream %d/%d at offset %d: %w", ErrCorrupt, tnum, typ, o, err)
		}
		if max := d.streamCap(); int64(size) > max || int64(size) > budget {
			return fmt.Errorf("%w: stream %d/%d claims %d decoded bytes, at most %d usable (%d left in budget), at offset %d",
				ErrCorrupt, tnum, typ, size, max, budget, o)
		}
		// The stream is decoded onto the arena; data is set once all are.
		off := len(d.arena)
		arena, err := appendEntropy(d.arena, useArith, cdata, int(size))
		if err != nil {
			return fmt.Errorf("%w: stream %d/%d at offset %d: %w", ErrCorrupt, tnum, typ, o, err)
		}
		d.arena = arena
		if len(arena)-off != int(size) {
			return fmt.Errorf("%w: stream %d/%d decoded to %d bytes, expected %d, at offset %d",
				ErrCorrupt, tnum, typ, len(arena)-off, size, o)
		}
		budget -= int64(size)
		d.streams[i] = stream{off: off, n: int(size), present: true}
		o += int(clen)
	}
	for i := range d.streams {
		if s := &d.streams[i]; s.present && !s.implied {
			s.data = d.arena[s.off : s.off+s.n]
		}
	}
	return nil
}

// streamCap returns the most bytes a single stream can usefully supply: a
// name reads at most one token per position, so at most four value bytes
// (numbers, distances) or a string no longer than the output plus its NUL.
func (d *decoder) streamCap() int64 {
	n := int64(d.nreads)
	return max(4*n, int64(d.declared)+n)
}

// uint7 reads a CRAM 3.1 uint7 (big-endian groups of 7 bits, high bit set
// on all but the last byte; CRAMcodecs "ReadUint7") of at most 32 bits.
func uint7(b []byte) (v uint64, n int, ok bool) {
	for n < len(b) && n < 5 {
		c := b[n]
		n++
		v = v<<7 | uint64(c&127)
		if c < 128 {
			return v, n, v <= 0xFFFFFFFF
		}
	}
	return 0, n, false
}

// innerSize returns the decoded size that a compressed token stream
// declares: the uint7 after its rANS Nx16 or arithmetic coder flag byte.
// As in htscodecs, a stream too short to hold one declares size 0, and a
// size cut short by the end of the stream is taken as read so far.
func innerSize(cdata []byte) (uint64, error) {
	if len(cdata) < 2 {
		return 0, nil
	}
	var v uint64
	for i, c := range cdata[1:] {
		if i == 5 {
			return 0, errors.New("decoded size longer than 5 bytes")
		}
		v = v<<7 | uint64(c&127)
		if c < 128 {
			break
		}
	}
	if v > 0xFFFFFFFF {
		return 0, errors.New("decoded size exceeds 32 bits")
	}
	return v, nil
}

// decodeNames decodes every name from the token streams
// (CRAMcodecs "Name tokenisation codec", DecodeNames) and appends them to
// dst.
func (d *decoder) decodeNames(dst []byte, srcLen int) ([]byte, error) {
	// Initial capacities: what the declared sizes need, but no more than
	// a generous compression ratio of the input allows; beyond that the
	// buffers grow with the data actually decoded. The names are
	// appended to an empty slice over dst's spare capacity, so that
	// offsets start at 0; finish joins them to dst.
	ratio := 32*srcLen + 1024
	if c := min(d.limit, ratio); cap(dst)-len(dst) < c {
		dst = slices.Grow(dst, c)
	}
	d.out = dst[len(dst):]
	if c := min(d.nreads, d.limit, ratio/8); cap(d.names) < c {
		d.names = make([]name, 0, c)
	}
	d.names = d.names[:0]
	// Names seen so far use about one token per two to four bytes.
	// A name stores at most one token per position after the first.
	npos := len(d.streams) / numTypes
	if c := min(d.limit/2, ratio/2, d.nreads*(npos-1)) + 16; cap(d.tokens) < c {
		d.tokens = make([]token, 0, c)
	}
	d.tokens = d.tokens[:0]
	// Without NOP tokens every token yields at least one byte; allow
	// some NOPs, but keep the table proportional to the output.
	tokenLimit := 2*d.declared + 1024

	lead := &d.streams[0]
	for {
		t0, ok := lead.byte1()
		// As in htscodecs, the names end when the position-0 type stream
		// does, or at a type byte beyond the last stream slot.
		if !ok || int(t0) >= len(d.streams) {
			return d.finish(dst), nil
		}
		cnum := len(d.names)
		if cnum >= d.nreads {
			return dst, fmt.Errorf("%w: more names than the %d declared", ErrCorrupt, d.nreads)
		}
		dist, ok := d.streams[t0].uint32le()
		if !ok {
			return dst, fmt.Errorf("%w: name %d: distance stream %d exhausted", ErrCorrupt, cnum, t0)
		}
		if uint64(dist) > uint64(cnum) {
			return dst, fmt.Errorf("%w: name %d refers %d names back", ErrCorrupt, cnum, dist)
		}
		pnum := cnum - int(dist)
		if t0 == tokDup {
			if err := d.dupName(cnum, pnum); err != nil {
				return dst, err
			}
			continue
		}
		if err := d.diffName(cnum, pnum); err != nil {
			return dst, err
		}
		if len(d.tokens) > tokenLimit {
			return dst, fmt.Errorf("%w: %d tokens for at most %d output bytes", ErrCorrupt, len(d.tokens), d.limit)
		}
	}
}

// finish returns dst extended by the decoded names: in place when they
// were decoded into dst's spare capacity, by a copy when they outgrew it.
func (d *decoder) finish(dst []byte) []byte {
	n := len(d.out)
	if n == 0 {
		return dst
	}
	if cap(dst)-len(dst) >= n && &dst[:len(dst)+n][len(dst)] == &d.out[0] {
		return dst[:len(dst)+n]
	}
	return append(dst, d.out...)
}

// overflow reports output beyond the declared length.
func (d *decoder) overflow(cnum int) error {
	return fmt.Errorf("%w: name %d: output exceeds %d bytes", ErrCorrupt, cnum, d.limit)
}

// dupName appends a copy of name pnum as name cnum (token type DUP).
func (d *decoder) dupName(cnum, pnum int) error {
	if pnum == cnum {
		return fmt.Errorf("%w: name %d duplicates itself", ErrCorrupt, cnum)
	}
	p := d.names[pnum]
	body := d.out[p.off : p.off+p.size]
	// htscodecs copies the earlier name as a C string: up to its first
	// NUL (a CHAR token may have put one inside).
	if k := bytes.IndexByte(body, 0); k >= 0 {
		body = body[:k]
	}
	if len(body) >= d.limit-len(d.out) {
		return d.overflow(cnum)
	}
	off := len(d.out)
	d.out = append(d.out, body...)
	d.out = append(d.out, 0)
	d.names = append(d.names, name{off: uint32(off), size: uint32(len(body)), tok: p.tok, endPos: p.endPos})
	return nil
}

// diffName decodes name cnum token by token against name pnum
// (CRAMcodecs "Name tokenisation codec", DecodeSingleName).
func (d *decoder) diffName(cnum, pnum int) error {
	var prev []token // tokens of pnum at positions 1..END-1
	if pnum != cnum {
		p := d.names[pnum]
		if p.endPos > 1 {
			prev = d.tokens[p.tok : p.tok+uint32(p.endPos)-1]
		}
	}
	// Work on local slices; they are stored back when the name is done.
	out, toks := d.out, d.tokens
	start, tokStart := len(out), len(toks)
	npos := len(d.streams) / numTypes
	for ntok := 1; ntok < maxTokens && ntok < npos; ntok++ {
		base := ntok * numTypes
		typ, ok := d.streams[base].byte1()
		if !ok {
			typ = tokEnd // an exhausted or absent type stream ends the name
		}
		var tk token
		switch typ {
		case tokChar:
			c, ok := d.streams[base+tokChar].byte1()
			if !ok {
				return d.exhausted(cnum, ntok, tokChar)
			}
			if len(out) >= d.limit {
				return d.overflow(cnum)
			}
			out = append(out, c)
			tk = token{typ: tokChar, val: uint32(int32(int8(c)))} // a C char's value

		case tokString:
			s := &d.streams[base+tokString]
			var rest []byte
			if s.pos < len(s.data) {
				rest = s.data[s.pos:]
			}
			if len(rest) == 0 {
				return d.exhausted(cnum, ntok, tokString)
			}
			k := bytes.IndexByte(rest, 0)
			if k < 0 {
				// As htscodecs: a string cut short by the end of its
				// stream loses its last byte.
				k = len(rest) - 1
			}
			if k > d.limit-len(out) {
				return d.overflow(cnum)
			}
			s.pos += k + 1
			tk = token{typ: tokString, val: uint32(k), off: uint32(len(out))}
			out = append(out, rest[:k]...)

		case tokDigits0:
			dz, ok := d.streams[base+tokDZLen].byte1()
			if !ok {
				return d.exhausted(cnum, ntok, tokDZLen)
			}
			v, ok := d.streams[base+tokDigits0].uint32le()
			if !ok {
				return d.exhausted(cnum, ntok, tokDigits0)
			}
			tk = token{typ: tokDigits0, val: v, dz: dz}

		case tokDelta0:
			pt, err := prevToken(prev, cnum, ntok)
			if err != nil {
				return err
			}
			delta, ok := d.streams[base+tokDelta0].byte1()
			if !ok {
				return d.exhausted(cnum, ntok, tokDelta0)
			}
			if pt.typ != tokDigits0 {
				return fmt.Errorf("%w: name %d position %d: DELTA0 against token type %d", ErrCorrupt, cnum, ntok, pt.typ)
			}
			tk = token{typ: tokDigits0, val: pt.val + uint32(delta), dz: pt.dz}

		case tokDigits:
			v, ok := d.streams[base+tokDigits].uint32le()
			if !ok {
				return d.exhausted(cnum, ntok, tokDigits)
			}
			tk = token{typ: tokDigits, val: v}

		case tokDelta:
			pt, err := prevToken(prev, cnum, ntok)
			if err != nil {
				return err
			}
			delta, ok := d.streams[base+tokDelta].byte1()
			if !ok {
				return d.exhausted(cnum, ntok, tokDelta)
			}
			// The specification wants DIGITS here; htscodecs adds to the
			// number of any token that has one (a character's signed
			// value, a string's length). NOP has none.
			if pt.typ == tokNOP {
				return fmt.Errorf("%w: name %d position %d: DELTA against token type %d", ErrCorrupt, cnum, ntok, pt.typ)
			}
			tk = token{typ: tokDigits, val: pt.val + uint32(delta)}

		case tokNOP:
			tk = token{typ: tokNOP}

		case tokMatch:
			pt, err := prevToken(prev, cnum, ntok)
			if err != nil {
				return err
			}
			switch pt.typ {
			case tokChar:
				if len(out) >= d.limit {
					return d.overflow(cnum)
				}
				out = append(out, byte(pt.val))
				tk = pt
			case tokString:
				if int(pt.val) > d.limit-len(out) {
					return d.overflow(cnum)
				}
				tk = token{typ: tokString, val: pt.val, off: uint32(len(out))}
				out = append(out, out[pt.off:pt.off+pt.val]...)
			case tokDigits, tokDigits0:
				tk = pt
			default:
				return fmt.Errorf("%w: name %d position %d: MATCH against token type %d", ErrCorrupt, cnum, ntok, pt.typ)
			}

		default:
			// END, and as in htscodecs any type without a meaning here.
			if len(out) >= d.limit {
				return d.overflow(cnum)
			}
			out = append(out, 0)
			d.names = append(d.names, name{
				off:    uint32(start),
				size:   uint32(len(out) - start - 1),
				tok:    uint32(tokStart),
				endPos: uint8(ntok),
			})
			d.out, d.tokens = out, toks
			return nil
		}

		// Numbers are printed here, for read and matched tokens alike.
		switch tk.typ {
		case tokDigits:
			// DIGITS: decimal without leading zeros; like htscodecs,
			// the value 0 prints nothing.
			n := decimalWidth(tk.val)
			if n > d.limit-len(out) {
				return d.overflow(cnum)
			}
			out = append(out, make([]byte, n)...)
			putDecimal(out[len(out)-n:], tk.val)
		case tokDigits0:
			// DIGITS0: exactly dz digits (CRAMcodecs "LeftPadNumber").
			// Like htscodecs, a value wider than that puts its excess
			// into the first character, as '0' plus the quotient.
			if tk.dz > 9 {
				return fmt.Errorf("%w: name %d position %d: DIGITS0 length %d exceeds 9", ErrCorrupt, cnum, ntok, tk.dz)
			}
			if int(tk.dz) > d.limit-len(out) {
				return d.overflow(cnum)
			}
			if dz := int(tk.dz); dz > 0 {
				p := pow10[dz-1]
				out = append(out, byte(tk.val/p+'0'))
				out = append(out, make([]byte, dz-1)...)
				putDecimal(out[len(out)-(dz-1):], tk.val%p)
			}
		}
		toks = append(toks, tk)
	}
	return fmt.Errorf("%w: name %d has no END token within %d positions", ErrCorrupt, cnum, npos)
}

// prevToken returns the token at position ntok of the previous name.
func prevToken(prev []token, cnum, ntok int) (token, error) {
	if ntok-1 >= len(prev) {
		return token{}, fmt.Errorf("%w: name %d position %d: previous name has only %d tokens",
			ErrCorrupt, cnum, ntok, len(prev))
	}
	return prev[ntok-1], nil
}

// exhausted reports a value stream that ran out.
func (d *decoder) exhausted(cnum, ntok, typ int) error {
	return fmt.Errorf("%w: name %d position %d: stream of type %d exhausted", ErrCorrupt, cnum, ntok, typ)
}

// decimalWidth returns the number of decimal digits of v, 0 for 0.
func decimalWidth(v uint32) int {
	// log10(2) is about 1233/4096: n is the width or one less, at most 9.
	n := bits.Len32(v) * 1233 >> 12
	if v >= widthSteps[n&15] {
		n++ // a condition code, not a branch: the values are random
	}
	return n
}

// widthSteps holds 10^k for k up to 9, then values no uint32 reaches.
var widthSteps = [16]uint32{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000,
	1<<32 - 1, 1<<32 - 1, 1<<32 - 1, 1<<32 - 1, 1<<32 - 1, 1<<32 - 1}

// digitPairs holds "00" to "99", two bytes each.
const digitPairs = "0001020304050607080910111213141516171819" +
	"2021222324252627282930313233343536373839" +
	"4041424344454647484950515253545556575859" +
	"6061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// putDecimal writes v into b as exactly len(b) decimal digits, with
// leading zeros; v must be below 10^len(b).
func putDecimal(b []byte, v uint32) {
	i := len(b)
	for i >= 2 {
		q := v / 100
		r := (v - q*100) * 2
		i -= 2
		b[i], b[i+1] = digitPairs[r], digitPairs[r+1]
		v = q
	}
	if i == 1 {
		b[0] = byte(v) + '0'
	}
}

// pow10 holds 10^k for the widths a DIGITS0 token may have.
var pow10 = [10]uint32{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000}
