package decode

import (
	"runtime"
	"testing"
)

func TestBlockBufs(t *testing.T) {
	var bb blockBufs
	bb.next()
	if b := bb.take(ContentExternal, 11); b != nil {
		t.Fatal("a buffer lent before any was kept")
	}
	qs := make([]byte, 0, 1000)
	bb.keep(ContentExternal, 11, qs)
	// A second block with the same content ID in the same slice must not
	// share the first one's storage, which its streams still read.
	if b := bb.take(ContentExternal, 11); b != nil {
		t.Fatal("the buffer of content ID 11 lent twice in one slice")
	}
	bb.keep(ContentExternal, 11, make([]byte, 0, 10)) // smaller: not kept
	bb.keep(ContentCore, 11, make([]byte, 0, 20))     // another content type
	bb.next()
	if b := bb.take(ContentExternal, 11); cap(b) != 1000 || &b[:1][0] != &qs[:1][0] {
		t.Fatalf("next slice got a buffer of capacity %d, want the kept 1000", cap(b))
	}
	if b := bb.take(ContentCore, 11); cap(b) != 20 {
		t.Fatalf("core block got capacity %d, want its own 20", cap(b))
	}
	// Regrown during the slice: the larger storage is kept.
	bb.keep(ContentExternal, 11, make([]byte, 0, 5000))
	bb.next()
	if b := bb.take(ContentExternal, 11); cap(b) != 5000 {
		t.Fatalf("capacity %d after regrowth, want 5000", cap(b))
	}
	// Many distinct IDs: the kept set stays bounded.
	for id := range int32(3 * maxBlockBufs) {
		bb.next()
		bb.take(ContentExternal, id)
		bb.keep(ContentExternal, id, make([]byte, 0, 1))
	}
	if len(bb.bufs) > maxBlockBufs {
		t.Fatalf("%d buffers kept, bound %d", len(bb.bufs), maxBlockBufs)
	}
}

// TestRoomFor: a buffer too small is replaced with headroom, so that a
// slightly larger block of the next container fits it; one large enough
// is reused. decompress makes room only for a raw size its bytes could
// decode to: a header claiming a gigabyte of 16 bytes allocates nothing
// near that before the codec refuses it.
func TestRoomFor(t *testing.T) {
	b := roomFor(nil, 1600)
	if len(b) != 0 || cap(b) != 1700 {
		t.Fatalf("roomFor(nil, 1600): len %d cap %d, want 0 and 1700", len(b), cap(b))
	}
	b = append(b, 1, 2, 3)
	if c := roomFor(b, 1650); len(c) != 0 || &c[:1][0] != &b[0] {
		t.Fatal("a buffer with room for 1650 bytes was not reused")
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	blk := Block{Method: MethodGzip, ContentType: ContentExternal, RawSize: 1 << 30, Data: make([]byte, 16)}
	if _, err := blk.decompress(nil, nil); err == nil {
		t.Fatal("16 zero bytes decoded as 1 GiB of gzip")
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Fatalf("a block claiming 1 GiB from 16 bytes allocated %d bytes", n)
	}
}
