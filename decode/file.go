package decode

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
)

// RefSeq is one @SQ line of the SAM header.
type RefSeq struct {
	Name   string
	Length int64
	M5     string
	// UR is the first UR: field of the line (where the reference can be
	// found: a path or URL), "" when there is none. The @SQ lines of one
	// header that name the same UR: share one string.
	UR string
}

// File is an opened CRAM file: its definition, SAM header and the table of
// its data containers. It is safe for concurrent use; decoding happens in
// Decoders, one per goroutine.
type File struct {
	Name       string // path, used in errors and generated read names
	r          io.ReaderAt
	size       int64
	Def        FileDefinition
	HeaderText []byte // the SAM header as htslib writes it back (ParseSAMHeader)
	Refs       []RefSeq
	ReadGroups []string // @RG IDs in header order
	Containers []ContainerHeader
	HasEOF     bool
	// maxRefLen is the longest @SQ length: it bounds the reads of a
	// multi-reference slice, found once rather than per slice.
	maxRefLen int64
}

// OpenOptions adjusts Open.
type OpenOptions struct {
	// AllowMissingEOF accepts a file that ends cleanly after a container
	// but has no EOF container (samtools only warns). By default it is an
	// error, since it usually means a truncated copy.
	AllowMissingEOF bool
}

// Open reads the file definition and SAM header and walks the container
// headers of r (size bytes), without decoding any container.
func Open(name string, r io.ReaderAt, size int64, opt OpenOptions) (*File, error) {
	f := &File{Name: name, r: r, size: size}
	wrap := func(off int64, err error) error { return &Error{File: name, Offset: off, ContentID: -1, Err: err} }
	sh, off, err := f.readHeader()
	if err != nil {
		return nil, err
	}
	major := f.Def.Major
	f.HeaderText, f.Refs, f.ReadGroups = sh.Text, sh.Refs, sh.ReadGroups
	for _, q := range f.Refs {
		f.maxRefLen = max(f.maxRefLen, q.Length)
	}

	ahead := &aheadReader{r: r, buf: make([]byte, 0, aheadSize)}
	for off < size {
		h, err := readContainerHeader(ahead, off, size, major)
		if err != nil {
			return nil, wrap(off, err)
		}
		if h.End() > size {
			return nil, wrap(off, fmt.Errorf("%w: container of %d bytes runs past the end of the %d-byte file", ErrTruncated, h.Length, size))
		}
		if h.isEOF() {
			// Like htslib, anything after the EOF container is ignored.
			f.HasEOF = true
			break
		}
		if h.NumRecords > 0 || len(h.Landmarks) > 0 {
			f.Containers = append(f.Containers, h)
		}
		off = h.End()
	}
	eofExpected := major > 2 || f.Def.Minor >= 1 // CRAM 2.0 has no EOF container
	if !f.HasEOF && eofExpected && !opt.AllowMissingEOF {
		return nil, wrap(size, fmt.Errorf("%w: no EOF container at the end of the file", ErrTruncated))
	}
	return f, nil
}

// aheadSize is the most aheadReader reads at once, minAhead the least.
const (
	aheadSize = 64 << 10
	minAhead  = 4 << 10
)

// aheadReader serves Open's reads of container headers, at increasing
// offsets, from reads of up to aheadSize bytes: a file of tiny containers
// made one read(2) per container. A read whose bytes served one header
// only (containers larger than it) makes the next minAhead bytes: copying
// 64 KiB for each header of a file of large containers cost more than
// the read(2) it saves.
type aheadReader struct {
	r      io.ReaderAt
	buf    []byte // the bytes at off
	off    int64
	served int // reads buf has served
}

func (a *aheadReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= a.off && off+int64(len(p)) <= a.off+int64(len(a.buf)) {
		a.served++
		return copy(p, a.buf[off-a.off:]), nil
	}
	if len(p) > cap(a.buf)/2 {
		return a.r.ReadAt(p, off)
	}
	size := cap(a.buf)
	if a.served == 1 {
		size = max(minAhead, len(p))
	}
	n, err := a.r.ReadAt(a.buf[:size], off)
	a.buf, a.off, a.served = a.buf[:n], off, 1
	if n >= len(p) {
		return copy(p, a.buf), nil
	}
	if err == nil {
		err = io.ErrUnexpectedEOF
	}
	return copy(p, a.buf), err
}

// readHeader reads the file definition into f.Def and parses the SAM
// header container; it returns the offset of the first data container.
func (f *File) readHeader() (*SAMHeader, int64, error) {
	text, end, err := f.readHeaderText()
	if err != nil {
		return nil, 0, err
	}
	sh, err := ParseSAMHeader(text)
	if err != nil {
		return nil, 0, &Error{File: f.Name, Offset: fileDefinitionSize, ContentID: -1, Err: err}
	}
	return sh, end, nil
}

