package tok3

import (
	"bytes"
	"errors"
	"fmt"
)

// ErrNUL reports, from AppendLengths, a name holding a NUL byte (from a
// CHAR or DIGITS0 token): the lengths then do not split AppendDecode's
// output at its NULs, so the caller must decode the names themselves.
var ErrNUL = errors.New("tok3: a name holds a NUL byte")

// AppendLengths decodes one name tokeniser stream as AppendDecode does but
// appends to dst the length of each name (without its terminating NUL)
// instead of the names. It reads every token and checks what AppendDecode
// checks, failing where AppendDecode fails, but writes no name bytes: a caller that needs only the names' lengths (the
// layout of BAM records) saves their assembly. A name holding a NUL is an
// ErrNUL error.
func AppendLengths(dst []uint32, src []byte, rawSize int) ([]uint32, error) {
	d, err := newDecoder(src, rawSize)
	if err != nil {
		return dst, err
	}
	defer d.release()
	out, n, rows, err := d.measureColumns(dst, len(src))
	if err != nil {
		return dst, err
	}
	if rows {
		if n, err = d.measureNames(len(src)); err != nil {
			return dst, err
		}
		for _, nm := range d.names {
			out = append(out, nm.size)
		}
	}
	if rawSize >= 0 && n != rawSize {
		return dst, fmt.Errorf("%w: decoded %d bytes, block raw size is %d", ErrCorrupt, n, rawSize)
	}
	return out, nil
}

// measureNames is decodeNames counting the output instead of writing it:
// it returns the bytes AppendDecode would append, leaving the names (their
// sizes) in d.names.
func (d *decoder) measureNames(srcLen int) (int, error) {
	ratio := 32*srcLen + 1024
	if c := min(d.nreads, d.limit, ratio/8); cap(d.names) < c {
		d.names = make([]name, 0, c)
	}
	d.names = d.names[:0]
	npos := len(d.streams) / numTypes
	if c := min(d.limit/2, ratio/2, d.nreads*(npos-1)) + 16; cap(d.tokens) < c {
		d.tokens = make([]token, 0, c)
	}
	d.tokens = d.tokens[:0]
	tokenLimit := 2*d.declared + 1024
	out := 0 // the bytes of the names so far, NULs included
	lead := &d.streams[0]
	for {
		t0, ok := lead.byte1()
		if !ok || int(t0) >= len(d.streams) {
			return out, nil
		}
		cnum := len(d.names)
		if cnum >= d.nreads {
			return 0, fmt.Errorf("%w: more names than the %d declared", ErrCorrupt, d.nreads)
		}
		dist, ok := d.streams[t0].uint32le()
		if !ok {
			return 0, fmt.Errorf("%w: name %d: distance stream %d exhausted", ErrCorrupt, cnum, t0)
		}
		if uint64(dist) > uint64(cnum) {
			return 0, fmt.Errorf("%w: name %d refers %d names back", ErrCorrupt, cnum, dist)
		}
		pnum := cnum - int(dist)
		var err error
		if t0 == tokDup {
			out, err = d.dupLen(cnum, pnum, out)
		} else {
			out, err = d.diffLen(cnum, pnum, out)
		}
		if err != nil {
			return 0, err
		}
		if t0 != tokDup && len(d.tokens) > tokenLimit {
			return 0, fmt.Errorf("%w: %d tokens for at most %d output bytes", ErrCorrupt, len(d.tokens), d.limit)
		}
	}
}

// dupLen is dupName for measureNames: out is the output's length. No
// name holds a NUL (diffLen refuses one), so the copy is the whole name.
func (d *decoder) dupLen(cnum, pnum, out int) (int, error) {
	if pnum == cnum {
		return 0, fmt.Errorf("%w: name %d duplicates itself", ErrCorrupt, cnum)
	}
	p := d.names[pnum]
	if int(p.size) >= d.limit-out {
		return 0, d.overflow(cnum)
	}
	d.names = append(d.names, name{off: uint32(out), size: p.size, tok: p.tok, endPos: p.endPos})
	return out + int(p.size) + 1, nil
}

