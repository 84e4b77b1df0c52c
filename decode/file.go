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

	for off < size {
		h, err := readContainerHeader(r, off, size, major)
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

// ReadHeader reads only the file definition and the SAM header of r, for
// callers that need the references without walking the containers.
func ReadHeader(name string, r io.ReaderAt, size int64) (*SAMHeader, error) {
	f := &File{Name: name, r: r, size: size}
	sh, _, err := f.readHeader()
	return sh, err
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
	data, err := f.readContainerData(&hdr, nil)
	if err != nil {
		return nil, 0, wrap(off, err)
	}
	text, err := parseHeaderContainer(data, f.Def.Major)
	if err != nil {
		return nil, 0, wrap(off, err)
	}
	return text, hdr.End(), nil
}

// Size is the file's length in bytes.
func (f *File) Size() int64 { return f.size }

// readContainerData reads the blocks of a container into buf.
func (f *File) readContainerData(h *ContainerHeader, buf []byte) ([]byte, error) {
	if h.End() > f.size {
		return nil, fmt.Errorf("%w: container of %d bytes runs past the end of the file", ErrTruncated, h.Length)
	}
	n := int(h.Length)
	if cap(buf) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
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
