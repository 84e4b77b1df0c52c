package tok3

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
)

// The lengths of the names are measured a token position at a time over
// all names (columns) rather than a name at a time (rows). A token at
// position p refers only to the token at position p of an earlier name
// (MATCH, DELTA, DELTA0), and the streams of position p are read only by
// the tokens at p, in name order; so a column reads every stream in the
// order a row-by-row decode does, and the same tokens result. Within a
// column the token type seldom changes from name to name, so its branches
// predict where a name's succession of types does not, and only the
// current column's tokens are kept. Position 0 (the DUP or DIFF choice
// and its distance) is read first, for all names.
//
// A name whose position-0 type points at a stream of a later position
// (valid streams never do) would interleave two columns' reads: such a
// stream is measured row by row (measureNames).

// colToken is a name's token at the current column: what later names'
// MATCH, DELTA and DELTA0 see, and the bytes it prints. The zero value
// (typ tokType) stands for no token: a name that has ended, or none.
type colToken struct {
	typ uint8  // tokString, tokChar, tokDigits, tokDigits0 or tokNOP
	dz  uint8  // DIGITS0 width
	val uint32 // number, character (sign-extended), or string length
	w   uint32 // bytes printed
}

// colName is a DIFF name still being measured: its index and the slot in
// the column's tokens of the name it refers to (0, the empty slot, when
// it refers to none).
type colName struct {
	name uint32
	prev uint32
}

// colState is what measureColumns keeps between calls (in the pooled
// decoder): the names' roots, the DIFF names still open and the current
// column's tokens.
type colState struct {
	roots []uint32   // per name: itself, or for a DUP the name whose tokens it shares
	open  []colName  // DIFF names without their END yet, in name order
	cur   []colToken // slot 1+name: that name's token at the current column
}

// measureColumns measures every name as measureNames does, column by
// column. It appends the names' lengths to dst and returns them with the
// bytes AppendDecode would write; rows is true, with nothing measured and
// every stream rewound, when the stream must be measured row by row.
func (d *decoder) measureColumns(dst []uint32, srcLen int) (out []uint32, total int, rows bool, err error) {
	n, rows, err := d.readDistances(srcLen)
	if err != nil || rows {
		if rows {
			d.rewind()
		}
		return dst, 0, rows, err
	}
	start := len(dst)
	dst = slices.Grow(dst, n)[:start+n]
	sizes := dst[start:]
	clear(sizes)
	if err = d.measureOpen(sizes, n); err != nil {
		return dst[:start], 0, false, err
	}
	// A DUP is as long as the name whose tokens it shares; no name holds
	// a NUL (measureOpen refuses one), so the copy is the whole name. A
	// DIFF name is its own root.
	total = n
	for i, r := range d.col.roots[:n] {
		v := sizes[r]
		sizes[i] = v
		total += int(v)
	}
	if total > d.limit {
		return dst[:start], 0, false, fmt.Errorf("%w: names need %d bytes, at most %d", ErrCorrupt, total, d.limit)
	}
	return dst, total, false, nil
}

// rewind sets every stream back to its start.
func (d *decoder) rewind() {
	for i := range d.streams {
		d.streams[i].pos = 0
	}
}

// readDistances reads position 0 of every name (the lead type stream and
// the distances), filling d.col.roots and d.col.open, and returns the
// number of names; rows is true when a name's distance is read from a
// stream of a later position.
func (d *decoder) readDistances(srcLen int) (n int, rows bool, err error) {
	c := &d.col
	lead := &d.streams[0]
	// A name takes one byte of the lead stream; an elided one (n declared)
	// gets what a generous compression ratio allows, and more by append.
	k := min(d.nreads, d.limit, lead.n)
	if lead.implied {
		k = min(k, (32*srcLen+1024)/8)
	}
	if cap(c.roots) < k {
		c.roots = make([]uint32, 0, k)
		c.open = make([]colName, 0, k)
	}
	c.roots, c.open = c.roots[:0], c.open[:0]
	c.readDupDiff(lead, &d.streams[tokDup], &d.streams[tokDiff])
	for {
		t0, ok := lead.byte1()
		if !ok || int(t0) >= len(d.streams) {
			return len(c.roots), false, nil
		}
		if t0 >= numTypes {
			return 0, true, nil
		}
		cnum := len(c.roots)
		if cnum >= d.nreads {
			return 0, false, fmt.Errorf("%w: more names than the %d declared", ErrCorrupt, d.nreads)
		}
		dist, ok := d.streams[t0].uint32le()
		if !ok {
			return 0, false, fmt.Errorf("%w: name %d: distance stream %d exhausted", ErrCorrupt, cnum, t0)
		}
		if uint64(dist) > uint64(cnum) {
			return 0, false, fmt.Errorf("%w: name %d refers %d names back", ErrCorrupt, cnum, dist)
		}
		pnum := cnum - int(dist)
		switch {
		case t0 == tokDup && pnum == cnum:
			return 0, false, fmt.Errorf("%w: name %d duplicates itself", ErrCorrupt, cnum)
		case t0 == tokDup:
			c.roots = append(c.roots, c.roots[pnum])
		case pnum == cnum:
			c.roots = append(c.roots, uint32(cnum))
			c.open = append(c.open, colName{name: uint32(cnum)})
		default:
			c.roots = append(c.roots, uint32(cnum))
			c.open = append(c.open, colName{name: uint32(cnum), prev: c.roots[pnum] + 1})
		}
	}
}

