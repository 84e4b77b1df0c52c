package layout

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"

	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/source"
)

// ErrInvalid is returned (wrapped) for an index file that is malformed
// or fails its checksum.
var ErrInvalid = errors.New("layout: invalid index file")

// EncoderVersion names the generation of the BGZF output the engine
// produces for a layout. Bump it whenever the bytes produced for the same
// records change (compressor upgrade, block cutting), so persisted
// layouts rebuild.
const EncoderVersion = 1

// Format is the version of the layout index file format. Format 6
// adds to each segment the content sum of the container the scan measured
// (Segment.Sum); format 5 marks each segment's digest as built by the
// scan, not yet known (a segment measured by a level-0 scan) or learned at
// its first build; format 4 adds the device, inode and ctime to the
// identity; format 3 stored segmentDigest where format 2 stored a CRC-32C
// of all the bytes. Files of formats 5 and 4 are still read
// (LegacyFormats).
const Format = 6

// LegacyFormats are the older formats still read, newest first: in
// format 5 no segment has a content sum (its measured segments' first
// builds are checked against the file's identity), in format 4 every
// segment's digest was built by the scan.
var LegacyFormats = [...]int{5, 4}

// Depends describes everything the bytes of a virtual BAM depend on
// besides the CRAM itself: the format, the BGZF level, block cutting and
// encoder generation, and the source.Source's decoding variant (MD/NM tags on or
// off). It is stored in and keys each index file. The reference is not
// part of it: a layout built by the scan is only made from slices whose
// reference MD5s match, and a segment rebuilt with other bases fails its
// digest, which drops the layout (see Manager.dropLayout); a measured
// segment's first build checks the MD5s itself, and its lengths, which
// other bases can change (MD/NM), drop the layout when they differ.
func Depends(level int, variant string) string {
	return DependsFormat(Format, level, variant)
}

// DependsFormat is Depends for the index format given.
func DependsFormat(format, level int, variant string) string {
	return fmt.Sprintf("cramfs-layout format=%d level=%d cut=%d encoder=%d %s", format, level, bgzf.MaxBlockData, EncoderVersion, variant)
}

