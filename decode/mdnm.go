package decode

import (
	"math"
	"slices"
	"strconv"
)

// mdRules generates the MD:Z and NM:i tags (SAMtags) of a mapped read
// while its features are resolved against the reference, as htslib's
// cram_decode_seq does when decode_md is on, for each of the two the
// record does not store. Bases past the reference's end stop MD (dist -1)
// and are not counted in NM, as there. MD's text goes to out, the
// writer (the full decode), or is counted in text (the lean pass, which
// needs only the tags' length: tagLen). The choice is a branch, not a
// type parameter: Go calls a type parameter's methods through a
// dictionary, not inlined, and these run at every mismatch and deletion.
type mdRules struct {
	out *mdText // dependency: MD's writer; nil: count instead

	md, nm bool // constant: generate MD, NM

	// Mutable, feature by feature.
	// dist counts the reference matches since MD's last item; -1 once MD
	// has gone past the reference's end.
	dist  int64
	edits int64 // NM: mismatches, inserted and deleted bases
	text  int64 // without out: the bytes of MD's text so far
}

// num adds a count of matches (appendUint's decimal form) to MD's text.
func (m *mdRules) num(v int64) {
	if m.out != nil {
		m.out.aux = appendUint(m.out.aux, v)
	} else {
		m.text += uintLen(v)
	}
}

// char adds one byte to MD's text: '^', '0' or a reference base.
func (m *mdRules) char(c byte) {
	if m.out != nil {
		m.out.aux = append(m.out.aux, c)
	} else {
		m.text++
	}
}

// ref adds k bases b of the reference to MD's text (b is nil from a
// marks view, which only the counter sees).
func (m *mdRules) ref(b []byte, k int64) {
	if m.out != nil {
		m.out.aux = append(m.out.aux, b...)
	} else {
		m.text += k
	}
}

// active reports whether either tag is generated.
func (m *mdRules) active() bool { return m.md || m.nm }

// flushDist adds the matches counted since the last item.
func (m *mdRules) flushDist() {
	if m.dist >= 0 && m.md {
		m.num(m.dist)
	}
}

// mismatch adds a base of the read that differs from the reference's ref.
// NM is counted by the caller.
func (m *mdRules) mismatch(ref byte) {
	if m.md {
		m.num(m.dist)
		m.char(ref)
		m.dist = 0
	}
}

// offReference is a substitution where the read has no reference base:
// MD stops, and NM does not count it (the caller adds one back).
func (m *mdRules) offReference() {
	if m.active() {
		m.flushDist()
		m.dist = -1
		m.edits--
	}
}

// pastReference counts k matching bases that run past the reference's end.
func (m *mdRules) pastReference(k int64) {
	if m.dist >= 0 {
		m.dist += k
	}
}

// matchNs counts the k matching bases at pos of view v, b (nil from a
// marks view), which hold an 'N': a mismatch. (Matches without one add k
// to dist; the caller does that inline.)
func (m *mdRules) matchNs(v *refView, pos, k int64, b []byte) {
	if v.marks {
		m.matchMarks(v, pos, k)
	} else {
		m.matchN(b)
	}
}

// matchN is matchNs for the bases b.
func (m *mdRules) matchN(b []byte) {
	for _, base := range b {
		if base == 'N' {
			m.mismatch('N')
			m.edits++
		} else {
			m.dist++
		}
	}
}

// deletion adds the deletion of dl bases at refPos (feature 'D').
func (m *mdRules) deletion(v *refView, refPos, dl, refLen int64) error {
	if refPos+dl > v.limit {
		return errBeyondSlice(refPos + dl)
	}
	m.flushDist()
	if refPos+dl <= refLen {
		if m.md {
			b, ok := v.held(refPos, refPos+dl)
			if !ok {
				var err error
				if b, err = v.slice(refPos, refPos+dl); err != nil {
					return err
				}
			}
			m.char('^')
			m.ref(b, dl)
			m.dist = 0
		}
		m.edits += dl
		return nil
	}
	// The deletion runs past the reference's end: its bases up to there.
	if refLen >= refPos {
		if m.md {
			b, err := v.slice(refPos, refLen)
			if err != nil {
				return err
			}
			m.char('^')
			m.ref(b, refLen-refPos)
			m.char('0')
		}
		m.edits += refLen - refPos
	}
	m.dist = -1
	return nil
}

// bases adds k stored bases at refPos (feature 'b'), each a mismatch.
func (m *mdRules) bases(v *refView, refPos, k, refLen int64, hasRef bool) error {
	m.flushDist()
	x := int64(0)
	for ; x < k; x++ {
		if x > 0 && m.md {
			m.char('0')
		}
		if refPos+x >= refLen || !hasRef {
			m.dist = -1
			break
		}
		if m.md {
			if refPos+x > v.limit {
				return errBeyondSlice(refPos + x)
			}
			c, err := v.at(refPos + x)
			if err != nil {
				return err
			}
			m.char(c)
		}
	}
	m.edits += x
	m.dist = 0
	return nil
}

