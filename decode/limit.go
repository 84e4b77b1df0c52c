package decode

import (
	"errors"
	"fmt"
	"unsafe"
)

// ErrTooLarge reports a container that needs more memory to decode than
// DecoderOptions.MaxContainerMemory allows. Nothing of the size it claims
// was allocated.
var ErrTooLarge = errors.New("decode: container too large")

// SizeError is the ErrTooLarge of one container: what decoding it needs,
// what is allowed, and its largest block.
type SizeError struct {
	Need, Limit int64
	// ContentID and BlockSize are the content ID and the decoded size of
	// the container's largest block (-1 and 0 when the limit was passed
	// before its blocks were read: by the container's own length).
	ContentID int32
	BlockSize int64
}

// NeededMemory is the memory the container would take to decode
// (source.TooLarge).
func (e *SizeError) NeededMemory() int64 { return e.Need }

func (e *SizeError) Error() string {
	if e.ContentID < 0 {
		return fmt.Sprintf("decoding needs about %d bytes, more than the limit of %d", e.Need, e.Limit)
	}
	return fmt.Sprintf("decoding needs about %d bytes (its largest block, content id %d, holds %d bytes decoded), more than the limit of %d",
		e.Need, e.ContentID, e.BlockSize, e.Limit)
}

func (e *SizeError) Unwrap() error { return ErrTooLarge }

// checkLength refuses a container whose bytes alone pass limit, before
// they are read.
func checkLength(h *ContainerHeader, limit int64) error {
	if limit > 0 && int64(h.Length) > limit {
		return &SizeError{Need: int64(h.Length), Limit: limit, ContentID: -1}
	}
	return nil
}

// checkNeed refuses a container whose decoding would need more than
// limit bytes, from what its header and block headers declare: its bytes,
// every compressed block decoded, and the records' bases, qualities and
// table (the declared counts bounded as the decoder bounds them). It reads
// only the block headers of data; a malformed one ends the walk, and the
// decoder reports it.
func checkNeed(h *ContainerHeader, data []byte, major int, limit int64) error {
	if limit <= 0 {
		return nil
	}
	need := int64(len(data))
	need += 2 * min(h.Bases, 32*int64(h.Length)+1<<20)
	need += min(int64(h.NumRecords), int64(h.Length)+1024) * int64(unsafe.Sizeof(crec{}))
	bigID, bigSize := int32(-1), int64(0)
	r := varintsFor(major)
	for pos := 0; pos+2 <= len(data); {
		method := BlockMethod(data[pos])
		pos += 2
		id, err := r.u32(data, &pos)
		if err != nil {
			break
		}
		size, err := r.u32(data, &pos)
		if err != nil {
			break
		}
		raw, err := r.u32(data, &pos)
		if err != nil || size < 0 || raw < 0 {
			break
		}
		if method != MethodRaw { // a raw block is read in place
			need += int64(raw)
		}
		if int64(raw) > bigSize || bigID < 0 {
			bigID, bigSize = id, int64(raw)
		}
		pos += int(size)
		if major >= 3 {
			pos += 4
		}
	}
	if need > limit {
		return &SizeError{Need: need, Limit: limit, ContentID: bigID, BlockSize: bigSize}
	}
	return nil
}
