// Package record holds the shape of one alignment as BAM stores it
// (SAMv1 §4.2). The CRAM decoder fills it and the BAM encoder writes it;
// it lives apart from both so that neither pulls in the other (the BAM
// encoder needs none of the CRAM codecs).
package record

// Record is one alignment in the shape BAM stores it (SAMv1 §4.2). A
// decoder fills reusable Records: the byte slices alias buffers owned by
// the decoder and are valid until it decodes into the same buffers again.
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

// Shape is what the length of a record's BAM encoding and its index entry
// follow from: a Record without its bases, qualities, tag values and mate
// fields, and with its CIGAR counted rather than kept. A lean pass over a
// CRAM container fills it without decoding those.
type Shape struct {
	Flags   uint16 // BAM FLAG; the mate bits (0x1, 0x8, 0x20) may lack those derived from mate links
	RefID   int32  // -1 when unplaced
	Pos     int64  // 0-based leftmost position; -1 when unplaced
	NameLen int    // bytes of the read name without its NUL; 0 is written as "*"
	SeqLen  int    // bases (and qualities) BAM stores; 0 for '*'
	AuxLen  int    // bytes of the BAM-encoded auxiliary fields
	// Ops is the number of CIGAR operations; RefLen and QueryLen are the
	// bases they cover on the reference (M, D, N, =, X) and in the read
	// (M, I, S, =, X).
	Ops              int
	RefLen, QueryLen int64
}
