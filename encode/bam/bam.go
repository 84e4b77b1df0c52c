// Package bam encodes BAM headers and alignment records (SAMv1 §4.2)
// exactly as htslib 1.16 writes them, and parses the @SQ lines of SAM
// header text the way htslib builds a BAM header from it.
package bam

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/cramfs/cramfs/internal/record"
)

// ErrInvalid is returned, wrapped, for a record or header that BAM cannot
// hold or that htslib would reject.
var ErrInvalid = errors.New("bam: invalid record")

// ErrCorrupt is returned, wrapped, by RecordInfo for malformed BAM bytes.
var ErrCorrupt = errors.New("bam: corrupt record")

// Reference is one reference sequence of the BAM header (SAMv1 §4.2).
type Reference struct {
	Name   string
	Length int64
}

// Flag bits used here (SAMv1 §1.4).
const flagUnmapped = 0x4

// CIGAR operations (SAMv1 §4.2).
const (
	cigarSoftClip = 4
	cigarRefSkip  = 3
	// cigarType packs two bits per op: bit 0 consumes query, bit 1
	// consumes reference (ops M I D N S H P = X; others consume nothing).
	cigarType = 0x3C1A7
)

// starName is the name htslib gives a record without one (read only).
var starName = [1]byte{'*'}

// magic starts every BAM stream (SAMv1 §4.2).
var magic = [4]byte{'B', 'A', 'M', 1}

// AppendHeader appends the BAM header (SAMv1 §4.2) to dst: magic "BAM\1",
// l_text, the text as given (no NUL padding), n_ref, then per reference
// l_name (with the NUL), the name, a NUL and l_ref. Like htslib, a name
// ends at its first NUL byte and a length of 2^32-1 or more is written as
// 2^32-1.
func AppendHeader(dst []byte, text []byte, refs []Reference) []byte {
	dst = append(dst, magic[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(text)))
	dst = append(dst, text...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(refs)))
	for _, r := range refs {
		name := r.Name
		for i := 0; i < len(name); i++ {
			if name[i] == 0 {
				name = name[:i]
				break
			}
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(name)+1))
		dst = append(dst, name...)
		dst = append(dst, 0)
		dst = binary.LittleEndian.AppendUint32(dst, refLen(r.Length))
	}
	return dst
}

// refLen maps a header length to the 32-bit l_ref htslib writes.
func refLen(n int64) uint32 {
	if n >= math.MaxUint32 {
		return math.MaxUint32
	}
	return uint32(n)
}

// nt16 maps an ASCII base to its 4-bit BAM code (=ACMGRSVTWYHKDBN, SAMv1
// §4.2); anything else, including lower-case letters outside the IUPAC
// set, becomes N (15). Lower-case IUPAC letters map like upper-case ones.
var nt16 = func() (t [256]byte) {
	for i := range t {
		t[i] = 15
	}
	const codes = "=ACMGRSVTWYHKDBN"
	for i := 0; i < len(codes); i++ {
		c := codes[i]
		t[c] = byte(i)
		if c >= 'A' && c <= 'Z' {
			t[c+'a'-'A'] = byte(i)
		}
	}
	return t
}()

// nt16Pair packs two ASCII bases, read as a little-endian uint16, into
// one BAM byte: the first base's code in the high nibble.
var nt16Pair = func() (t [1 << 16]byte) {
	for i := range t {
		t[i] = nt16[i&0xff]<<4 | nt16[i>>8]
	}
	return t
}()

// Reg2Bin returns the BAI bin (SAMv1 §5.3, min_shift 14, 5 levels) of the
// 0-based half-open region [beg, end), computed like htslib's hts_reg2bin
// (including its results for negative or out-of-range positions),
// truncated to the 16 bits BAM stores.
func Reg2Bin(beg, end int64) uint16 {
	end--
	s, t := uint(14), int64(((1<<15)-1)/7) // 4681, the first level-5 bin
	for l := 5; l > 0; l-- {
		if beg>>s == end>>s {
			return uint16(t + beg>>s)
		}
		s += 3
		t -= 1 << (3 * (l - 1))
	}
	return 0
}

// cigarLens returns the reference and query lengths of a CIGAR (SAMv1
// §1.4.6).
func cigarLens(cigar []uint32) (rlen, qlen int64) {
	for _, c := range cigar {
		t := cigarType >> ((c & 0xf) << 1) & 3
		n := int64(c >> 4)
		if t&1 != 0 {
			qlen += n
		}
		if t&2 != 0 {
			rlen += n
		}
	}
	return rlen, qlen
}

