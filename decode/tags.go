package decode

import (
	"fmt"
)

// readTags decodes the tags of the record's tag line (TL) into the aux
// buffer (CRAMv3 §10.5, DecodeTagData; htslib's cram_decode_aux). It
// reports whether MD and NM are present. CRAM 4.0's placeholders are
// filled in: RG* with the record's read group, MD* and NM* with room that
// decodeSeq fills (d.mdSlot, d.nmSlot).
func (d *Decoder) readTags(ch *CompressionHeader, cr *crec) (hasMD, hasNM bool, err error) {
	d.mdSlot, d.nmSlot = -1, -1
	tl, err := d.readInt(&ch.DataSeries, DSTL)
	if err != nil {
		return false, false, err
	}
	if tl < 0 || int(tl) >= len(ch.TagLines) {
		return false, false, corruptf("tag line %d, dictionary has %d", tl, len(ch.TagLines))
	}
	plan := &ch.tagPlans[tl]
	hasMD, hasNM = plan.hasMD, plan.hasNM
	cr.auxOff = int32(len(d.aux))
	for k := range plan.ops {
		op := &plan.ops[k]
		if op.kind >= tagMDSlot {
			d.placeholder(op.kind, op.key[0], op.key[1], cr)
			continue
		}
		if op.kind == tagGeneral && op.enc == nil {
			return false, false, corruptf("tag %s has no encoding", op.key[:])
		}
		start := len(d.aux)
		if err := d.readTag(op); err != nil {
			return false, false, fmt.Errorf("tag %s: %w", op.key[:], err)
		}
		if op.cF && len(d.aux)-start == 4 {
			// htslib's private cF tag: bit 1 keeps MD, bit 2 keeps NM from
			// being generated. It is not output.
			cF := d.aux[start+3]
			d.aux = d.aux[:start]
			if cF&1 != 0 {
				hasMD = true
			}
			if cF&2 != 0 {
				hasNM = true
			}
		}
	}
	return hasMD, hasNM, nil
}

// readTag appends one tag of the record, read as op says, to the aux
// buffer: its key and type, then its value. The value of an integer tag
// (tagConst: 1, 2 or 4 bytes, most records have several) is copied byte
// by byte rather than by a call of memmove.
func (d *Decoder) readTag(op *tagOp) error {
	switch op.kind {
	case tagConst:
		x, err := op.block(&d.st, op.val)
		if err != nil {
			return err
		}
		b, err := x.readN(op.n)
		if err != nil {
			return err
		}
		switch len(b) {
		case 1:
			d.aux = append(d.aux, op.key[0], op.key[1], op.key[2], b[0])
		case 2:
			d.aux = append(d.aux, op.key[0], op.key[1], op.key[2], b[0], b[1])
		case 4:
			d.aux = append(d.aux, op.key[0], op.key[1], op.key[2], b[0], b[1], b[2], b[3])
		default:
			d.aux = append(d.aux, op.key[0], op.key[1], op.key[2])
			d.aux = append(d.aux, b...)
		}
	case tagStop:
		x, err := op.block(&d.st, op.enc)
		if err != nil {
			return err
		}
		b, err := x.readUntil(op.enc.Stop)
		if err != nil {
			return err
		}
		d.aux = append(d.aux, op.key[0], op.key[1], op.key[2])
		d.aux = append(d.aux, b...)
	default:
		d.aux = append(d.aux, op.key[0], op.key[1], op.key[2])
		var err error
		if d.aux, err = op.enc.appendArray(&d.st, d.aux); err != nil {
			return err
		}
	}
	return nil
}

// bindTags finds, for the records of a slice, the block each tag of
// fixed length (tagConst) or with a stop byte (tagStop) of the tag lines
// of ch reads, so that readTag takes it without going through its
// encoding; nil when the slice lacks it (readTag then fails as the
// encoding does).
func (s *streams) bindTags(ch *CompressionHeader) {
	for i := range ch.tagPlans {
		ops := ch.tagPlans[i].ops
		for k := range ops {
			op := &ops[k]
			switch op.kind {
			case tagConst:
				op.x = s.externalOf(op.val)
			case tagStop:
				op.x = s.byteArrayStopOf(op.enc)
			}
		}
	}
}

