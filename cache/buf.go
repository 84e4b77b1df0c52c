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

// Pool keeps released buffer storage for reuse, up to a byte bound. It is
// safe for concurrent use.
type Pool struct {
	mu       sync.Mutex
	free     [][]byte
	bytes    int64 // capacity held in free
	maxBytes int64
	reused   uint64 // Gets served from free storage
}

// NewPool returns a Pool keeping at most maxBytes bytes of free storage,
// or a single buffer larger than that (the last one released).
func NewPool(maxBytes int64) *Pool { return &Pool{maxBytes: maxBytes} }

// Get returns a Buf holding one reference with len(B) == 0 and cap(B) >=
// n, reusing free storage whose capacity fits n closely (within a quarter)
// or allocating.
func (p *Pool) Get(n int) *Buf {
	b := &Buf{pool: p}
	b.refs.Store(1)
	p.mu.Lock()
	best := -1
	for i, f := range p.free {
		if c := cap(f); c >= n && c-n <= n/4+4096 && (best < 0 || c < cap(p.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		f := p.free[best]
		last := len(p.free) - 1
		p.free[best] = p.free[last]
		p.free[last] = nil
		p.free = p.free[:last]
		p.bytes -= int64(cap(f))
		p.reused++
		p.mu.Unlock()
		b.B = f[:0]
		return b
	}
	p.mu.Unlock()
	// A sixteenth to spare, so that the next segment, often a little
	// larger than this one, still fits when this storage comes back.
	b.B = make([]byte, 0, n+n/16)
	return b
}

// put keeps s for reuse if the bound allows, dropping the oldest free
// storage to make room. Storage larger than the bound replaces all the
// free storage.
func (p *Pool) put(s []byte) {
	c := int64(cap(s))
	if c == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if c > p.maxBytes {
		// Larger than the bound: keep it alone. Segments of one file are
		// mostly the same size, so the next build of a file with large
		// containers takes it; keeping an older, smaller buffer instead
		// made every such build allocate afresh.
		clear(p.free)
		p.free = append(p.free[:0], s[:0])
		p.bytes = c
		return
	}
	for len(p.free) > 0 && p.bytes+c > p.maxBytes {
		p.bytes -= int64(cap(p.free[0]))
		p.free[0] = nil
		p.free = p.free[1:]
	}
	p.free = append(p.free, s[:0])
	p.bytes += c
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