// AppendRecord appends one BAM alignment record (SAMv1 §4.2.1), block_size
// prefix included, to dst, byte for byte as htslib 1.16 writes the record
// that bam_set1 builds from the same fields: an empty name becomes "*"
// and a name stops at an embedded NUL (the rest zero-filled); bin is
// reg2bin over [pos, pos+rlen) where rlen is the CIGAR's reference length
// (0 for unmapped reads) or 1 when that is 0; absent qualities (empty
// Qual) are written as 0xFF; Aux is copied verbatim. A record with more
// than 65535 CIGAR ops gets htslib's placeholder CIGAR <l_seq>S<rlen>N and
// the real CIGAR appended as a CG:B:I tag. It allocates only when dst has
// too little capacity.
func AppendRecord(dst []byte, r *record.Record) ([]byte, error) {
	name := r.Name
	if len(name) == 0 {
		name = starName[:]
	}
	if len(name) > 254 {
		return dst, fmt.Errorf("%w: read name is %d bytes, at most 254 allowed", ErrInvalid, len(name))
	}
	unmapped := r.Flags&flagUnmapped != 0
	var rlen, qlen int64
	if !unmapped {
		rlen, qlen = cigarLens(r.Cigar)
	}
	if rlen == 0 {
		rlen = 1
	}
	lseq := len(r.Seq)
	switch {
	case len(r.Qual) != 0 && len(r.Qual) != lseq:
		return dst, fmt.Errorf("%w: %q has %d qualities for %d bases", ErrInvalid, name, len(r.Qual), lseq)
	case !unmapped && lseq > 0 && len(r.Cigar) == 0:
		return dst, fmt.Errorf("%w: %q is mapped with a sequence but has no CIGAR", ErrInvalid, name)
	case !unmapped && lseq > 0 && int64(lseq) != qlen:
		return dst, fmt.Errorf("%w: %q: CIGAR query length %d, sequence length %d", ErrInvalid, name, qlen, lseq)
	case r.Pos > math.MaxInt32 || r.Pos < math.MinInt32:
		return dst, fmt.Errorf("%w: %q: position %d does not fit BAM's 32 bits", ErrInvalid, name, r.Pos)
	case r.MatePos > math.MaxInt32 || r.MatePos < math.MinInt32:
		return dst, fmt.Errorf("%w: %q: mate position %d does not fit BAM's 32 bits", ErrInvalid, name, r.MatePos)
	case r.TemplateLength < math.MinInt32 || r.TemplateLength > math.MaxInt32:
		return dst, fmt.Errorf("%w: %q: template length %d does not fit 32 bits", ErrInvalid, name, r.TemplateLength)
	}
	longCigar := len(r.Cigar) > 0xffff
	var cigRef int64
	nCigarBytes := 4 * len(r.Cigar)
	if longCigar {
		cigRef, _ = cigarLens(r.Cigar)
		if cigRef >= 1<<28 {
			return dst, fmt.Errorf("%w: %q: %d CIGAR ops covering %d reference bases cannot be written in BAM", ErrInvalid, name, len(r.Cigar), cigRef)
		}
		nCigarBytes = 8 + 8 + 4*len(r.Cigar) // placeholder, "CGBI" + count, real CIGAR
	}
	size := 32 + int64(len(name)) + 1 + int64(nCigarBytes) + int64((lseq+1)/2) + int64(lseq) + int64(len(r.Aux))
	if size > math.MaxInt32 {
		return dst, fmt.Errorf("%w: %q: record of %d bytes exceeds the BAM limit", ErrInvalid, name, size)
	}

	start := len(dst)
	total := 4 + int(size)
	if cap(dst)-start < total {
		nd := make([]byte, start, 2*cap(dst)+total)
		copy(nd, dst)
		dst = nd
	}
	dst = dst[:start+total]
	b := dst[start:]
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(size))
	le.PutUint32(b[4:], uint32(r.RefID))
	le.PutUint32(b[8:], uint32(r.Pos))
	bin := Reg2Bin(r.Pos, r.Pos+rlen)
	le.PutUint32(b[12:], uint32(bin)<<16|uint32(r.MapQ)<<8|uint32(len(name)+1))
	nc := uint32(len(r.Cigar))
	if longCigar {
		nc = 2
	}
	le.PutUint32(b[16:], uint32(r.Flags)<<16|nc)
	le.PutUint32(b[20:], uint32(lseq))
	le.PutUint32(b[24:], uint32(r.MateRefID))
	le.PutUint32(b[28:], uint32(r.MatePos))
	le.PutUint32(b[32:], uint32(r.TemplateLength))
	p := 36
	// The name is copied up to an embedded NUL and zero-filled, like strncpy.
	k := bytes.IndexByte(name, 0)
	if k < 0 {
		k = len(name)
	}
	copy(b[p:], name[:k])
	clear(b[p+k : p+len(name)+1])
	p += len(name) + 1
	if longCigar {
		le.PutUint32(b[p:], uint32(lseq)<<4|cigarSoftClip)
		le.PutUint32(b[p+4:], uint32(cigRef)<<4|cigarRefSkip)
		p += 8
	} else {
		p += putCigar(b[p:], r.Cigar)
	}
	packSeq(b[p:p+(lseq+1)/2], r.Seq)
	p += (lseq + 1) / 2
	if len(r.Qual) == 0 {
		for j := 0; j < lseq; j++ {
			b[p+j] = 0xff
		}
	} else {
		copy(b[p:], r.Qual)
	}
	p += lseq
	p += copy(b[p:], r.Aux)
	if longCigar {
		b[p], b[p+1], b[p+2], b[p+3] = 'C', 'G', 'B', 'I'
		le.PutUint32(b[p+4:], uint32(len(r.Cigar)))
		p += 8
		putCigar(b[p:], r.Cigar)
	}
	return dst, nil
}

