package decode

import (
	"math"
	"slices"
	"strconv"
)

// mdBuilder generates the MD:Z and NM:i tags (SAMtags) of a mapped read
// while its features are resolved against the reference, as htslib's
// cram_decode_seq does when decode_md is on, for each of the two the
// record does not store. Bases past the reference's end stop MD (dist -1)
// and are not counted in NM, as there.
type mdBuilder struct {
	md, nm bool // constant: generate MD, NM

	// Mutable, feature by feature.
	aux []byte // the Decoder's tag buffer, MD's text appended to it
	// dist counts the reference matches since MD's last item; -1 once MD
	// has gone past the reference's end.
	dist  int64
	edits int64 // NM: mismatches, inserted and deleted bases
	// mdAt and nmAt are the offsets in aux of CRAM 4.0 placeholders, where
	// MD's text goes and NM's 4-byte value is written (-1: none, MD and
	// NM are appended); textAt is where MD's text starts being built.
	mdAt, nmAt, textAt int
}

// active reports whether either tag is generated.
func (m *mdBuilder) active() bool { return m.md || m.nm }

// start opens the MD tag.
func (m *mdBuilder) start() {
	if m.md && m.mdAt < 0 {
		m.aux = append(m.aux, 'M', 'D', 'Z')
	}
	m.textAt = len(m.aux)
}

// flushDist writes the matches counted since the last item.
func (m *mdBuilder) flushDist() {
	if m.dist >= 0 && m.md {
		m.aux = appendUint(m.aux, m.dist)
	}
}

// mismatch adds a base of the read that differs from the reference's ref.
// NM is counted by the caller.
func (m *mdBuilder) mismatch(ref byte) {
	if m.md {
		m.aux = appendUint(m.aux, m.dist)
		m.aux = append(m.aux, ref)
		m.dist = 0
	}
}

// offReference is a substitution where the read has no reference base:
// MD stops, and NM does not count it (the caller adds one back).
func (m *mdBuilder) offReference() {
	if m.active() {
		m.flushDist()
		m.dist = -1
		m.edits--
	}
}

// pastReference counts k matching bases that run past the reference's end.
func (m *mdBuilder) pastReference(k int64) {
	if m.dist >= 0 {
		m.dist += k
	}
}

// matchN counts the matching bases b of the reference, where an 'N' of
// the reference is a mismatch.
func (m *mdBuilder) matchN(b []byte) {
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
func (m *mdBuilder) deletion(v *refView, refPos, dl, refLen int64) error {
	if refPos+dl > v.limit {
		return errBeyondSlice(refPos + dl)
	}
	m.flushDist()
	if refPos+dl <= refLen {
		if m.md {
			b, err := v.slice(refPos, refPos+dl)
			if err != nil {
				return err
			}
			m.aux = append(m.aux, '^')
			m.aux = append(m.aux, b...)
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
			m.aux = append(m.aux, '^')
			m.aux = append(m.aux, b...)
			m.aux = append(m.aux, '0')
		}
		m.edits += refLen - refPos
	}
	m.dist = -1
	return nil
}

// bases adds k stored bases at refPos (feature 'b'), each a mismatch.
func (m *mdBuilder) bases(v *refView, refPos, k, refLen int64, hasRef bool) error {
	m.flushDist()
	x := int64(0)
	for ; x < k; x++ {
		if x > 0 && m.md {
			m.aux = append(m.aux, '0')
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
			m.aux = append(m.aux, c)
		}
	}
	m.edits += x
	m.dist = 0
	return nil
}

// base adds one stored base at refPos (feature 'B'), a mismatch.
func (m *mdBuilder) base(v *refView, refPos, refLen int64, hasRef bool) error {
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
		m.aux = append(m.aux, c)
	}
	m.edits++
	m.dist = 0
	return nil
}

// finish closes MD and appends NM, in the smallest integer type that
// holds it, and returns the tag buffer.
func (m *mdBuilder) finish() []byte {
	if m.md {
		if m.dist >= 0 {
			m.aux = appendUint(m.aux, m.dist)
		}
		m.aux = append(m.aux, 0)
		if m.mdAt >= 0 {
			m.moveText()
		}
	}
	if m.nm && m.nmAt >= 0 {
		nm := uint32(m.edits)
		m.aux[m.nmAt], m.aux[m.nmAt+1], m.aux[m.nmAt+2], m.aux[m.nmAt+3] = byte(nm), byte(nm>>8), byte(nm>>16), byte(nm>>24)
	} else if m.nm {
		nm := m.edits
		switch {
		case nm >= 0 && nm <= math.MaxUint8:
			m.aux = append(m.aux, 'N', 'M', 'C', byte(nm))
		case nm >= 0 && nm <= math.MaxUint16:
			m.aux = append(m.aux, 'N', 'M', 'S', byte(nm), byte(nm>>8))
		default:
			m.aux = append(m.aux, 'N', 'M', 'I', byte(nm), byte(nm>>8), byte(nm>>16), byte(nm>>24))
		}
	}
	return m.aux
}

// moveText moves MD's text, built at the end of aux, to its placeholder
// at mdAt (rotating what lies between after it), and NM's placeholder
// with it when it followed MD's.
func (m *mdBuilder) moveText() {
	seg := m.aux[m.mdAt:]
	k := m.textAt - m.mdAt
	slices.Reverse(seg[:k])
	slices.Reverse(seg[k:])
	slices.Reverse(seg)
	if m.nmAt > m.mdAt {
		m.nmAt += len(m.aux) - m.textAt
	}
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
