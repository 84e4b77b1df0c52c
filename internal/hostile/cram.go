package hostile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// ErrLayout reports an input that is not a CRAM this package can take
// apart: the generator needs a well-formed file to damage.
var ErrLayout = errors.New("hostile: cannot parse the original CRAM")

// fileDefSize is the length of the CRAM file definition (CRAMv3 §6).
const fileDefSize = 26

// field is one encoded value of a header: where it sits and what it holds.
type field struct {
	off, len int
	val      int64
}

// block is one parsed block (CRAMv3 §8): its header values, payload and
// where each piece lies in the file.
type block struct {
	off       int // file offset of the method byte
	method    byte
	ctype     byte
	cid       field
	size      field
	raw       field
	dataOff   int
	data      []byte
	crcOff    int // -1 for CRAM 2.x
	end       int // file offset just past the block
	isLandmrk bool
}

// container is one parsed container (CRAMv3 §7) with its blocks.
type container struct {
	off       int
	length    field // int32, len 4
	refID     field
	refStart  field
	span      field
	nrec      field
	counter   field
	bases     field
	nblocks   field
	lmCount   field
	landmarks []field
	crcOff    int // -1 for CRAM 2.x
	dataOff   int
	end       int
	blocks    []block
}

// layout is a CRAM file taken apart.
type layout struct {
	major      int
	containers []container // the SAM header container first, EOF last
}

func getITF8(b []byte, p int) (field, error) {
	if p >= len(b) {
		return field{}, fmt.Errorf("%w: ITF-8 at byte %d: end of file", ErrLayout, p)
	}
	c := b[p]
	n := 1
	switch {
	case c < 0x80:
	case c < 0xc0:
		n = 2
	case c < 0xe0:
		n = 3
	case c < 0xf0:
		n = 4
	default:
		n = 5
	}
	if p+n > len(b) {
		return field{}, fmt.Errorf("%w: ITF-8 at byte %d: end of file", ErrLayout, p)
	}
	var v uint32
	switch n {
	case 1:
		v = uint32(c)
	case 2:
		v = uint32(c&0x3f)<<8 | uint32(b[p+1])
	case 3:
		v = uint32(c&0x1f)<<16 | uint32(b[p+1])<<8 | uint32(b[p+2])
	case 4:
		v = uint32(c&0x0f)<<24 | uint32(b[p+1])<<16 | uint32(b[p+2])<<8 | uint32(b[p+3])
	case 5:
		v = uint32(c&0x0f)<<28 | uint32(b[p+1])<<20 | uint32(b[p+2])<<12 | uint32(b[p+3])<<4 | uint32(b[p+4]&0x0f)
	}
	return field{off: p, len: n, val: int64(int32(v))}, nil
}

func getLTF8(b []byte, p int) (field, error) {
	if p >= len(b) {
		return field{}, fmt.Errorf("%w: LTF-8 at byte %d: end of file", ErrLayout, p)
	}
	c := b[p]
	n := 1
	for m := byte(0x80); n < 9 && c&m != 0; m >>= 1 {
		n++
	}
	if p+n > len(b) {
		return field{}, fmt.Errorf("%w: LTF-8 at byte %d: end of file", ErrLayout, p)
	}
	var v uint64
	if n < 8 {
		v = uint64(c & (0xff >> n))
	}
	for i := 1; i < n; i++ {
		v = v<<8 | uint64(b[p+i])
	}
	return field{off: p, len: n, val: int64(v)}, nil
}

// putITF8 appends v as ITF-8 (CRAMv3 §2.3).
func putITF8(dst []byte, v int32) []byte {
	u := uint32(v)
	switch {
	case u < 0x80:
		return append(dst, byte(u))
	case u < 0x4000:
		return append(dst, byte(0x80|u>>8), byte(u))
	case u < 0x200000:
		return append(dst, byte(0xc0|u>>16), byte(u>>8), byte(u))
	case u < 0x10000000:
		return append(dst, byte(0xe0|u>>24), byte(u>>16), byte(u>>8), byte(u))
	}
	return append(dst, byte(0xf0|(u>>28)&0x0f), byte(u>>20), byte(u>>12), byte(u>>4), byte(u&0x0f))
}

