package bam

import (
	"encoding/binary"
	"testing"

	"github.com/cramfs/cramfs/internal/record"
)

// shapeOf is the Shape of r, its CIGAR counted.
func shapeOf(r *record.Record) record.Shape {
	ref, query := cigarLens(r.Cigar)
	return record.Shape{Flags: r.Flags, RefID: r.RefID, Pos: r.Pos, NameLen: len(r.Name), SeqLen: len(r.Seq), AuxLen: len(r.Aux),
		Ops: len(r.Cigar), RefLen: ref, QueryLen: query}
}

// checkShape compares ShapeLayout with what AppendRecord writes for r and
// RecordInfo reads back: both fail, or the length and end agree.
func checkShape(t *testing.T, r *record.Record) {
	t.Helper()
	s := shapeOf(r)
	n, end, err := ShapeLayout(&s)
	out, aerr := AppendRecord(nil, r)
	if (err == nil) != (aerr == nil) {
		t.Fatalf("ShapeLayout: %v, AppendRecord: %v", err, aerr)
	}
	if err != nil {
		return
	}
	_, _, wantEnd, _, ierr := RecordInfo(out)
	if ierr != nil {
		t.Fatal(ierr)
	}
	if n != int64(len(out)) || end != wantEnd {
		t.Fatalf("ShapeLayout gives %d bytes ending at %d, AppendRecord %d bytes ending at %d", n, end, len(out), wantEnd)
	}
}

// TestShapeLayoutHandBuilt checks ShapeLayout on the hand-built records
// (those samtools agrees with) and on the corner cases of the layout: no
// name, no sequence, a long CIGAR, unmapped with a CIGAR.
func TestShapeLayoutHandBuilt(t *testing.T) {
	for _, c := range handBuilt() {
		checkShape(t, &c.rec)
	}
	long := make([]uint32, 70000)
	for i := range long {
		long[i] = 1<<4 | uint32(i%2) // 1M1I...
	}
	seq := make([]byte, 70000)
	for _, r := range []record.Record{
		{Flags: 0, Pos: 5, Cigar: cigar("3M"), Seq: []byte("ACG")},
		{Name: []byte("r"), Flags: 4, Pos: -1, Cigar: cigar("2M"), Seq: []byte("AC"), Aux: []byte("XAZx\x00")},
		{Name: []byte("r"), Flags: 0, Pos: 100, Cigar: cigar("5M10D"), Seq: nil},
		{Name: []byte("r"), Flags: 0, Pos: 100, Cigar: long, Seq: seq},
		{Name: []byte("r"), Flags: 0, Pos: 100, Cigar: cigar("3M"), Seq: []byte("ACGT")},  // query length mismatch
		{Name: make([]byte, 255), Flags: 4, Pos: -1},                                      // name too long
		{Name: []byte("r"), Flags: 0, Pos: 1 << 31, Cigar: cigar("1M"), Seq: []byte("A")}, // position beyond 32 bits
	} {
		checkShape(t, &r)
	}
}

// FuzzShapeLayout is checkShape for records with arbitrary field values
// (the mate fields, which ShapeLayout leaves to its caller, in range).
func FuzzShapeLayout(f *testing.F) {
	for _, c := range handBuilt() {
		r := c.rec
		if len(r.Cigar) > 100 {
			continue
		}
		cig := make([]byte, 0, 4*len(r.Cigar))
		for _, op := range r.Cigar {
			cig = binary.LittleEndian.AppendUint32(cig, op)
		}
		f.Add(uint8(len(r.Name)), r.Flags, r.Pos, cig, uint16(len(r.Seq)), uint16(len(r.Aux)), false)
	}
	f.Fuzz(func(t *testing.T, nameLen uint8, flags uint16, pos int64, cig []byte, lseq, laux uint16, long bool) {
		r := record.Record{Name: make([]byte, nameLen), Flags: flags, Pos: pos, Seq: make([]byte, lseq), Aux: make([]byte, laux)}
		for i := 0; i+4 <= len(cig); i += 4 {
			r.Cigar = append(r.Cigar, binary.LittleEndian.Uint32(cig[i:]))
		}
		for long && len(r.Cigar) > 0 && len(r.Cigar) <= 0xffff {
			r.Cigar = append(r.Cigar, r.Cigar...)
		}
		checkShape(t, &r)
	})
}
