package decode

import (
	"bytes"
	"fmt"
	"strconv"
)

// SAMHeader is a SAM header parsed the way htslib parses it (SAMv1 §1.3),
// with the text it writes back out.
type SAMHeader struct {
	// Text is the header as htslib rebuilds it from its parsed lines: one
	// line per record, tags joined by tabs, each line ending in a newline;
	// lines with a type but no fields are dropped.
	Text       []byte
	Refs       []RefSeq
	ReadGroups []string // @RG IDs in header order
}

// ParseSAMHeader parses raw header text. Parsing stops at the first NUL.
func ParseSAMHeader(raw []byte) (*SAMHeader, error) {
	if i := bytes.IndexByte(raw, 0); i >= 0 {
		raw = raw[:i]
	}
	h := &SAMHeader{}
	if len(raw) < 3 {
		if len(raw) == 0 {
			return h, nil
		}
		return nil, corruptf("SAM header: line too short: %q", raw)
	}
	// Sized once: a GRCh38 header (3,366 @SQ lines) regrew these slices
	// and maps for most of its parsing time.
	nSQ := bytes.Count(raw, []byte("@SQ\t"))
	seenRef := make(map[string]bool, nSQ)
	seenRG := map[string]bool{}
	urs := map[string]string{} // the UR: values seen, to share their strings
	if nSQ > 0 {
		h.Refs = make([]RefSeq, 0, nSQ)
	}
	out := make([]byte, 0, len(raw)+1)
	var fields [][]byte
	lno := 1
	for i := 0; i < len(raw)-3; i, lno = i+1, lno+1 {
		lineStart := i
		if raw[i] != '@' {
			return nil, corruptf("SAM header line %d does not start with '@'", lno)
		}
		if !isAlpha(raw[i+1]) || !isAlpha(raw[i+2]) {
			return nil, corruptf("SAM header line %d does not have a two character key", lno)
		}
		typ := string(raw[i+1 : i+3])
		i += 3
		if i == len(raw) || raw[i] == '\n' {
			continue
		}
		out = append(out, '@')
		out = append(out, typ...)
		fields = fields[:0]
		if typ == "CO" {
			if raw[i] != '\t' {
				return nil, corruptf("SAM header line %d: missing tab", lno)
			}
			i++
			j := lineEnd(raw, i)
			fields = append(fields, raw[i:j])
			i = j
		} else {
			eol := lineEnd(raw, i)
			for {
				if i == len(raw) || raw[i] != '\t' {
					return nil, corruptf("SAM header line %d: missing tab in %q", lno, raw[lineStart:min(len(raw), lineStart+80)])
				}
				i++
				j := eol
				if k := bytes.IndexByte(raw[i:eol], '\t'); k >= 0 {
					j = i + k
				}
				if j-i < 3 || raw[i+2] != ':' {
					return nil, corruptf("SAM header line %d: malformed key:value pair %q", lno, raw[i:j])
				}
				fields = append(fields, raw[i:j])
				i = j
				if i >= len(raw) || raw[i] == '\n' {
					break
				}
			}
		}
		for _, f := range fields {
			out = append(out, '\t')
			out = append(out, f...)
		}
		out = append(out, '\n')
		switch typ {
		case "SQ":
			var r RefSeq
			haveName, haveLen := false, false
			for _, f := range fields {
				switch string(f[:2]) {
				case "SN":
					r.Name, haveName = string(f[3:]), true
				case "LN":
					r.Length, haveLen = parseLeadingInt(f[3:]), true
				case "M5":
					r.M5 = string(f[3:])
				case "UR":
					if r.UR == "" {
						r.UR = internUR(urs, bytes.TrimSuffix(f[3:], []byte("\r")))
					}
				}
			}
			if !haveName {
				return nil, corruptf("SAM header line %d: @SQ line with no SN: tag", lno)
			}
			if !haveLen {
				return nil, corruptf("SAM header line %d: @SQ line %q with no LN: tag", lno, r.Name)
			}
			if seenRef[r.Name] {
				return nil, corruptf("SAM header line %d: duplicate @SQ %q", lno, r.Name)
			}
			seenRef[r.Name] = true
			h.Refs = append(h.Refs, r)
		case "RG":
			id, ok := "", false
			for _, f := range fields {
				if string(f[:3]) == "ID:" {
					id, ok = string(f[3:]), true
					break
				}
			}
			if !ok {
				return nil, corruptf("SAM header line %d: @RG line with no ID: tag", lno)
			}
			if !seenRG[id] {
				seenRG[id] = true
				h.ReadGroups = append(h.ReadGroups, id)
			}
		}
	}
	h.Text = out
	return h, nil
}

// lineEnd returns the offset of the first newline of raw at or after i,
// or len(raw).
func lineEnd(raw []byte, i int) int {
	if k := bytes.IndexByte(raw[i:], '\n'); k >= 0 {
		return i + k
	}
	return len(raw)
}

// internUR returns v as a string, the same one for every equal value
// seen: a header's @SQ lines usually all name one reference file.
func internUR(seen map[string]string, v []byte) string {
	if s, ok := seen[string(v)]; ok {
		return s
	}
	s := string(v)
	seen[s] = s
	return s
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// parseLeadingInt parses the leading decimal digits like strtoll.
func parseLeadingInt(b []byte) int64 {
	b = bytes.TrimLeft(b, " \t")
	end := 0
	if end < len(b) && (b[end] == '-' || b[end] == '+') {
		end++
	}
	for end < len(b) && b[end] >= '0' && b[end] <= '9' {
		end++
	}
	v, err := strconv.ParseInt(string(b[:end]), 10, 64)
	if err != nil {
		return 0
	}
	return v
}

// String summarises the header for messages.
func (h *SAMHeader) String() string {
	return fmt.Sprintf("SAM header: %d bytes, %d references, %d read groups", len(h.Text), len(h.Refs), len(h.ReadGroups))
}