// putLTF8 appends v as LTF-8 (CRAMv3 §2.3).
func putLTF8(dst []byte, v int64) []byte {
	u := uint64(v)
	n := 9
	for i, lim := range []uint64{1 << 7, 1 << 14, 1 << 21, 1 << 28, 1 << 35, 1 << 42, 1 << 49, 1 << 56} {
		if u < lim {
			n = i + 1
			break
		}
	}
	if n == 9 {
		dst = append(dst, 0xff)
		return binary.BigEndian.AppendUint64(dst, u)
	}
	prefix := byte(0xff << (9 - n)) // n-1 leading ones
	if n == 8 {
		prefix = 0xfe
		dst = append(dst, prefix)
	} else {
		dst = append(dst, prefix|byte(u>>(8*(n-1))))
	}
	for i := n - 2; i >= 0; i-- {
		dst = append(dst, byte(u>>(8*i)))
	}
	return dst
}

// parse takes a CRAM file apart down to its blocks.
func parse(b []byte) (*layout, error) {
	if len(b) < fileDefSize || string(b[:4]) != "CRAM" {
		return nil, fmt.Errorf("%w: no CRAM file definition", ErrLayout)
	}
	l := &layout{major: int(b[4])}
	if l.major != 2 && l.major != 3 {
		return nil, fmt.Errorf("%w: CRAM major version %d", ErrLayout, l.major)
	}
	off := fileDefSize
	for off < len(b) {
		c, err := parseContainer(b, off, l.major)
		if err != nil {
			return nil, err
		}
		l.containers = append(l.containers, c)
		off = c.end
	}
	if len(l.containers) < 2 {
		return nil, fmt.Errorf("%w: %d containers", ErrLayout, len(l.containers))
	}
	return l, nil
}

func parseContainer(b []byte, off, major int) (container, error) {
	c := container{off: off, crcOff: -1}
	if off+4 > len(b) {
		return c, fmt.Errorf("%w: container at byte %d: end of file", ErrLayout, off)
	}
	c.length = field{off: off, len: 4, val: int64(int32(binary.LittleEndian.Uint32(b[off:])))}
	p := off + 4
	next := func(f *field, ltf bool) error {
		var err error
		if ltf {
			*f, err = getLTF8(b, p)
		} else {
			*f, err = getITF8(b, p)
		}
		p += f.len
		return err
	}
	for _, x := range []struct {
		f   *field
		ltf bool
	}{{&c.refID, false}, {&c.refStart, false}, {&c.span, false}, {&c.nrec, false},
		{&c.counter, major >= 3}, {&c.bases, true}, {&c.nblocks, false}, {&c.lmCount, false}} {
		if err := next(x.f, x.ltf); err != nil {
			return c, err
		}
	}
	for i := int64(0); i < c.lmCount.val; i++ {
		var f field
		if err := next(&f, false); err != nil {
			return c, err
		}
		c.landmarks = append(c.landmarks, f)
	}
	if major >= 3 {
		c.crcOff = p
		p += 4
	}
	c.dataOff = p
	c.end = p + int(c.length.val)
	if c.length.val < 0 || c.end > len(b) {
		return c, fmt.Errorf("%w: container at byte %d runs past the end", ErrLayout, off)
	}
	lm := map[int]bool{}
	for _, f := range c.landmarks {
		lm[c.dataOff+int(f.val)] = true
	}
	for q := c.dataOff; q < c.end && int64(len(c.blocks)) < c.nblocks.val; {
		blk, err := parseBlock(b, q, major)
		if err != nil {
			return c, err
		}
		if blk.end > c.end {
			return c, fmt.Errorf("%w: block at byte %d runs past its container", ErrLayout, q)
		}
		blk.isLandmrk = lm[q]
		c.blocks = append(c.blocks, blk)
		q = blk.end
	}
	return c, nil
}

