package decode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// FileDefinition is the 26-byte start of a CRAM file (CRAMv3 §6).
type FileDefinition struct {
	Major, Minor int
	FileID       [20]byte
}

// fileDefinitionSize is the length of the file definition.
const fileDefinitionSize = 26

// ContainerHeader is the header of one container (CRAMv3 §7).
type ContainerHeader struct {
	Offset        int64 // byte offset of the container header in the file
	HeaderSize    int   // bytes taken by the header itself
	Length        int32 // bytes of container data following the header
	RefSeqID      int32
	RefStart      int64
	AlignmentSpan int64
	NumRecords    int32
	RecordCounter int64
	Bases         int64
	NumBlocks     int32
	Landmarks     []int32
}

// DataOffset is the file offset of the container's first block.
func (h *ContainerHeader) DataOffset() int64 { return h.Offset + int64(h.HeaderSize) }

// End is the file offset just past the container.
func (h *ContainerHeader) End() int64 { return h.DataOffset() + int64(h.Length) }

// isEOF reports whether h is the EOF container (CRAMv3 §9).
func (h *ContainerHeader) isEOF() bool {
	return h.NumRecords == 0 && h.RefSeqID == -1 && h.RefStart == 4542278 && len(h.Landmarks) == 0
}

// parseFileDefinition checks the magic and version (CRAMv3 §6).
func parseFileDefinition(b []byte) (FileDefinition, error) {
	var d FileDefinition
	if len(b) < fileDefinitionSize {
		return d, fmt.Errorf("%w: file definition: %d bytes, want %d", ErrTruncated, len(b), fileDefinitionSize)
	}
	if string(b[:4]) != "CRAM" {
		return d, corruptf("file definition: magic %q, want \"CRAM\"", b[:4])
	}
	d.Major, d.Minor = int(b[4]), int(b[5])
	copy(d.FileID[:], b[6:26])
	if d.Major < 2 || d.Major > 4 {
		return d, fmt.Errorf("%w: CRAM version %d.%d (this decoder reads 2.x, 3.x and 4.x)", ErrUnsupported, d.Major, d.Minor)
	}
	return d, nil
}

// parseContainerHeader parses a container header (CRAMv3 §7) held in b,
// which starts at file offset off.
func parseContainerHeader(b []byte, off int64, major int) (ContainerHeader, error) {
	if major >= 4 {
		return parseContainerHeader4(b, off)
	}
	h := ContainerHeader{Offset: off}
	pos := 0
	var err error
	if h.Length, err = readInt32(b, &pos); err != nil {
		return h, err
	}
	if h.Length < 0 {
		return h, corruptf("container length %d", h.Length)
	}
	var v int32
	if h.RefSeqID, err = readITF8(b, &pos); err != nil {
		return h, err
	}
	if v, err = readITF8(b, &pos); err != nil {
		return h, err
	}
	h.RefStart = int64(v)
	if v, err = readITF8(b, &pos); err != nil {
		return h, err
	}
	h.AlignmentSpan = int64(v)
	if h.NumRecords, err = readITF8(b, &pos); err != nil {
		return h, err
	}
	if major >= 3 {
		if h.RecordCounter, err = readLTF8(b, &pos); err != nil {
			return h, err
		}
	} else {
		if v, err = readITF8(b, &pos); err != nil {
			return h, err
		}
		h.RecordCounter = int64(v)
	}
	if h.Bases, err = readLTF8(b, &pos); err != nil {
		return h, err
	}
	if h.NumBlocks, err = readITF8(b, &pos); err != nil {
		return h, err
	}
	if h.Landmarks, err = readArrayITF8(b, &pos, nil); err != nil {
		return h, err
	}
	if major >= 3 {
		if err := checkHeaderCRC(b, &pos); err != nil {
			return h, err
		}
	}
	return h, h.finish(pos)
}

// parseContainerHeader4 parses a CRAM 4.0 container header as htslib 1.16
// reads it: every field a uint7 (the reference id a sint7), the length
// included, then the CRC32 of all of them.
func parseContainerHeader4(b []byte, off int64) (ContainerHeader, error) {
	h := ContainerHeader{Offset: off}
	r := varints{v4: true}
	pos := 0
	var err error
	if h.Length, err = r.u32(b, &pos); err != nil {
		return h, err
	}
	if h.Length < 0 {
		return h, corruptf("container length %d", uint32(h.Length))
	}
	if h.RefSeqID, err = r.s32(b, &pos); err != nil {
		return h, err
	}
	if h.RefStart, err = r.u64(b, &pos); err != nil {
		return h, err
	}
	if h.AlignmentSpan, err = r.u64(b, &pos); err != nil {
		return h, err
	}
	if h.NumRecords, err = r.u32(b, &pos); err != nil {
		return h, err
	}
	if h.RecordCounter, err = r.u64(b, &pos); err != nil {
		return h, err
	}
	if h.Bases, err = r.u64(b, &pos); err != nil {
		return h, err
	}
	if h.NumBlocks, err = r.u32(b, &pos); err != nil {
		return h, err
	}
	if h.Landmarks, err = r.array32(b, &pos, nil); err != nil {
		return h, err
	}
	if err := checkHeaderCRC(b, &pos); err != nil {
		return h, err
	}
	return h, h.finish(pos)
}

// checkHeaderCRC verifies the CRC32 at *pos over b[:*pos] and moves past it.
func checkHeaderCRC(b []byte, pos *int) error {
	if *pos+4 > len(b) {
		return corruptf("container header CRC32: end of data")
	}
	want := binary.LittleEndian.Uint32(b[*pos:])
	if got := crc32.ChecksumIEEE(b[:*pos]); got != want {
		return fmt.Errorf("%w: container header CRC32 %08x, header says %08x", ErrChecksum, got, want)
	}
	*pos += 4
	return nil
}

// finish checks the counts and records the header's size.
func (h *ContainerHeader) finish(pos int) error {
	if h.NumRecords < 0 || h.NumBlocks < 0 {
		return corruptf("container header: %d records, %d blocks", h.NumRecords, h.NumBlocks)
	}
	h.HeaderSize = pos
	return nil
}

// readContainerHeader reads the container header at off, reading more of
// the file only as the header needs it.
func readContainerHeader(r io.ReaderAt, off, size int64, major int) (ContainerHeader, error) {
	want := int64(256)
	for {
		n := min(want, size-off)
		if n <= 0 {
			return ContainerHeader{}, fmt.Errorf("%w: container header at byte %d: end of file", ErrTruncated, off)
		}
		buf := make([]byte, n)
		if _, err := r.ReadAt(buf, off); err != nil && !(errors.Is(err, io.EOF) && n == size-off) {
			return ContainerHeader{}, fmt.Errorf("reading container header at byte %d: %w", off, err)
		}
		h, err := parseContainerHeader(buf, off, major)
		if err == nil {
			return h, nil
		}
		if !errors.Is(err, ErrCorrupt) || n == size-off || want >= 1<<24 {
			if n == size-off && errors.Is(err, ErrCorrupt) {
				return h, fmt.Errorf("%w: container header at byte %d: %w", ErrTruncated, off, err)
			}
			return h, err
		}
		want *= 16
	}
}