// readDupDiff is readDistances' loop for the usual names: a DUP or DIFF
// whose distance is at hand and valid, within the tables' capacity. It
// chooses between the two without a branch (mates make the choice
// random) and leaves the first other name, and everything after it, to
// readDistances.
func (c *colState) readDupDiff(lead, dup, diff *stream) {
	roots, open := c.roots[:cap(c.roots)], c.open[:cap(c.open)]
	nn, no := len(c.roots), len(c.open)
	srcs := [2][]byte{dup.data, diff.data}
	dupPos, diffPos := dup.pos, diff.pos
	lp := lead.pos
	for ; lp < len(lead.data) && nn < len(roots) && no < len(open); lp++ {
		t0 := lead.data[lp]
		if t0-tokDup > tokDiff-tokDup {
			break // neither DUP nor DIFF
		}
		// The two streams' positions stay in registers, chosen by a
		// mask: kept in memory and indexed by the choice, they made a
		// chain of stores and loads from name to name.
		isDiff := uint32(t0 - tokDup)
		mask := -int(isDiff)
		p := dupPos ^ (dupPos^diffPos)&mask
		src := srcs[isDiff&1]
		if p > len(src)-4 {
			break
		}
		dist := binary.LittleEndian.Uint32(src[p:])
		if dist > uint32(nn) || dist == 0 && isDiff == 0 {
			break
		}
		dupPos += 4 * int(1-isDiff)
		diffPos += 4 * int(isDiff)
		pr := roots[nn-int(dist)]
		root, prev := pr, pr+1
		if isDiff != 0 {
			root = uint32(nn)
		}
		if dist == 0 {
			prev = 0
		}
		roots[nn] = root
		open[no] = colName{name: uint32(nn), prev: prev}
		no += int(isDiff)
		nn++
	}
	lead.pos, dup.pos, diff.pos = lp, dupPos, diffPos
	c.roots, c.open = roots[:nn], open[:no]
}

// measureOpen reads positions 1 onwards of the DIFF names, column by
// column, adding each token's bytes to its name's entry of sizes. It
// fails as soon as the bytes so far, with a NUL for each of the n names,
// exceed the output's limit.
func (d *decoder) measureOpen(sizes []uint32, n int) error {
	c := &d.col
	if cap(c.cur) < n+1 {
		c.cur = make([]colToken, n+1, max(n+1, 2*cap(c.cur)))
	}
	c.cur = c.cur[:n+1]
	clear(c.cur)
	// An open name's slot holds a token (a placeholder until its first
	// general column), an ended name's and slot 0 none.
	for _, o := range c.open {
		c.cur[o.name+1] = colToken{typ: tokNOP}
	}
	total := n // the NULs
	tokens, tokenLimit := 0, 2*d.declared+1024
	npos := min(len(d.streams)/numTypes, maxTokens)
	open := c.open
	for ntok := 1; ntok < npos && len(open) > 0; ntok++ {
		var err error
		var ended, bytes int
		open, ended, bytes, err = d.column(open, sizes, ntok)
		if err != nil {
			return err
		}
		tokens += ended * (ntok - 1)
		if total += bytes; total > d.limit {
			return fmt.Errorf("%w: position %d: output exceeds %d bytes", ErrCorrupt, ntok, d.limit)
		}
	}
	if len(open) > 0 {
		return fmt.Errorf("%w: name %d has no END token within %d positions", ErrCorrupt, open[0].name, npos)
	}
	if tokens > tokenLimit {
		return fmt.Errorf("%w: %d tokens for at most %d output bytes", ErrCorrupt, tokens, d.limit)
	}
	return nil
}