func parseBlock(b []byte, off, major int) (block, error) {
	blk := block{off: off, crcOff: -1}
	if off+2 > len(b) {
		return blk, fmt.Errorf("%w: block at byte %d: end of file", ErrLayout, off)
	}
	blk.method, blk.ctype = b[off], b[off+1]
	p := off + 2
	var err error
	for _, f := range []*field{&blk.cid, &blk.size, &blk.raw} {
		if *f, err = getITF8(b, p); err != nil {
			return blk, err
		}
		p += f.len
	}
	blk.dataOff = p
	if blk.size.val < 0 || p+int(blk.size.val) > len(b) {
		return blk, fmt.Errorf("%w: block at byte %d: size %d", ErrLayout, off, blk.size.val)
	}
	blk.data = b[p : p+int(blk.size.val)]
	p += int(blk.size.val)
	if major >= 3 {
		blk.crcOff = p
		p += 4
	}
	blk.end = p
	return blk, nil
}

// blockSpec is a block to encode; any negative size field is computed.
type blockSpec struct {
	method, ctype byte
	cid           int32
	size, raw     int64 // -1: len(data)
	data          []byte
	badCRC        bool
}

func (l *layout) encodeBlock(dst []byte, s blockSpec) []byte {
	start := len(dst)
	dst = append(dst, s.method, s.ctype)
	dst = putITF8(dst, s.cid)
	size := s.size
	if size < 0 {
		size = int64(len(s.data))
	}
	dst = putITF8(dst, int32(size))
	dst = putITF8(dst, int32(s.raw))
	dst = append(dst, s.data...)
	if l.major >= 3 {
		crc := crc32.ChecksumIEEE(dst[start:])
		if s.badCRC {
			crc ^= 0xdeadbeef
		}
		dst = binary.LittleEndian.AppendUint32(dst, crc)
	}
	return dst
}

// specOf is the spec that re-encodes blk as it was.
func specOf(b []byte, blk *block) blockSpec {
	return blockSpec{method: blk.method, ctype: blk.ctype, cid: int32(blk.cid.val), size: -1, raw: blk.raw.val, data: b[blk.dataOff : blk.dataOff+len(blk.data)]}
}

// headerSpec holds the values of a container header to encode. Landmarks
// nil means: recompute them from the blocks that started slices.
type headerSpec struct {
	length                      int64 // -1: the data length
	refID, refStart, span, nrec int64
	counter, bases              int64
	nblocks                     int64
	lmCount                     int64 // -1: len(landmarks)
	landmarks                   []int64
	badCRC                      bool
}

func headerOf(c *container) headerSpec {
	h := headerSpec{length: -1, refID: c.refID.val, refStart: c.refStart.val, span: c.span.val,
		nrec: c.nrec.val, counter: c.counter.val, bases: c.bases.val, nblocks: c.nblocks.val, lmCount: -1}
	return h
}

func (l *layout) encodeHeader(dst []byte, h headerSpec, dataLen int) []byte {
	start := len(dst)
	length := h.length
	if length < 0 {
		length = int64(dataLen)
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(int32(length)))
	dst = putITF8(dst, int32(h.refID))
	dst = putITF8(dst, int32(h.refStart))
	dst = putITF8(dst, int32(h.span))
	dst = putITF8(dst, int32(h.nrec))
	if l.major >= 3 {
		dst = putLTF8(dst, h.counter)
	} else {
		dst = putITF8(dst, int32(h.counter))
	}
	dst = putLTF8(dst, h.bases)
	dst = putITF8(dst, int32(h.nblocks))
	n := h.lmCount
	if n < 0 {
		n = int64(len(h.landmarks))
	}
	dst = putITF8(dst, int32(n))
	for _, v := range h.landmarks {
		dst = putITF8(dst, int32(v))
	}
	if l.major >= 3 {
		crc := crc32.ChecksumIEEE(dst[start:])
		if h.badCRC {
			crc ^= 0xdeadbeef
		}
		dst = binary.LittleEndian.AppendUint32(dst, crc)
	}
	return dst
}