// diffLen is diffName for measureNames: it reads name cnum's tokens and
// counts its bytes from out, the output's length so far.
func (d *decoder) diffLen(cnum, pnum, out int) (int, error) {
	var prev []token
	if pnum != cnum {
		p := d.names[pnum]
		if p.endPos > 1 {
			prev = d.tokens[p.tok : p.tok+uint32(p.endPos)-1]
		}
	}
	toks := d.tokens
	start, tokStart := out, len(toks)
	npos := len(d.streams) / numTypes
	for ntok := 1; ntok < maxTokens && ntok < npos; ntok++ {
		base := ntok * numTypes
		typ, ok := d.streams[base].byte1()
		if !ok {
			typ = tokEnd
		}
		var tk token
		switch typ {
		case tokChar:
			c, ok := d.streams[base+tokChar].byte1()
			if !ok {
				return 0, d.exhausted(cnum, ntok, tokChar)
			}
			if out >= d.limit {
				return 0, d.overflow(cnum)
			}
			if c == 0 {
				return 0, fmt.Errorf("%w: name %d position %d", ErrNUL, cnum, ntok)
			}
			out++
			tk = token{typ: tokChar, val: uint32(int32(int8(c)))}

		case tokString:
			s := &d.streams[base+tokString]
			var rest []byte
			if s.pos < len(s.data) {
				rest = s.data[s.pos:]
			}
			if len(rest) == 0 {
				return 0, d.exhausted(cnum, ntok, tokString)
			}
			k := indexNUL(rest)
			if k > d.limit-out {
				return 0, d.overflow(cnum)
			}
			s.pos += k + 1
			tk = token{typ: tokString, val: uint32(k)}
			out += k

		case tokDigits0:
			dz, ok := d.streams[base+tokDZLen].byte1()
			if !ok {
				return 0, d.exhausted(cnum, ntok, tokDZLen)
			}
			v, ok := d.streams[base+tokDigits0].uint32le()
			if !ok {
				return 0, d.exhausted(cnum, ntok, tokDigits0)
			}
			tk = token{typ: tokDigits0, val: v, dz: dz}

		case tokDelta0:
			pt, err := prevToken(prev, cnum, ntok)
			if err != nil {
				return 0, err
			}
			delta, ok := d.streams[base+tokDelta0].byte1()
			if !ok {
				return 0, d.exhausted(cnum, ntok, tokDelta0)
			}
			if pt.typ != tokDigits0 {
				return 0, fmt.Errorf("%w: name %d position %d: DELTA0 against token type %d", ErrCorrupt, cnum, ntok, pt.typ)
			}
			tk = token{typ: tokDigits0, val: pt.val + uint32(delta), dz: pt.dz}

		case tokDigits:
			v, ok := d.streams[base+tokDigits].uint32le()
			if !ok {
				return 0, d.exhausted(cnum, ntok, tokDigits)
			}
			tk = token{typ: tokDigits, val: v}

		case tokDelta:
			pt, err := prevToken(prev, cnum, ntok)
			if err != nil {
				return 0, err
			}
			delta, ok := d.streams[base+tokDelta].byte1()
			if !ok {
				return 0, d.exhausted(cnum, ntok, tokDelta)
			}
			if pt.typ == tokNOP {
				return 0, fmt.Errorf("%w: name %d position %d: DELTA against token type %d", ErrCorrupt, cnum, ntok, pt.typ)
			}
			tk = token{typ: tokDigits, val: pt.val + uint32(delta)}

		case tokNOP:
			tk = token{typ: tokNOP}

		case tokMatch:
			pt, err := prevToken(prev, cnum, ntok)
			if err != nil {
				return 0, err
			}
			switch pt.typ {
			case tokChar:
				if out >= d.limit {
					return 0, d.overflow(cnum)
				}
				out++
				tk = pt
			case tokString:
				if int(pt.val) > d.limit-out {
					return 0, d.overflow(cnum)
				}
				tk = token{typ: tokString, val: pt.val}
				out += int(pt.val)
			case tokDigits, tokDigits0:
				tk = pt
			default:
				return 0, fmt.Errorf("%w: name %d position %d: MATCH against token type %d", ErrCorrupt, cnum, ntok, pt.typ)
			}

		default:
			if out >= d.limit {
				return 0, d.overflow(cnum)
			}
			d.names = append(d.names, name{off: uint32(start), size: uint32(out - start), tok: uint32(tokStart), endPos: uint8(ntok)})
			d.tokens = toks
			return out + 1, nil
		}

		switch tk.typ {
		case tokDigits:
			n := decimalWidth(tk.val)
			if n > d.limit-out {
				return 0, d.overflow(cnum)
			}
			out += n
		case tokDigits0:
			if err := checkDigits0(tk.val, tk.dz, cnum, ntok); err != nil {
				return 0, err
			}
			if int(tk.dz) > d.limit-out {
				return 0, d.overflow(cnum)
			}
			out += int(tk.dz)
		}
		toks = append(toks, tk)
	}
	return 0, fmt.Errorf("%w: name %d has no END token within %d positions", ErrCorrupt, cnum, npos)
}

// checkDigits0 is the rule a DIGITS0 token of value v and width dz meets
// to be measured: at most 9 digits, and no NUL where a value too wide for
// its width overflows into the first digit (as '0' plus the quotient).
func checkDigits0(v uint32, dz uint8, name, ntok int) error {
	if dz > 9 {
		return fmt.Errorf("%w: name %d position %d: DIGITS0 length %d exceeds 9", ErrCorrupt, name, ntok, dz)
	}
	if dz > 0 && byte(v/pow10[dz-1]+'0') == 0 {
		return fmt.Errorf("%w: name %d position %d", ErrNUL, name, ntok)
	}
	return nil
}

// indexNUL is the length of a STRING token at the start of rest: up to
// its NUL, or, as diffName has it, all but the last byte of a string cut
// short by the end of its stream.
func indexNUL(rest []byte) int {
	if k := bytes.IndexByte(rest, 0); k >= 0 {
		return k
	}
	return len(rest) - 1
}
