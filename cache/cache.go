// Package cache holds built BGZF data of virtual BAM segments in memory,
// bounded by the total number of bytes held rather than by entry count.
package cache

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// ErrInvalid is returned for invalid cache parameters.
var ErrInvalid = errors.New("cache: invalid parameter")

// Key identifies one segment of one file: File is a stable identity of the
// file (not merely its path) and Segment the segment number within it.
type Key struct {
	File    string
	Segment int
}

// Stats are cumulative counters of a Cache and its current occupancy.
type Stats struct {
	Hits      uint64 // Get calls that found their key
	Misses    uint64 // Get calls that did not
	Adds      uint64 // values stored
	Rejected  uint64 // values larger than the whole cache, not stored
	Evictions uint64 // values dropped to respect the byte bound
	Entries   int    // values held now
	Bytes     int64  // bytes held now
	Reserved  int64  // bytes reserved for values being built
	Free      int64  // bytes of free storage of the Pool, kept for the next Allocs
	MaxBytes  int64  // the byte bound
}

// Cache is a least-recently-used cache of buffers whose total capacity
// never exceeds a fixed bound. It holds one reference to each stored Buf
// and releases it when the Buf leaves; Get hands out a reference of its
// own. It is safe for concurrent use. Stored bytes are shared with callers
// and must be treated as read-only by both sides.
//
// The bound covers the values, the reservations (Reserve, Alloc) and the
// free storage of its Pool: storage of values that left, which no reader
// holds any more, kept for the next Alloc.
type Cache[K comparable] struct {
	// Dependency, made by New.
	pool *Pool

	mu       sync.Mutex
	lru      *simplelru.LRU[K, *Buf]
	maxBytes int64
	bytes    int64
	reserved int64 // bytes of storage being filled, counted against maxBytes
	evicting bool  // set while the cache itself drops entries for space
	st       Stats
}

// New returns a cache holding buffers of at most maxBytes bytes of
// capacity in all. A
// maxBytes of 0 gives a cache that stores nothing.
func New[K comparable](maxBytes int64) (*Cache[K], error) {
	if maxBytes < 0 {
		return nil, fmt.Errorf("%w: negative byte bound %d", ErrInvalid, maxBytes)
	}
	c := &Cache[K]{maxBytes: maxBytes}
	// A quarter of the bound at most, what a sequential reader's
	// readahead may hold (engine.Options.Readahead): the reader leaves
	// segments behind in bursts while the builds of its window wait for
	// workers, which then take their storage.
	c.pool = &Pool{maxBytes: maxBytes / 4, shared: &sharedBound{max: maxBytes}}
	l, err := simplelru.NewLRU[K, *Buf](math.MaxInt, c.onEvict)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	c.lru = l
	return c, nil
}

// Pool returns the pool whose free storage counts against the cache's
// bound: Bufs from its Get return their storage to it.
func (c *Cache[K]) Pool() *Pool { return c.pool }

// onEvict runs under c.mu for every value leaving the LRU list.
func (c *Cache[K]) onEvict(_ K, v *Buf) {
	c.bytes -= int64(cap(v.B))
	c.publish() // before the storage may return to the pool
	if c.evicting {
		c.st.Evictions++
	}
	v.Release()
}

// publish tells the pool, under c.mu, what the values and reservations hold.
func (c *Cache[K]) publish() { c.pool.shared.held.Store(c.bytes + c.reserved) }

// Get returns the value stored under k, with a reference the caller must
// Release, and marks it most recently used.
func (c *Cache[K]) Get(k K) (*Buf, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.lru.Get(k)
	if ok {
		c.st.Hits++
		v.Retain()
	} else {
		c.st.Misses++
	}
	return v, ok
}

// Contains reports whether k is stored, without touching recency or stats.
func (c *Cache[K]) Contains(k K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Contains(k)
}

// Add stores v under k with a reference of its own (the caller keeps
// its), replacing any previous value, and evicts the least recently used
// values until the byte bound holds. A value larger than the bound is not
// stored; Add reports whether v was stored.
func (c *Cache[K]) Add(k K, v *Buf) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int64(cap(v.B)) > c.maxBytes {
		c.st.Rejected++
		c.lru.Remove(k) // never leave an older value behind a newer one
		return false
	}
	c.lru.Remove(k)
	v.Retain()
	c.lru.Add(k, v)
	c.bytes += int64(cap(v.B))
	c.st.Adds++
	c.evict()
	return true
}

// evict drops least recently used values until the values and the
// reservations fit the bound, or no value is left, then the free storage
// beyond what they leave. It runs under c.mu.
func (c *Cache[K]) evict() {
	for c.bytes+c.reserved > c.maxBytes && c.evictOldest() {
	}
	c.publish()
	c.pool.fit()
}

// evictOldest drops the least recently used value, if there is one, under
// c.mu.
func (c *Cache[K]) evictOldest() bool {
	c.evicting = true
	_, _, ok := c.lru.RemoveOldest()
	c.evicting = false
	return ok
}

// Alloc returns a Buf holding one reference, with len(B) == 0 and
// cap(B) >= n, for a value about to be built: free storage that fits n
// (see Pool.Get) or, when the bound leaves no room for fresh storage, that
// of the least recently used values, evicted for it. Its capacity counts
// against the bound, as by Reserve, until the caller gives it back with
// Unreserve (usually just before adding the value).
func (c *Cache[K]) Alloc(n int) *Buf {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.pool.take(n)
	need := int64(StorageFor(n))
	for s == nil && c.bytes+c.reserved+c.pool.fit()+need > c.maxBytes {
		// Free storage too small or too large for n goes first.
		if c.pool.shed() {
			continue
		}
		if !c.evictOldest() {
			break
		}
		s = c.pool.take(n)
	}
	if s == nil {
		s = make([]byte, 0, need)
	}
	c.reserved += int64(cap(s))
	c.evict()
	return c.pool.wrap(s)
}

// Reserve counts n bytes against the bound for storage about to be
// filled, such as a segment being built, evicting values to make room, so
// that the bound covers what is being built as well as what is held. The
// caller gives the bytes back with Unreserve, usually before adding the
// finished value.
func (c *Cache[K]) Reserve(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reserved += max(n, 0)
	c.evict()
}

// Unreserve gives back n bytes of an earlier Reserve.
func (c *Cache[K]) Unreserve(n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reserved = max(c.reserved-max(n, 0), 0)
	c.publish()
}

// Remove drops the value stored under k and reports whether there was one.
func (c *Cache[K]) Remove(k K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Remove(k)
}

// Len returns the number of values held.
func (c *Cache[K]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Bytes returns the total capacity of the buffers held.
func (c *Cache[K]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// Stats returns a snapshot of the counters.
func (c *Cache[K]) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.st
	s.Entries = c.lru.Len()
	s.Bytes = c.bytes
	s.Reserved = c.reserved
	_, s.Free = c.pool.Free()
	s.MaxBytes = c.maxBytes
	return s
}