// rebuild re-encodes the whole file from orig, letting edit change the
// header and block specs of container ci. Lengths, landmarks and CRCs
// are recomputed unless the edit fixed them.
func (l *layout) rebuild(orig []byte, ci int, edit func(h *headerSpec, blocks []blockSpec)) []byte {
	out := append([]byte(nil), orig[:fileDefSize]...)
	for i := range l.containers {
		c := &l.containers[i]
		if i != ci {
			out = append(out, orig[c.off:c.end]...)
			continue
		}
		h := headerOf(c)
		specs := make([]blockSpec, len(c.blocks))
		for j := range c.blocks {
			specs[j] = specOf(orig, &c.blocks[j])
		}
		edit(&h, specs)
		var data []byte
		var lms []int64
		for j, s := range specs {
			if j < len(c.blocks) && c.blocks[j].isLandmrk {
				lms = append(lms, int64(len(data)))
			}
			data = l.encodeBlock(data, s)
		}
		if h.landmarks == nil {
			h.landmarks = lms
		}
		out = l.encodeHeader(out, h, len(data))
		out = append(out, data...)
	}
	return out
}

// fixCRCs recomputes every container header and block CRC32 of b (CRAM 3
// only), whose structure is that of l: damage inside a CRC-covered region
// then reaches the parser behind the CRC.
func (l *layout) fixCRCs(b []byte) {
	if l.major < 3 {
		return
	}
	for _, c := range l.containers {
		if c.crcOff >= 0 && c.crcOff+4 <= len(b) {
			binary.LittleEndian.PutUint32(b[c.crcOff:], crc32.ChecksumIEEE(b[c.off:c.crcOff]))
		}
		for _, blk := range c.blocks {
			if blk.crcOff >= 0 && blk.crcOff+4 <= len(b) {
				binary.LittleEndian.PutUint32(b[blk.crcOff:], crc32.ChecksumIEEE(b[blk.off:blk.crcOff]))
			}
		}
	}
}

// DeclareRawSize returns orig with the largest compressed block of its
// first data container claiming raw decoded bytes (CRCs recomputed), and
// that block's content ID: a file whose block sizes say it needs that much
// memory to decode, without being that large.
func DeclareRawSize(orig []byte, raw int64) ([]byte, int32, error) {
	l, err := parse(orig)
	if err != nil {
		return nil, 0, err
	}
	if len(l.containers) < 3 {
		return nil, 0, fmt.Errorf("%w: no data container", ErrLayout)
	}
	c := &l.containers[1]
	bi := -1
	for i, b := range c.blocks {
		if b.method != 0 && (bi < 0 || b.raw.val > c.blocks[bi].raw.val) {
			bi = i
		}
	}
	if bi < 0 {
		return nil, 0, fmt.Errorf("%w: no compressed block in the first data container", ErrLayout)
	}
	out := l.rebuild(orig, 1, func(_ *headerSpec, bs []blockSpec) { bs[bi].raw = raw })
	return out, int32(c.blocks[bi].cid.val), nil
}

// DeclareBlockRawSize returns orig with the external blocks of content ID
// cid in its first data container claiming raw decoded bytes (CRCs
// recomputed): a block that says it holds less, or more, than its
// records read from it.
func DeclareBlockRawSize(orig []byte, cid int32, raw int64) ([]byte, error) {
	l, err := parse(orig)
	if err != nil {
		return nil, err
	}
	if len(l.containers) < 3 {
		return nil, fmt.Errorf("%w: no data container", ErrLayout)
	}
	found := false
	out := l.rebuild(orig, 1, func(_ *headerSpec, bs []blockSpec) {
		for i := range bs {
			if bs[i].ctype == 4 && bs[i].cid == cid {
				bs[i].raw, found = raw, true
			}
		}
	})
	if !found {
		return nil, fmt.Errorf("%w: no external block of content ID %d in the first data container", ErrLayout, cid)
	}
	return out, nil
}