// column reads the tokens at position ntok of the open names, in name
// order, and returns the names still open after it (in open's array),
// how many ended here, and the bytes the column's tokens print. Columns
// of one kind of token take a loop of their own.
func (d *decoder) column(open []colName, sizes []uint32, ntok int) (kept []colName, ended, bytes int, err error) {
	s := d.streams[ntok*numTypes : (ntok+1)*numTypes]
	types := &s[tokType]
	m := len(open)
	switch {
	case types.implied && types.n-types.pos >= m && types.pos == 0:
		// The first name's type, then MATCH: every later name has the
		// first one's token.
		if kept, ended, bytes, err = d.mixedColumn(open[:1], sizes, ntok); err != nil {
			return nil, 0, 0, err
		}
		rest, err := d.matchColumn(open[1:], sizes, ntok)
		if err != nil {
			return nil, 0, 0, err
		}
		types.pos += m - 1
		if ended > 0 {
			// The first name ended, and it was the only one (a later
			// one's MATCH would have failed).
			return kept, ended, bytes, nil
		}
		return open, 0, bytes + rest, nil
	case types.implied || len(types.data)-types.pos < m:
		return d.mixedColumn(open, sizes, ntok)
	case uniform(types.data[types.pos:types.pos+m], tokDigits) && s[tokDigits].available(4*m):
		types.pos += m
		return open, 0, digitsColumn(open, sizes, &s[tokDigits]), nil
	case uniform(types.data[types.pos:types.pos+m], tokEnd):
		types.pos += m
		for _, o := range open {
			d.col.cur[o.name+1] = colToken{}
		}
		return open[:0], m, 0, nil
	}
	if col, ok := numericKinds(types.data[types.pos:types.pos+m], &s[tokDigits], &s[tokDelta]); ok {
		if bytes, err = d.numericColumn(open, sizes, col, ntok); err != nil {
			return nil, 0, 0, err
		}
		types.pos += m
		return open, 0, bytes, nil
	}
	return d.mixedColumn(open, sizes, ntok)
}

// numeric is a column of DIGITS, DELTA and MATCH tokens only: its types,
// and the values of its DIGITS and DELTA tokens, every one at hand.
type numeric struct {
	types  []byte
	digits []byte // four bytes a DIGITS token
	deltas []byte // a byte a DELTA token
}

// numericKinds returns the numeric column of the given types, with the
// DIGITS and DELTA values read from ds and dl, when it is one.
func numericKinds(types []byte, ds, dl *stream) (numeric, bool) {
	nd := bytes.Count(types, []byte{tokDigits})
	nl := bytes.Count(types, []byte{tokDelta})
	if nd+nl+bytes.Count(types, []byte{tokMatch}) != len(types) || !ds.available(4*nd) || !dl.available(nl) {
		return numeric{}, false
	}
	return numeric{types, ds.data[ds.pos : ds.pos+4*nd], dl.data[dl.pos : dl.pos+nl]}, true
}

