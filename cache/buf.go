package cache

import (
	"sync"
	"sync/atomic"
)

// Buf is a reference-counted byte buffer. Whoever holds a reference may
// read B; the last Release returns B's storage to the Pool it came from,
// where the next Get reuses it, so built segments do not each cost fresh
// pages (page faults) or zeroing. A Buf without a pool leaves its storage
// to the garbage collector.
type Buf struct {
	B    []byte
	refs atomic.Int32
	pool *Pool
}

// Retain takes another reference.
func (b *Buf) Retain() { b.refs.Add(1) }

// Release drops a reference. After the last one B must not be used.
func (b *Buf) Release() {
	switch n := b.refs.Add(-1); {
	case n == 0 && b.pool != nil:
		b.pool.put(b.B)
		b.B = nil
	case n < 0:
		// Released more often than retained: a caller bug. Never hand
		// the storage out again.
		b.pool = nil
	}
}

// Pool keeps released buffer storage for reuse, up to a byte bound (or a
// single buffer larger than that, the last one released), within what the
// values and reservations of the Cache it belongs to (Cache.Pool) leave of
// its bound. It is safe for concurrent use.
type Pool struct {
	// Constant after New made the pool for its Cache: maxBytes bounds the
	// free storage, which shares the Cache's bound.
	maxBytes int64
	shared   *sharedBound

	// Mutable, guarded by mu.
	mu     sync.Mutex
	free   [][]byte // oldest first
	bytes  int64    // capacity held in free
	reused uint64   // Gets served from free storage
}

// sharedBound is the byte bound of a Cache as its Pool sees it.
type sharedBound struct {
	max  int64        // constant
	held atomic.Int64 // the cache's values and reservations; stored under the Cache's lock
}

// StorageFor is the capacity Get allocates for n bytes: a sixteenth to
// spare, so that the next segment, often a little larger than this one,
// still fits when the storage comes back.
func StorageFor(n int) int { return n + n/16 }

// Get returns a Buf holding one reference with len(B) == 0 and cap(B) >=
// n, reusing free storage whose capacity fits n closely (within a quarter)
// or allocating StorageFor(n).
func (p *Pool) Get(n int) *Buf {
	s := p.take(n)
	if s == nil {
		s = newStorage(StorageFor(n))
	}
	return p.wrap(s)
}

// newStorage returns fresh storage of capacity n, advised for huge pages
// (adviseHuge).
func newStorage(n int) []byte {
	s := make([]byte, 0, n)
	adviseHuge(s, true)
	return s
}

// leave gives up storage s for good: to the collector, advice taken back.
func leave(s []byte) { adviseHuge(s, false) }

// wrap makes s a Buf of p holding one reference.
func (p *Pool) wrap(s []byte) *Buf {
	b := &Buf{B: s, pool: p}
	b.refs.Store(1)
	return b
}

// take removes from the free storage and returns, empty, the buffer whose
// capacity fits n most closely (at least n, at most a quarter and a page
// more), or nil if none does.
func (p *Pool) take(n int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for i, f := range p.free {
		if c := cap(f); c >= n && c-n <= n/4+4096 && (best < 0 || c < cap(p.free[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	f := p.free[best]
	last := len(p.free) - 1
	copy(p.free[best:], p.free[best+1:]) // keep the oldest first
	p.free[last] = nil
	p.free = p.free[:last]
	p.bytes -= int64(cap(f))
	p.reused++
	return f[:0]
}

// put keeps s for reuse if the bounds allow, dropping the oldest free
// storage to make room. Storage larger than maxBytes replaces all the free
// storage.
func (p *Pool) put(s []byte) {
	c := int64(cap(s))
	if c == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	room := p.room()
	switch {
	case c > room:
		// The cache's values and reservations leave no room for it.
		leave(s)
	case c > p.maxBytes:
		// Larger than the bound: keep it alone. Segments of one file are
		// mostly the same size, so the next build of a file with large
		// containers takes it; keeping an older, smaller buffer instead
		// made every such build allocate afresh.
		for _, f := range p.free {
			leave(f)
		}
		clear(p.free)
		p.free = append(p.free[:0], s[:0])
		p.bytes = c
	default:
		for len(p.free) > 0 && p.bytes+c > min(p.maxBytes, room) {
			p.dropOldest()
		}
		p.free = append(p.free, s[:0])
		p.bytes += c
	}
}

// room is how much free storage the shared bound allows now, under p.mu.
func (p *Pool) room() int64 { return p.shared.max - p.shared.held.Load() }

// dropOldest leaves the oldest free storage to the collector, under p.mu.
func (p *Pool) dropOldest() {
	p.bytes -= int64(cap(p.free[0]))
	leave(p.free[0])
	p.free[0] = nil
	p.free = p.free[1:]
}

// fit drops the oldest free storage until the rest fits the room the
// shared bound allows, and returns the bytes left.
func (p *Pool) fit() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.free) > 0 && p.bytes > p.room() {
		p.dropOldest()
	}
	return p.bytes
}

// shed drops the oldest free storage and reports whether there was any.
func (p *Pool) shed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) == 0 {
		return false
	}
	p.dropOldest()
	return true
}

// Free returns the number of buffers and bytes of storage held for reuse.
func (p *Pool) Free() (n int, bytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.free), p.bytes
}

// Reused returns the number of Gets served from released storage.
func (p *Pool) Reused() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reused
}