// nativeLittle tells that uint32s are stored little-endian in memory, as
// BAM stores them.
var nativeLittle = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// putCigar writes the CIGAR operations to b as BAM's little-endian
// uint32s and returns the bytes written. Where memory is little-endian
// already that is one copy: long reads have thousands of operations per
// record, for which a store per operation cost 5% of a conversion.
func putCigar(b []byte, cigar []uint32) int {
	n := 4 * len(cigar)
	if nativeLittle && n > 0 {
		return copy(b[:n], unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(cigar))), n))
	}
	return putCigarLE(b, cigar)
}

// putCigarLE is putCigar one operation at a time, whatever the byte order
// of memory.
func putCigarLE(b []byte, cigar []uint32) int {
	b = b[:4*len(cigar)]
	for i, c := range cigar {
		binary.LittleEndian.PutUint32(b[4*i:], c)
	}
	return len(b)
}

// packSeq packs ASCII bases two per byte as 4-bit codes, the first in the
// high nibble (SAMv1 §4.2.1, seq); out holds (len(seq)+1)/2 bytes. The
// vector path (amd64 with AVX2) takes sequences of 32 bases or more.
func packSeq(out, seq []byte) {
	if n := packSeqVector(out, seq); n > 0 {
		seq, out = seq[n:], out[n/2:]
	}
	packSeqScalar(out, seq)
}

// packSeqScalar is packSeq without the vector path. The loops are shaped
// so that the compiler drops every bounds check.
func packSeqScalar(out, seq []byte) {
	le := binary.LittleEndian
	for len(seq) >= 16 && len(out) >= 8 {
		x, y := le.Uint64(seq), le.Uint64(seq[8:])
		le.PutUint64(out, uint64(nt16Pair[uint16(x)])|
			uint64(nt16Pair[uint16(x>>16)])<<8|
			uint64(nt16Pair[uint16(x>>32)])<<16|
			uint64(nt16Pair[uint16(x>>48)])<<24|
			uint64(nt16Pair[uint16(y)])<<32|
			uint64(nt16Pair[uint16(y>>16)])<<40|
			uint64(nt16Pair[uint16(y>>32)])<<48|
			uint64(nt16Pair[uint16(y>>48)])<<56)
		seq, out = seq[16:], out[8:]
	}
	for len(seq) >= 2 && len(out) >= 1 {
		out[0] = nt16[seq[0]]<<4 | nt16[seq[1]]
		seq, out = seq[2:], out[1:]
	}
	if len(seq) == 1 && len(out) == 1 {
		out[0] = nt16[seq[0]] << 4
	}
}

// RecordInfo reads the BAM record at the start of rec (block_size prefix
// included, SAMv1 §4.2.1) and returns its refID, pos, flags and end, the
// end computed like htslib's bam_endpos: pos plus the CIGAR's reference
// length, or pos+1 when the read is unmapped or that length is 0. It checks
// that the fixed-length fields fit within block_size.
func RecordInfo(rec []byte) (refID int32, pos, end int64, flags uint16, err error) {
	if len(rec) < 4 {
		return 0, 0, 0, 0, fmt.Errorf("%w: %d bytes, want a 4-byte block_size", ErrCorrupt, len(rec))
	}
	le := binary.LittleEndian
	bs := int64(le.Uint32(rec))
	if bs < 32 {
		return 0, 0, 0, 0, fmt.Errorf("%w: block_size %d, want at least 32", ErrCorrupt, bs)
	}
	if bs > int64(len(rec)-4) {
		return 0, 0, 0, 0, fmt.Errorf("%w: block_size %d but only %d bytes follow", ErrCorrupt, bs, len(rec)-4)
	}
	b := rec[4 : 4+bs]
	refID = int32(le.Uint32(b[0:]))
	pos = int64(int32(le.Uint32(b[4:])))
	lname := int64(b[8])
	flagNC := le.Uint32(b[12:])
	flags = uint16(flagNC >> 16)
	nc := int64(flagNC & 0xffff)
	lseq := int64(int32(le.Uint32(b[16:])))
	if lname < 1 || lseq < 0 {
		return 0, 0, 0, 0, fmt.Errorf("%w: l_read_name %d, l_seq %d", ErrCorrupt, lname, lseq)
	}
	if need := 32 + lname + 4*nc + (lseq+1)/2 + lseq; need > bs {
		return 0, 0, 0, 0, fmt.Errorf("%w: fields need %d bytes, block_size is %d", ErrCorrupt, need, bs)
	}
	rlen := int64(0)
	if flags&flagUnmapped == 0 {
		c := b[32+lname:]
		for i := int64(0); i < nc; i++ {
			op := le.Uint32(c[4*i:])
			if cigarType>>((op&0xf)<<1)&2 != 0 {
				rlen += int64(op >> 4)
			}
		}
	}
	if rlen == 0 {
		rlen = 1
	}
	return refID, pos, pos + rlen, flags, nil
}