// numericColumn reads a numeric column of the open names, each of whose
// types col holds, and returns the bytes its tokens print. The type
// changes at random from name to name here (a lane or tile number that
// now matches the previous name's, now not), so every name computes each
// kind of token and keeps the one its type names, without a branch.
func (d *decoder) numericColumn(open []colName, sizes []uint32, col numeric, ntok int) (int, error) {
	cur := d.col.cur
	// Past the last value the loop reads the last again (or a pad) for
	// the names that do not take one.
	var pad [4]byte
	digits, deltas := col.digits, col.deltas
	if len(digits) == 0 {
		digits = pad[:]
	}
	if len(deltas) == 0 {
		deltas = pad[:1]
	}
	lastD, lastL := len(digits)/4-1, len(deltas)-1
	types := col.types[:len(open)]
	jd, jl, total := 0, 0, 0
	for i, o := range open {
		t := types[i]
		pt := cur[o.prev]
		isD, isL, isM := b2u(t == tokDigits), b2u(t == tokDelta), b2u(t == tokMatch)
		if (1-isD)&(b2u(pt.typ == tokType)|b2u(pt.typ == tokNOP)) != 0 {
			return 0, badReference(o.name, ntok, t, pt)
		}
		// The next value of each kind, or the last one again.
		v := binary.LittleEndian.Uint32(digits[4*(jd-int(b2u(jd > lastD))):])
		delta := uint32(deltas[jl-int(b2u(jl > lastL))])
		jd += int(isD)
		jl += int(isL)
		// The masks are all ones for the type they name.
		mD, mM := -isD, -isM
		val := pt.val + delta*isL
		val = v&mD | val&^mD
		w := pt.w&mM | uint32(decimalWidth(val))&^mM
		typ := uint8(uint32(pt.typ)&mM | tokDigits&^mM)
		cur[o.name+1] = colToken{typ: typ, dz: uint8(uint32(pt.dz) & mM), val: val, w: w}
		sizes[o.name] += w
		total += int(w)
	}
	ds, dl := &d.streams[ntok*numTypes+tokDigits], &d.streams[ntok*numTypes+tokDelta]
	ds.pos += 4 * jd
	dl.pos += jl
	return total, nil
}

// b2u is 1 for true and 0 for false, as a condition code rather than a
// branch.
func b2u(b bool) uint32 {
	var u uint32
	if b {
		u = 1
	}
	return u
}

// badReference reports a MATCH or DELTA token of type t whose previous
// token pt is missing or a NOP.
func badReference(name uint32, ntok int, t byte, pt colToken) error {
	if pt.typ == tokType {
		return noPrevious(name, ntok)
	}
	kind := "MATCH"
	if t == tokDelta {
		kind = "DELTA"
	}
	return fmt.Errorf("%w: name %d position %d: %s against token type %d", ErrCorrupt, name, ntok, kind, pt.typ)
}

// uniform reports whether every byte of b is c.
func uniform(b []byte, c byte) bool {
	return bytes.Count(b, []byte{c}) == len(b)
}

// available reports whether at least k bytes of s's data are left to read
// (an implied stream has none).
func (s *stream) available(k int) bool {
	return len(s.data)-s.pos >= k
}

// digitsColumn reads a DIGITS token for each of the open names from the
// stream ds, which holds enough bytes for them all, and returns the bytes
// they print. No name refers to these tokens (a column of DIGITS has no
// MATCH or DELTA), so they are not kept.
func digitsColumn(open []colName, sizes []uint32, ds *stream) int {
	vals := ds.data[ds.pos : ds.pos+4*len(open)]
	ds.pos += 4 * len(open)
	total := 0
	for i, o := range open {
		w := decimalWidth(binary.LittleEndian.Uint32(vals[4*i:]))
		sizes[o.name] += uint32(w)
		total += w
	}
	return total
}

// matchColumn is a MATCH for each of the open names, all of which follow
// the column's first name, whose token every one of them then has. It
// returns the bytes they print.
func (d *decoder) matchColumn(open []colName, sizes []uint32, ntok int) (int, error) {
	if len(open) == 0 {
		return 0, nil
	}
	cur := d.col.cur
	tk := cur[open[0].prev]
	if tk.typ == tokNOP {
		return 0, fmt.Errorf("%w: name %d position %d: MATCH against token type %d", ErrCorrupt, open[0].name, ntok, tk.typ)
	}
	for _, o := range open {
		if cur[o.prev].typ == tokType {
			return 0, noPrevious(o.name, ntok)
		}
		sizes[o.name] += tk.w
	}
	return len(open) * int(tk.w), nil
}