// placeholder writes a CRAM 4.0 placeholder tag as htslib 1.16 does: MD*
// becomes MD:Z with its text to come at d.mdSlot, NM* an NM:I of 0 whose
// value decodeSeq may set at d.nmSlot, and RG* the record's RG:Z, which is
// then not added at the end (nothing when the read group is unknown).
func (d *Decoder) placeholder(kind tagKind, op0, op1 byte, cr *crec) {
	switch kind {
	case tagMDSlot:
		d.aux = append(d.aux, 'M', 'D', 'Z')
		d.mdSlot = len(d.aux)
	case tagNMSlot:
		d.aux = append(d.aux, 'N', 'M', 'I', 0, 0, 0, 0)
		d.nmSlot = len(d.aux) - 4
	case tagZSlot:
		d.aux = append(d.aux, op0, op1, 'Z')
	case tagRGSlot:
		if cr.rg >= 0 {
			d.aux = append(d.aux, 'R', 'G', 'Z')
			d.aux = append(d.aux, d.f.ReadGroups[cr.rg]...)
			d.aux = append(d.aux, 0)
			cr.rg = -1
		}
	}
}

// tagPlan is how a record reads the tags of one tag line (CRAMv3 §8.4, Tag encodings):
// one tagOp per tag, and whether the line holds MD or NM, which are then
// not generated.
type tagPlan struct {
	ops          []tagOp
	hasMD, hasNM bool
}

// tagOp reads the value of one tag.
type tagOp struct {
	key  [3]byte
	kind tagKind
	cF   bool      // htslib's private cF:C tag (see readTags)
	n    int       // tagConst: the length
	enc  *Encoding // the tag's encoding; nil when the header gives none
	val  *Encoding // tagConst: the EXTERNAL encoding of the bytes
	// x is the block a tagConst or tagStop op reads in the slice being
	// decoded (bindTags), nil when the slice lacks it.
	x *extStream
}

// block is the block op reads with e: the one bindTags found for the
// slice, else (none found, or its decompression left for later) e's.
func (op *tagOp) block(st *streams, e *Encoding) (*extStream, error) {
	if x := op.x; x != nil && !x.pending {
		return x, nil
	}
	return e.stream(st)
}

type tagKind uint8

const (
	tagGeneral tagKind = iota // appendArray
	tagConst                  // a fixed number of bytes from one external block
	tagStop                   // BYTE_ARRAY_STOP
	// CRAM 4.0's placeholders, read from no block (see placeholder); the
	// kinds from tagMDSlot on are all placeholders.
	tagMDSlot
	tagNMSlot
	tagRGSlot
	tagZSlot // another X*: XX:Z with no text (htslib 1.16 writes no more)
)

// planTagLine builds the plan of one tag line from the tag encodings.
// tagConst is how CRAM writers store integer tags: BYTE_ARRAY_LEN with a
// one-symbol HUFFMAN length (read with no bits), or from CRAM 4.0 on a
// CONST_INT one, and EXTERNAL bytes. v4 turns the type '*' into
// placeholders (htslib 1.16 knows MD*, NM* and RG*; any other X* is an
// MD-like Z tag whose text never comes, as there).
func planTagLine(line []byte, tags map[int32]*Encoding, v4 bool) tagPlan {
	var p tagPlan
	p.ops = make([]tagOp, len(line)/3)
	for j := range p.ops {
		t := line[3*j : 3*j+3]
		op := &p.ops[j]
		copy(op.key[:], t)
		op.cF = t[0] == 'c' && t[1] == 'F' && t[2] == 'C'
		if v4 && t[2] == '*' {
			op.kind = tagZSlot
			switch {
			case t[0] == 'M' && t[1] == 'D':
				op.kind = tagMDSlot
			case t[0] == 'N' && t[1] == 'M':
				op.kind = tagNMSlot
			case t[0] == 'R' && t[1] == 'G':
				op.kind = tagRGSlot
			}
			continue
		}
		if t[0] == 'M' && t[1] == 'D' {
			p.hasMD = true
		}
		if t[0] == 'N' && t[1] == 'M' {
			p.hasNM = true
		}
		e := tags[int32(t[0])<<16|int32(t[1])<<8|int32(t[2])]
		op.enc = e
		switch {
		case e == nil:
		case e.ID == EncodingByteArrayLen && e.Len.ID == EncodingHuffman && e.Len.huff.count[0] > 0 &&
			e.Len.huff.symbols[0] >= 0 && e.Val.ID == EncodingExternal:
			op.kind, op.n, op.val = tagConst, int(e.Len.huff.symbols[0]), e.Val
		case e.ID == EncodingByteArrayLen && e.Len.ID == EncodingConstInt && e.Len.const32() >= 0 &&
			e.Val.ID == EncodingExternal:
			op.kind, op.n, op.val = tagConst, int(e.Len.const32()), e.Val
		case e.ID == EncodingByteArrayStop:
			op.kind = tagStop
		}
	}
	return p
}