// base adds one stored base at refPos (feature 'B'), a mismatch.
func (m *mdRules) base(v *refView, refPos, refLen int64, hasRef bool) error {
	m.flushDist()
	if refPos >= refLen || !hasRef {
		m.dist = -1
		return nil
	}
	if m.md {
		if refPos > v.limit {
			return errBeyondSlice(refPos)
		}
		c, err := v.at(refPos)
		if err != nil {
			return err
		}
		m.char(c)
	}
	m.edits++
	m.dist = 0
	return nil
}

// mdText is MD's writer for the full decode: MD's text goes into the
// Decoder's tag buffer, and at the end the MD and NM tags around it.
type mdText struct {
	aux []byte // mutable: the Decoder's tag buffer, MD's text appended
	// mdAt and nmAt are the offsets in aux of CRAM 4.0 placeholders, where
	// MD's text goes and NM's 4-byte value is written (-1: none, MD and
	// NM are appended); textAt is where MD's text starts being built.
	mdAt, nmAt, textAt int
}

// start opens the MD tag when md is generated.
func (t *mdText) start(md bool) {
	if md && t.mdAt < 0 {
		t.aux = append(t.aux, 'M', 'D', 'Z')
	}
	t.textAt = len(t.aux)
}

// finish closes MD and appends NM, in the smallest integer type that
// holds it, as m generated them, and returns the tag buffer.
func (t *mdText) finish(m *mdRules) []byte {
	if m.md {
		if m.dist >= 0 {
			t.aux = appendUint(t.aux, m.dist)
		}
		t.aux = append(t.aux, 0)
		if t.mdAt >= 0 {
			t.moveText()
		}
	}
	if m.nm && t.nmAt >= 0 {
		nm := uint32(m.edits)
		t.aux[t.nmAt], t.aux[t.nmAt+1], t.aux[t.nmAt+2], t.aux[t.nmAt+3] = byte(nm), byte(nm>>8), byte(nm>>16), byte(nm>>24)
	} else if m.nm {
		nm := m.edits
		switch {
		case nm >= 0 && nm <= math.MaxUint8:
			t.aux = append(t.aux, 'N', 'M', 'C', byte(nm))
		case nm >= 0 && nm <= math.MaxUint16:
			t.aux = append(t.aux, 'N', 'M', 'S', byte(nm), byte(nm>>8))
		default:
			t.aux = append(t.aux, 'N', 'M', 'I', byte(nm), byte(nm>>8), byte(nm>>16), byte(nm>>24))
		}
	}
	return t.aux
}

// moveText moves MD's text, built at the end of aux, to its placeholder
// at mdAt (rotating what lies between after it), and NM's placeholder
// with it when it followed MD's.
func (t *mdText) moveText() {
	seg := t.aux[t.mdAt:]
	k := t.textAt - t.mdAt
	slices.Reverse(seg[:k])
	slices.Reverse(seg[k:])
	slices.Reverse(seg)
	if t.nmAt > t.mdAt {
		t.nmAt += len(t.aux) - t.textAt
	}
}

// tagLen is the BAM bytes of the MD and NM tags mdText.finish would
// append, for rules that counted MD's text.
func (m *mdRules) tagLen() int {
	n := int64(0)
	if m.md {
		n = 3 + m.text + 1
		if m.dist >= 0 {
			n += uintLen(m.dist)
		}
	}
	if m.nm {
		switch nm := m.edits; {
		case nm >= 0 && nm <= math.MaxUint8:
			n += 4
		case nm >= 0 && nm <= math.MaxUint16:
			n += 5
		default:
			n += 7
		}
	}
	return int(n)
}

// appendUint appends the decimal form of v as htslib's BLOCK_APPEND_UINT
// does (v is a 32-bit unsigned value there).
func appendUint(b []byte, v int64) []byte {
	u := uint32(v)
	switch {
	case u < 10:
		return append(b, byte('0'+u))
	case u < 100:
		return append(b, byte('0'+u/10), byte('0'+u%10))
	case u < 1000:
		return append(b, byte('0'+u/100), byte('0'+u/10%10), byte('0'+u%10))
	}
	return strconv.AppendUint(b, uint64(u), 10)
}

// uintLen is the length of appendUint's text of v.
func uintLen(v int64) int64 {
	n := int64(1)
	for u := uint32(v); u >= 10; u /= 10 {
		n++
	}
	return n
}
