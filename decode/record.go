package decode

// Record is one alignment decoded from a CRAM slice, in the shape BAM
// stores it (SAMv1 §4.2). Slices decode into reusable Records: the byte
// slices alias buffers owned by the slice decoder and are valid until the
// next slice is decoded into the same buffers.
type Record struct {
	Name           []byte   // read name, without the trailing NUL
	Flags          uint16   // BAM FLAG
	RefID          int32    // -1 when unplaced
	Pos            int64    // 0-based leftmost position; -1 when unplaced
	MapQ           uint8    // mapping quality
	Cigar          []uint32 // BAM-encoded CIGAR ops: len<<4 | op
	MateRefID      int32    // -1 when unplaced
	MatePos        int64    // 0-based; -1 when unplaced
	TemplateLength int64    // TLEN
	Seq            []byte   // bases as ASCII letters (=ACMGRSVTWYHKDBN); empty for '*'
	Qual           []byte   // Phred scores (no +33), len(Seq) bytes; all 0xFF when absent
	Aux            []byte   // auxiliary fields, BAM-encoded: tag[2] type value...
}