// mixedColumn is column for any succession of token types.
func (d *decoder) mixedColumn(open []colName, sizes []uint32, ntok int) (kept []colName, ended, bytes int, err error) {
	cur := d.col.cur
	s := d.streams[ntok*numTypes : (ntok+1)*numTypes]
	types := &s[tokType]
	kept = open[:0]
	for _, o := range open {
		typ, ok := types.byte1()
		if !ok {
			typ = tokEnd
		}
		var tk colToken
		switch typ {
		case tokChar:
			ch, ok := s[tokChar].byte1()
			if !ok {
				return nil, 0, 0, d.exhausted(int(o.name), ntok, tokChar)
			}
			if ch == 0 {
				return nil, 0, 0, fmt.Errorf("%w: name %d position %d", ErrNUL, o.name, ntok)
			}
			tk = colToken{typ: tokChar, val: uint32(int32(int8(ch))), w: 1}

		case tokString:
			st := &s[tokString]
			if st.pos >= len(st.data) {
				return nil, 0, 0, d.exhausted(int(o.name), ntok, tokString)
			}
			k := indexNUL(st.data[st.pos:])
			st.pos += k + 1
			tk = colToken{typ: tokString, val: uint32(k), w: uint32(k)}

		case tokDigits0:
			dz, ok := s[tokDZLen].byte1()
			if !ok {
				return nil, 0, 0, d.exhausted(int(o.name), ntok, tokDZLen)
			}
			v, ok := s[tokDigits0].uint32le()
			if !ok {
				return nil, 0, 0, d.exhausted(int(o.name), ntok, tokDigits0)
			}
			if tk, err = digits0(v, dz, o.name, ntok); err != nil {
				return nil, 0, 0, err
			}

		case tokDelta0:
			pt, delta, err := d.deltaOf(cur[o.prev], &s[tokDelta0], o.name, ntok, tokDelta0)
			if err != nil {
				return nil, 0, 0, err
			}
			if pt.typ != tokDigits0 {
				return nil, 0, 0, fmt.Errorf("%w: name %d position %d: DELTA0 against token type %d", ErrCorrupt, o.name, ntok, pt.typ)
			}
			if tk, err = digits0(pt.val+delta, pt.dz, o.name, ntok); err != nil {
				return nil, 0, 0, err
			}

		case tokDigits:
			v, ok := s[tokDigits].uint32le()
			if !ok {
				return nil, 0, 0, d.exhausted(int(o.name), ntok, tokDigits)
			}
			tk = colToken{typ: tokDigits, val: v, w: uint32(decimalWidth(v))}

		case tokDelta:
			pt, delta, err := d.deltaOf(cur[o.prev], &s[tokDelta], o.name, ntok, tokDelta)
			if err != nil {
				return nil, 0, 0, err
			}
			// As in diffName: DELTA adds to the number of any token but NOP.
			if pt.typ == tokNOP {
				return nil, 0, 0, fmt.Errorf("%w: name %d position %d: DELTA against token type %d", ErrCorrupt, o.name, ntok, pt.typ)
			}
			v := pt.val + delta
			tk = colToken{typ: tokDigits, val: v, w: uint32(decimalWidth(v))}

		case tokNOP:
			tk = colToken{typ: tokNOP}

		case tokMatch:
			tk = cur[o.prev]
			if tk.typ == tokType {
				return nil, 0, 0, noPrevious(o.name, ntok)
			}
			if tk.typ == tokNOP {
				return nil, 0, 0, fmt.Errorf("%w: name %d position %d: MATCH against token type %d", ErrCorrupt, o.name, ntok, tk.typ)
			}

		default:
			// END, and as in diffName any type without a meaning here.
			cur[o.name+1] = colToken{}
			ended++
			continue
		}
		cur[o.name+1] = tk
		sizes[o.name] += tk.w
		bytes += int(tk.w)
		kept = append(kept, o)
	}
	return kept, ended, bytes, nil
}

// deltaOf returns the token pt a DELTA or DELTA0 token (of type typ, its
// deltas in ds) refers to, and the delta it adds to pt's number.
func (d *decoder) deltaOf(pt colToken, ds *stream, name uint32, ntok, typ int) (colToken, uint32, error) {
	if pt.typ == tokType {
		return pt, 0, noPrevious(name, ntok)
	}
	delta, ok := ds.byte1()
	if !ok {
		return pt, 0, d.exhausted(int(name), ntok, typ)
	}
	return pt, uint32(delta), nil
}

// digits0 is the DIGITS0 token of value v and width dz, checked as
// diffLen checks it (checkDigits0).
func digits0(v uint32, dz uint8, name uint32, ntok int) (colToken, error) {
	if err := checkDigits0(v, dz, int(name), ntok); err != nil {
		return colToken{}, err
	}
	return colToken{typ: tokDigits0, val: v, dz: dz, w: uint32(dz)}, nil
}

// noPrevious reports a MATCH, DELTA or DELTA0 token whose name refers to
// no name, or to one without a token at that position.
func noPrevious(name uint32, ntok int) error {
	return fmt.Errorf("%w: name %d position %d: the previous name has no token there", ErrCorrupt, name, ntok)
}