// readHeaderText reads the file definition into f.Def and returns the SAM
// header text of the header container and the offset of the first data
// container.
func (f *File) readHeaderText() ([]byte, int64, error) {
	wrap := func(off int64, err error) error { return &Error{File: f.Name, Offset: off, ContentID: -1, Err: err} }
	var def [fileDefinitionSize]byte
	if n, err := f.r.ReadAt(def[:], 0); n < len(def) {
		if err == nil || errors.Is(err, io.EOF) {
			err = fmt.Errorf("%w: file is %d bytes, shorter than the CRAM file definition", ErrTruncated, n)
		}
		return nil, 0, wrap(-1, fmt.Errorf("file definition at byte 0: %w", err))
	}
	var err error
	if f.Def, err = parseFileDefinition(def[:]); err != nil {
		return nil, 0, wrap(-1, fmt.Errorf("file definition at byte 0: %w", err))
	}
	off := int64(fileDefinitionSize)
	hdr, err := readContainerHeader(f.r, off, f.size, f.Def.Major)
	if err != nil {
		return nil, 0, wrap(off, fmt.Errorf("SAM header container: %w", err))
	}
	data, next, err := f.readHeaderContainerData(&hdr)
	if err != nil {
		return nil, 0, wrap(off, err)
	}
	text, err := parseHeaderContainer(data, f.Def.Major)
	if err != nil {
		return nil, 0, wrap(off, err)
	}
	return text, next, nil
}

// maxBlockHeader bounds a block header: method, content type and three
// ITF-8 values.
const maxBlockHeader = 2 + 3*5

// readHeaderContainerData reads the blocks of the SAM header container h
// and returns them with the file offset of the first data container.
// htslib reads this container's blocks by their own sizes and then skips
// what is left of the declared length, so it accepts blocks that run past
// it: scramble's CRAM 2.1 writer declares a short header's container two
// bytes shorter than its block. Here, and only here, the same holds: the
// first data container then starts where the last block ends.
func (f *File) readHeaderContainerData(h *ContainerHeader) ([]byte, int64, error) {
	if h.NumBlocks < 1 {
		return nil, 0, corruptf("SAM header container holds no block")
	}
	end := h.DataOffset() // just past the blocks walked so far
	for i := 0; i < int(h.NumBlocks); i++ {
		n, err := f.blockLength(end)
		if err != nil {
			return nil, 0, fmt.Errorf("SAM header container: block %d at byte %d: %w", i, end, err)
		}
		end += n
		if end > f.size {
			return nil, 0, fmt.Errorf("%w: SAM header container: block %d ends at byte %d, past the end of the %d-byte file", ErrTruncated, i, end, f.size)
		}
	}
	if end <= h.End() {
		data, err := f.readContainerData(h, nil)
		return data, h.End(), err
	}
	data := make([]byte, end-h.DataOffset())
	if _, err := f.r.ReadAt(data, h.DataOffset()); err != nil && !(errors.Is(err, io.EOF) && end == f.size) {
		return nil, 0, fmt.Errorf("reading SAM header container: %w", err)
	}
	return data, end, nil
}

// blockLength reads the header of the block at file offset off and
// returns the block's length in bytes: header, data and, from CRAM 3.0
// on, CRC32.
func (f *File) blockLength(off int64) (int64, error) {
	var buf [maxBlockHeader]byte
	n := int(min(int64(len(buf)), f.size-off))
	if n <= 0 {
		return 0, fmt.Errorf("%w: block header: end of file", ErrTruncated)
	}
	if _, err := f.r.ReadAt(buf[:n], off); err != nil && !errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("reading block header: %w", err)
	}
	b, pos := buf[:n], 2 // after method and content type
	r := varintsFor(f.Def.Major)
	_, err := r.u32(b, &pos) // content id
	var size int32
	if err == nil {
		size, err = r.u32(b, &pos)
	}
	if err == nil {
		_, err = r.u32(b, &pos) // raw size
	}
	if err != nil {
		return 0, fmt.Errorf("block header: %w", err)
	}
	if size < 0 || size > MaxBlockSize {
		return 0, corruptf("block header: compressed size %d", size)
	}
	total := int64(pos) + int64(size)
	if f.Def.Major >= 3 {
		total += 4
	}
	return total, nil
}

// Size is the file's length in bytes.
func (f *File) Size() int64 { return f.size }

// readContainerData reads the blocks of a container into buf.
func (f *File) readContainerData(h *ContainerHeader, buf []byte) ([]byte, error) {
	if h.End() > f.size {
		return nil, fmt.Errorf("%w: container of %d bytes runs past the end of the file", ErrTruncated, h.Length)
	}
	n := int(h.Length)
	buf = roomFor(buf, n)[:n]
	if _, err := f.r.ReadAt(buf, h.DataOffset()); err != nil && !(errors.Is(err, io.EOF) && h.End() == f.size) {
		return nil, fmt.Errorf("reading container: %w", err)
	}
	return buf, nil
}

// parseHeaderContainer extracts the SAM header text from the first block
// of the header container (CRAMv3 §7.1).
func parseHeaderContainer(data []byte, major int) ([]byte, error) {
	pos := 0
	blk, err := parseBlock(data, &pos, major)
	if err != nil {
		return nil, fmt.Errorf("SAM header block: %w", err)
	}
	if blk.ContentType != ContentFileHeader {
		return nil, corruptf("SAM header block has content type %d, want %d", blk.ContentType, ContentFileHeader)
	}
	raw, err := blk.Decompress(nil, nil)
	if err != nil {
		return nil, fmt.Errorf("SAM header block: %w", err)
	}
	p := 0
	n, err := readInt32(raw, &p)
	if err != nil {
		return nil, fmt.Errorf("SAM header length: %w", err)
	}
	if n < 0 || int(n) > len(raw)-4 {
		return nil, corruptf("SAM header of %d bytes in a %d-byte block", n, len(raw))
	}
	// raw is the block's own buffer (decompressed, or the container's
	// bytes read for it): its text needs no copy.
	return raw[4 : 4+n : 4+n], nil
}

// prefix is the read name prefix htslib generates names with: the file's
// base name.
func (f *File) prefix() string { return filepath.Base(f.Name) }
