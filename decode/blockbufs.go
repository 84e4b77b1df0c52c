package decode

// blockBufs keeps the decompression buffer of each block from slice to
// slice, by content type and ID rather than by position: the same data
// series tends to keep its ID and its size from one container to the next,
// while the number of blocks before it varies (tags come and go), so
// buffers found by position were regrown again and again.
type blockBufs struct {
	gen  uint32 // slice number; a buffer taken in this slice is not lent twice
	bufs []blockBuf
}

type blockBuf struct {
	typ  ContentType
	id   int32
	used uint32 // gen of the slice that took it
	b    []byte
}

// maxBlockBufs bounds the buffers kept: a file of many distinct content
// IDs starts over rather than keeping a buffer for each.
const maxBlockBufs = 256

// roomFor returns b emptied, with room for n bytes: b's own storage when
// it has that much, else a new buffer a sixteenth larger than n. A buffer
// reused from container to container is regrown whenever a container is
// a little larger than all before it (the same data series of containers
// of the same size vary by a few bytes), and every regrowth of a buffer
// of megabytes is fresh memory the process faults in; the headroom makes
// the first container's size do for most of those that follow.
func roomFor(b []byte, n int) []byte {
	if cap(b) >= n {
		return b[:0]
	}
	return make([]byte, 0, n+n/16)
}

// maxPresize bounds the raw size of a block that decompress makes room
// for before decoding, as a multiple of its compressed bytes: far above
// what real data series reach (QS by gzip 7, DL by rANS 44), far below
// what a lying header may claim.
const maxPresize = 256

// next starts a slice.
func (bb *blockBufs) next() { bb.gen++ }

// take lends the buffer of the block with this content type and ID, or nil
// when there is none or it is already lent in this slice (a duplicate ID).
func (bb *blockBufs) take(typ ContentType, id int32) []byte {
	for i := range bb.bufs {
		if e := &bb.bufs[i]; e.typ == typ && e.id == id {
			if e.used == bb.gen {
				return nil
			}
			e.used = bb.gen
			return e.b
		}
	}
	return nil
}

// keep stores b, the buffer take lent possibly regrown, as the buffer of
// that content type and ID. For a duplicate ID the larger buffer is kept:
// the other stays with this slice's streams until the slice is done.
func (bb *blockBufs) keep(typ ContentType, id int32, b []byte) {
	for i := range bb.bufs {
		if e := &bb.bufs[i]; e.typ == typ && e.id == id {
			if cap(b) > cap(e.b) {
				e.b = b
			}
			return
		}
	}
	if len(bb.bufs) == maxBlockBufs {
		bb.bufs = bb.bufs[:0]
	}
	bb.bufs = append(bb.bufs, blockBuf{typ: typ, id: id, used: bb.gen, b: b})
}
