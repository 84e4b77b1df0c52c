package decode

import (
	"bytes"
	"fmt"
)

// SliceHeader is the header block of a slice (CRAMv3 §8.5).
type SliceHeader struct {
	RefSeqID      int32
	RefStart      int64
	RefSpan       int64
	NumRecords    int32
	RecordCounter int64
	NumBlocks     int32
	ContentIDs    []int32
	EmbeddedRefID int32
	RefMD5        [16]byte
	OptionalTags  []byte
}

// parseSliceHeader parses the raw bytes of a slice header block.
func parseSliceHeader(b []byte, major int) (SliceHeader, error) {
	var h SliceHeader
	pos := 0
	var err error
	var v int32
	if h.RefSeqID, err = readITF8(b, &pos); err != nil {
		return h, err
	}
	if v, err = readITF8(b, &pos); err != nil {
		return h, err
	}
	h.RefStart = int64(v)
	if v, err = readITF8(b, &pos); err != nil {
		return h, err
	}
	h.RefSpan = int64(v)
	if h.RefStart < 0 || h.RefSpan < 0 {
		return h, corruptf("slice header: reference start %d, span %d", h.RefStart, h.RefSpan)
	}
	if h.NumRecords, err = readITF8(b, &pos); err != nil {
		return h, err
	}
	if h.NumRecords < 0 {
		return h, corruptf("slice header: %d records", h.NumRecords)
	}
	if major >= 3 {
		if h.RecordCounter, err = readLTF8(b, &pos); err != nil {
			return h, err
		}
	} else {
		if v, err = readITF8(b, &pos); err != nil {
			return h, err
		}
		h.RecordCounter = int64(v)
	}
	if h.NumBlocks, err = readITF8(b, &pos); err != nil {
		return h, err
	}
	if h.ContentIDs, err = readArrayITF8(b, &pos, nil); err != nil {
		return h, err
	}
	if h.EmbeddedRefID, err = readITF8(b, &pos); err != nil {
		return h, err
	}
	if pos+16 > len(b) {
		return h, corruptf("slice header: reference MD5 missing")
	}
	copy(h.RefMD5[:], b[pos:pos+16])
	pos += 16
	if pos < len(b) {
		h.OptionalTags = b[pos:]
	}
	if h.NumBlocks < 0 {
		return h, corruptf("slice header: %d blocks", h.NumBlocks)
	}
	return h, nil
}

// errBeyondSlice is htslib's "CIGAR extends beyond slice reference extents".
func errBeyondSlice(pos int64) error {
	return corruptf("alignment at reference position %d extends beyond the slice's reference extents", pos+1)
}

// refView gives reference bases to the record decoder. For a single
// reference slice it holds the slice's span; for multi-reference slices it
// loads windows of a whole contig on demand.
type refView struct {
	buf   []byte
	start int64 // 0-based position of buf[0]
	// limit is the exclusive 0-based end the decoder may read (htslib's ref_end).
	limit int64
	// load fetches [start, end) of the current contig; nil for a fixed view.
	load func(dst []byte, start, end int64) ([]byte, error)
	// nFrom and nNext remember hasN's last scan of buf (when nScanned):
	// no 'N' in [nFrom, nNext), and nNext is an 'N' or the end of buf.
	nFrom, nNext int64
	nScanned     bool
}

// slice returns the bases of [from, to). Callers check the range against
// limit first, as htslib does.
func (v *refView) slice(from, to int64) ([]byte, error) {
	if from >= v.start && to <= v.start+int64(len(v.buf)) && from <= to {
		return v.buf[from-v.start : to-v.start], nil
	}
	if v.load == nil || from < 0 || to > v.limit || from > to {
		return nil, errBeyondSlice(to)
	}
	end := min(max(to, from+1<<20), v.limit)
	var err error
	v.buf, err = v.load(v.buf[:0], from, end)
	if err != nil {
		return nil, err
	}
	v.start = from
	v.nScanned = false
	if int64(len(v.buf)) < to-from {
		return nil, fmt.Errorf("%w: reference returned %d bases for [%d,%d)", ErrReference, len(v.buf), from, end)
	}
	return v.buf[:to-from], nil
}

// hasN reports whether the bases of [from, to), which a call of slice has
// just returned, hold an 'N'. Records come sorted, so one scan ahead to
// the next 'N' answers the checks of many reads.
func (v *refView) hasN(from, to int64) bool {
	if !v.nScanned || from < v.nFrom || from > v.nNext {
		rest := v.buf[from-v.start:]
		v.nFrom, v.nNext, v.nScanned = from, from+int64(len(rest)), true
		if i := bytes.IndexByte(rest, 'N'); i >= 0 {
			v.nNext = from + int64(i)
		}
	}
	return v.nNext < to
}

func (v *refView) at(pos int64) (byte, error) {
	b, err := v.slice(pos, pos+1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}
