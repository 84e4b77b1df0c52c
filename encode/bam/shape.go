package bam

import (
	"fmt"
	"math"

	"github.com/cramfs/cramfs/internal/record"
)

// ShapeLayout returns what AppendRecord would write for a record of shape
// s: its length in bytes (block_size prefix included) and the alignment
// end RecordInfo would read back from it. It checks what AppendRecord
// checks of the fields a Shape has, with errors wrapping ErrInvalid; the
// mate fields and the template length are the caller's to check.
func ShapeLayout(s *record.Shape) (length, end int64, err error) {
	nameLen := s.NameLen
	if nameLen == 0 {
		nameLen = 1 // "*"
	}
	if nameLen > 254 {
		return 0, 0, fmt.Errorf("%w: read name is %d bytes, at most 254 allowed", ErrInvalid, nameLen)
	}
	unmapped := s.Flags&flagUnmapped != 0
	nOps, cigRef, cigQuery := s.Ops, s.RefLen, s.QueryLen
	var rlen, qlen int64
	if !unmapped {
		rlen, qlen = cigRef, cigQuery
	}
	lseq := s.SeqLen
	switch {
	case lseq < 0 || s.AuxLen < 0:
		return 0, 0, fmt.Errorf("%w: %d bases, %d tag bytes", ErrInvalid, lseq, s.AuxLen)
	case !unmapped && lseq > 0 && nOps == 0:
		return 0, 0, fmt.Errorf("%w: mapped with a sequence but no CIGAR", ErrInvalid)
	case !unmapped && lseq > 0 && int64(lseq) != qlen:
		return 0, 0, fmt.Errorf("%w: CIGAR query length %d, sequence length %d", ErrInvalid, qlen, lseq)
	case s.Pos > math.MaxInt32 || s.Pos < math.MinInt32:
		return 0, 0, fmt.Errorf("%w: position %d does not fit BAM's 32 bits", ErrInvalid, s.Pos)
	}
	nCigarBytes := int64(4 * nOps)
	if nOps > 0xffff {
		// The placeholder CIGAR <l_seq>S<rlen>N and the CG:B:I tag.
		if cigRef >= 1<<28 {
			return 0, 0, fmt.Errorf("%w: %d CIGAR ops covering %d reference bases cannot be written in BAM", ErrInvalid, nOps, cigRef)
		}
		nCigarBytes = 8 + 8 + 4*int64(nOps)
	}
	size := 32 + int64(nameLen) + 1 + nCigarBytes + int64((lseq+1)/2) + int64(lseq) + int64(s.AuxLen)
	if size > math.MaxInt32 {
		return 0, 0, fmt.Errorf("%w: record of %d bytes exceeds the BAM limit", ErrInvalid, size)
	}
	if rlen == 0 {
		rlen = 1
	}
	// RecordInfo reads pos back as int32, which it fits (checked above).
	return 4 + size, s.Pos + rlen, nil
}
