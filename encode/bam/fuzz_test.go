package bam

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/cramfs/cramfs/internal/record"
)

// FuzzAppendRecord encodes records with arbitrary field values and checks
// that each either fails with ErrInvalid or parses back consistently with
// RecordInfo: refID, pos, flags, block_size, the bin of [pos, end), the
// name, and the sequence and quality lengths.
func FuzzAppendRecord(f *testing.F) {
	for _, c := range handBuilt() {
		r := c.rec
		if len(r.Cigar) > 100 {
			continue
		}
		cig := make([]byte, 0, 4*len(r.Cigar))
		for _, op := range r.Cigar {
			cig = binary.LittleEndian.AppendUint32(cig, op)
		}
		f.Add(r.Name, r.Flags, r.RefID, r.Pos, r.MapQ, cig, r.MateRefID, r.MatePos, r.TemplateLength, r.Seq, r.Qual, []byte(r.Aux), uint16(0))
	}
	f.Fuzz(func(t *testing.T, name []byte, flags uint16, refID int32, pos int64, mapq uint8, cig []byte,
		mref int32, mpos, tlen int64, seq, qual, aux []byte, repeat uint16) {
		r := record.Record{Name: name, Flags: flags, RefID: refID, Pos: pos, MapQ: mapq, MateRefID: mref,
			MatePos: mpos, TemplateLength: tlen, Seq: seq, Qual: qual, Aux: aux}
		for i := 0; i+4 <= len(cig); i += 4 {
			r.Cigar = append(r.Cigar, binary.LittleEndian.Uint32(cig[i:]))
		}
		if repeat > 0 && len(r.Cigar) > 0 {
			// Reach the long-CIGAR path now and then.
			for len(r.Cigar) <= 0xffff && repeat&1 == 1 {
				r.Cigar = append(r.Cigar, r.Cigar...)
			}
		}
		out, err := AppendRecord([]byte{1, 2, 3}, &r)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if out[0] != 1 || out[1] != 2 || out[2] != 3 {
			t.Fatal("prefix overwritten")
		}
		rec := out[3:]
		tid, p, end, fl, err := RecordInfo(rec)
		if err != nil {
			t.Fatalf("RecordInfo: %v", err)
		}
		le := binary.LittleEndian
		if int(le.Uint32(rec))+4 != len(rec) {
			t.Fatalf("block_size %d, record %d bytes", le.Uint32(rec), len(rec))
		}
		if tid != refID || p != pos || fl != flags {
			t.Fatalf("RecordInfo %d %d %d, want %d %d %d", tid, p, fl, refID, pos, flags)
		}
		if bin := le.Uint16(rec[14:]); bin != Reg2Bin(p, end) {
			t.Fatalf("bin %d, reg2bin(%d, %d) = %d", bin, p, end, Reg2Bin(p, end))
		}
		wantName := len(name)
		if wantName == 0 {
			wantName = 1
		}
		if int(rec[12]) != wantName+1 || rec[4+32+wantName] != 0 {
			t.Fatalf("l_read_name %d for a %d-byte name", rec[12], len(name))
		}
		if int(le.Uint32(rec[20:])) != len(seq) {
			t.Fatalf("l_seq %d, want %d", le.Uint32(rec[20:]), len(seq))
		}
		off := 36 + int(rec[12]) + 4*int(le.Uint16(rec[16:]))
		want := make([]byte, (len(seq)+1)/2)
		packSeqRef(want, seq)
		if got := rec[off : off+len(want)]; !bytes.Equal(got, want) {
			t.Fatalf("seq %x, want %x", got, want)
		}
	})
}