// Key names the index file of a CRAM with identity id whose bytes
// depend on depends.
func Key(id source.Identity, depends string) string {
	h := sha256.New()
	h.Write([]byte(depends))
	var b [40]byte
	binary.LittleEndian.PutUint64(b[:], id.Dev)
	binary.LittleEndian.PutUint64(b[8:], id.Ino)
	binary.LittleEndian.PutUint64(b[16:], uint64(id.Size))
	binary.LittleEndian.PutUint64(b[24:], uint64(id.MTime))
	binary.LittleEndian.PutUint64(b[32:], uint64(id.CTime))
	h.Write(b[:])
	h.Write(id.Head[:])
	h.Write(id.Tail[:])
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// File is the content of a persisted layout index.
type File struct {
	Depends string
	ID      source.Identity
	Layout  Layout
	HasBAI  bool   // an index was built (BAI, or CSI when CSI is set)
	BAI     []byte // the index bytes
	CSI     bool   // the index is a CSI (a reference longer than 2^29)
	// Learned holds, by segment, the digests of measured segments
	// (Segment.NoDigest) learned at their first build.
	Learned map[int]uint32
}

// The kinds of a segment's digest in an index file of format 5 or 6.
const (
	digestBuilt   = 0 // computed by the scan
	digestUnknown = 1 // the scan measured the segment; not yet known
	digestLearned = 2 // the scan measured the segment; learned at its first build
)

// The kinds of a segment's content sum in an index file of format 6.
const (
	sumNone   = 0 // none: a segment built by the scan, or measured from a source.Source without sums
	sumCRC32C = 1 // the CRC-32C of the container's data (source.Sum)
)

const (
	indexMagic     = "CRAMFSLX"
	maxDependsLen  = 1 << 10
	segRecordLen   = 8 + 8 + 4 + 1 + 1 + 4 // format 6; format 5 has no sum, format 4 no kind either
	maxSegmentLen  = 1 << 40
	maxIndexFile   = 1 << 30
	indexFixedHead = 8 + 4 + 4 // magic, format, depends length
)

// segRecordLenOf is the length of a segment record in an index file of
// the format given.
func segRecordLenOf(format uint32) int {
	switch format {
	case 4:
		return segRecordLen - 6
	case 5:
		return segRecordLen - 5
	}
	return segRecordLen
}

// Marshal encodes f; see Parse for the format.
func Marshal(f *File) []byte {
	b := make([]byte, 0, 128+len(f.Depends)+segRecordLen*len(f.Layout.Segments)+len(f.BAI))
	b = append(b, indexMagic...)
	b = binary.LittleEndian.AppendUint32(b, Format)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(f.Depends)))
	b = append(b, f.Depends...)
	b = binary.LittleEndian.AppendUint64(b, f.ID.Dev)
	b = binary.LittleEndian.AppendUint64(b, f.ID.Ino)
	b = binary.LittleEndian.AppendUint64(b, uint64(f.ID.Size))
	b = binary.LittleEndian.AppendUint64(b, uint64(f.ID.MTime))
	b = binary.LittleEndian.AppendUint64(b, uint64(f.ID.CTime))
	b = append(b, f.ID.Head[:]...)
	b = append(b, f.ID.Tail[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(f.Layout.Level)))
	putSeg := func(s Segment, i int) {
		kind, d := byte(digestBuilt), s.Digest
		if s.NoDigest {
			kind, d = digestUnknown, 0
			if l, ok := f.Learned[i]; ok {
				kind, d = digestLearned, l
			}
		}
		sumKind := byte(sumNone)
		if s.HasSum {
			sumKind = sumCRC32C
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(s.CompLen))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.RawLen))
		b = binary.LittleEndian.AppendUint32(b, d)
		b = append(b, kind, sumKind)
		b = binary.LittleEndian.AppendUint32(b, s.Sum)
	}
	putSeg(f.Layout.Header, HeaderSegment)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(f.Layout.Segments)))
	for i, s := range f.Layout.Segments {
		putSeg(s, i)
	}
	switch {
	case f.HasBAI && f.CSI:
		b = append(b, 2)
	case f.HasBAI:
		b = append(b, 1)
	default:
		b = append(b, 0)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(f.BAI)))
	b = append(b, f.BAI...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// indexReader consumes an index file, recording the first error.
type indexReader struct {
	b      []byte
	off    int
	err    error
	format uint32 // of the file: whether segments have a kind byte and a sum
}

func (r *indexReader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.err = fmt.Errorf("%w: index truncated reading %s at offset %d: need %d bytes, have %d", ErrInvalid, what, r.off, n, len(r.b)-r.off)
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *indexReader) u64(what string) uint64 {
	if p := r.take(8, what); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (r *indexReader) u32(what string) uint32 {
	if p := r.take(4, what); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

// seg reads a segment and the kind of its digest.
func (r *indexReader) seg(what string) (Segment, byte) {
	at := r.off
	c, u, crc := r.u64(what), r.u64(what), r.u32(what)
	kind, sumKind, sum := byte(digestBuilt), byte(sumNone), uint32(0)
	if r.format >= 5 {
		if p := r.take(1, what); p != nil {
			kind = p[0]
		}
	}
	if r.format >= 6 {
		if p := r.take(1, what); p != nil {
			sumKind = p[0]
		}
		sum = r.u32(what)
	}
	switch {
	case r.err != nil:
	case c > maxSegmentLen || u > maxSegmentLen || (c == 0) != (u == 0):
		r.err = fmt.Errorf("%w: index %s has implausible lengths %d/%d at offset %d", ErrInvalid, what, c, u, at)
	case kind > digestLearned || kind == digestUnknown && crc != 0:
		r.err = fmt.Errorf("%w: index %s has digest kind %d (digest %08x) at offset %d", ErrInvalid, what, kind, crc, at)
	case sumKind > sumCRC32C || sumKind == sumNone && sum != 0 || sumKind != sumNone && kind == digestBuilt:
		r.err = fmt.Errorf("%w: index %s has content sum kind %d (sum %08x) with digest kind %d at offset %d", ErrInvalid, what, sumKind, sum, kind, at)
	}
	// A learned digest is left in Digest for the caller to take.
	return Segment{CompLen: int64(c), RawLen: int64(u), Digest: crc, NoDigest: kind != digestBuilt, Sum: sum, HasSum: sumKind != sumNone}, kind
}

// Parse parses a persisted layout index (untrusted bytes). The format,
// little-endian: magic "CRAMFSLX"; u32 format version; u32 length and the
// dependency string; the CRAM identity (u64 device, u64 inode, i64 size,
// i64 mtime and i64 ctime in ns, SHA-256 of the first and of the last
// 64 KiB); i32 level; the header segment and
// u64 count of container segments, each segment as u64 compressed length,
// u64 raw length, u32 segmentDigest, u8 kind of the digest (digestBuilt,
// digestUnknown with a zero digest, digestLearned; format 4 has no kind:
// built), u8 kind of the content sum (sumNone with a zero sum, sumCRC32C
// for a measured segment only) and u32 content sum (format 5 and 4 have
// neither: none); u8 has-index flag, u64 length and the .bai (SAMv1
// §5.2); a trailing u32 CRC-32C of all preceding bytes. Offsets are
// derived, so every parsed Layout is self-consistent.
func Parse(b []byte) (*File, error) {
	if len(b) < indexFixedHead+4 {
		return nil, fmt.Errorf("%w: index of %d bytes is too short", ErrInvalid, len(b))
	}
	body := b[:len(b)-4]
	if want, got := binary.LittleEndian.Uint32(b[len(b)-4:]), crc32.Checksum(body, castagnoli); want != got {
		return nil, fmt.Errorf("%w: index checksum %08x, stored %08x", ErrInvalid, got, want)
	}
	r := &indexReader{b: body}
	if string(r.take(8, "magic")) != indexMagic {
		return nil, fmt.Errorf("%w: index magic not %q", ErrInvalid, indexMagic)
	}
	if r.format = r.u32("format"); r.format != Format && !slices.Contains(LegacyFormats[:], int(r.format)) {
		return nil, fmt.Errorf("%w: index format %d, want %d or one of %v", ErrInvalid, r.format, Format, LegacyFormats)
	}
	f := &File{}
	dl := r.u32("dependency length")
	if dl > maxDependsLen {
		return nil, fmt.Errorf("%w: index dependency string of %d bytes", ErrInvalid, dl)
	}
	f.Depends = string(r.take(int(dl), "dependency string"))
	f.ID.Dev = r.u64("device")
	f.ID.Ino = r.u64("inode")
	f.ID.Size = int64(r.u64("size"))
	f.ID.MTime = int64(r.u64("mtime"))
	f.ID.CTime = int64(r.u64("ctime"))
	copy(f.ID.Head[:], r.take(32, "head hash"))
	copy(f.ID.Tail[:], r.take(32, "tail hash"))
	f.Layout.Level = int(int32(r.u32("level")))
	var kind byte
	f.Layout.Header, kind = r.seg("header segment")
	n := r.u64("segment count")
	if r.err != nil {
		return nil, r.err
	}
	if f.Layout.Header.CompLen == 0 {
		return nil, fmt.Errorf("%w: index has an empty header segment", ErrInvalid)
	}
	if kind != digestBuilt {
		return nil, fmt.Errorf("%w: index header segment without its digest", ErrInvalid)
	}
	recLen := uint64(segRecordLenOf(r.format))
	if n > uint64(len(body)-r.off)/recLen {
		return nil, fmt.Errorf("%w: index claims %d segments, only %d bytes left", ErrInvalid, n, len(body)-r.off)
	}
	f.Layout.Segments = make([]Segment, 0, n)
	off := f.Layout.Header.CompLen
	for i := uint64(0); i < n && r.err == nil; i++ {
		s, kind := r.seg("segment")
		if kind == digestLearned {
			if f.Learned == nil {
				f.Learned = make(map[int]uint32)
			}
			f.Learned[int(i)] = s.Digest
		}
		if s.NoDigest {
			s.Digest = 0
		}
		s.Offset = off
		off += s.CompLen
		if off > 1<<48 {
			return nil, fmt.Errorf("%w: index segments exceed 2^48 bytes", ErrInvalid)
		}
		f.Layout.Segments = append(f.Layout.Segments, s)
	}
	f.Layout.Size = off + int64(len(bgzf.EOF))
	flag := r.take(1, "index flag")
	bl := r.u64("bai length")
	if r.err != nil {
		return nil, r.err
	}
	if flag[0] > 2 {
		return nil, fmt.Errorf("%w: index flag %d", ErrInvalid, flag[0])
	}
	f.HasBAI, f.CSI = flag[0] >= 1, flag[0] == 2
	if bl > uint64(len(body)-r.off) {
		return nil, fmt.Errorf("%w: index claims a .bai of %d bytes, only %d left", ErrInvalid, bl, len(body)-r.off)
	}
	f.BAI = append([]byte(nil), r.take(int(bl), "bai")...)
	if r.err != nil {
		return nil, r.err
	}
	if r.off != len(body) {
		return nil, fmt.Errorf("%w: %d unexpected bytes after the index at offset %d", ErrInvalid, len(body)-r.off, r.off)
	}
	return f, nil
}

// castagnoli is the CRC-32C table of the index files' checksum.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)
