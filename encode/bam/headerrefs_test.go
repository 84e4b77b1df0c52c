package bam

import (
	"bytes"
	"fmt"
	"math"
)

// The module builds BAM headers from the references decode.ParseSAMHeader
// reads; the encoder's tests make theirs from SAM text with this parser,
// which follows htslib 1.16 exactly, so that samtools' BAM headers are the
// oracle.

// ParseHeaderRefs extracts the references of SAM header text (SAMv1 §1.3)
// in @SQ order, the way htslib 1.16 does when it builds a BAM header from
// the text: parsing stops at the first NUL; every line must start with '@'
// and a two-letter type and have tab-separated "XY:value" fields (a
// trailing fragment shorter than four bytes is ignored); each @SQ line
// needs SN and LN (the last occurrence of each wins); LN is read like
// strtoll and stored as the 32-bit l_ref BAM holds (2^32-1 for longer
// references). An SN that repeats an earlier SN is an error; an SN that
// only repeats an earlier AN alternative name is accepted as a new
// reference.
func ParseHeaderRefs(text []byte) ([]Reference, error) {
	var refs []Reference
	byName := map[string]int{} // SN and AN names to reference index
	n := len(text)
	if n < 3 {
		if n == 0 || text[0] == 0 {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: header line too short: %q", ErrInvalid, text)
	}
	var tags [][]byte
	for i, line := 0, 1; i < n-3 && text[i] != 0; i, line = i+1, line+1 {
		if text[i] != '@' {
			return nil, fmt.Errorf("%w: header line %d does not start with '@'", ErrInvalid, line)
		}
		if !isAlpha(text[i+1]) || !isAlpha(text[i+2]) {
			return nil, fmt.Errorf("%w: header line %d lacks a two-letter type", ErrInvalid, line)
		}
		isSQ := text[i+1] == 'S' && text[i+2] == 'Q'
		isCO := text[i+1] == 'C' && text[i+2] == 'O'
		i += 3
		if i == n || text[i] == '\n' {
			continue
		}
		if isCO {
			if text[i] != '\t' {
				return nil, fmt.Errorf("%w: header line %d: missing tab", ErrInvalid, line)
			}
			for i++; i < n && text[i] != 0 && text[i] != '\n'; i++ {
			}
			continue
		}
		tags = tags[:0]
		for {
			if i == n || text[i] != '\t' {
				return nil, fmt.Errorf("%w: header line %d: missing tab", ErrInvalid, line)
			}
			i++
			j := i
			for j < n && text[j] != 0 && text[j] != '\n' && text[j] != '\t' {
				j++
			}
			if j-i < 3 || text[i+2] != ':' {
				return nil, fmt.Errorf("%w: header line %d: malformed key:value pair", ErrInvalid, line)
			}
			tags = append(tags, text[i:j])
			i = j
			if i >= n || text[i] == 0 || text[i] == '\n' {
				break
			}
		}
		if !isSQ {
			continue
		}
		var sn, an []byte
		haveSN, haveLN := false, false
		var ln int64
		for _, t := range tags {
			switch {
			case t[0] == 'S' && t[1] == 'N':
				sn, haveSN = t[3:], true
			case t[0] == 'L' && t[1] == 'N':
				ln, haveLN = strtoll(t[3:]), true
			case t[0] == 'A' && t[1] == 'N':
				an = t[3:]
			}
		}
		if !haveSN {
			return nil, fmt.Errorf("%w: header line %d: @SQ without SN", ErrInvalid, line)
		}
		if !haveLN || ln == -1 {
			return nil, fmt.Errorf("%w: header line %d: @SQ %q without LN", ErrInvalid, line, sn)
		}
		name := string(sn)
		if k, ok := byName[name]; ok && refs[k].Name == name {
			return nil, fmt.Errorf("%w: header line %d: duplicate @SQ SN %q", ErrInvalid, line, name)
		}
		idx := len(refs)
		refs = append(refs, Reference{Name: name, Length: int64(bamRefLen(ln))})
		byName[name] = idx
		for _, alt := range bytes.Split(an, []byte{','}) {
			if len(alt) == 0 {
				continue
			}
			if _, ok := byName[string(alt)]; !ok {
				byName[string(alt)] = idx
			}
		}
	}
	return refs, nil
}

// bamRefLen is the 32-bit length htslib keeps for a header length.
func bamRefLen(n int64) uint32 {
	if n < math.MaxUint32 {
		return uint32(n)
	}
	return math.MaxUint32
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// strtoll parses a base-10 integer prefix like C's strtoll: leading white
// space, an optional sign, digits; no digits gives 0; overflow saturates.
func strtoll(b []byte) int64 {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] >= '\t' && b[i] <= '\r') {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	var v uint64
	over := false
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if v > (math.MaxUint64-d)/10 {
			over = true
			continue
		}
		v = v*10 + d
	}
	switch {
	case neg && (over || v > 1<<63):
		return math.MinInt64
	case neg:
		return -int64(v)
	case over || v > math.MaxInt64:
		return math.MaxInt64
	}
	return int64(v)
}
