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
	MaxBytes  int64  // the byte bound
}

// Cache is a least-recently-used cache of buffers whose total capacity
// never exceeds a fixed bound. It holds one reference to each stored Buf
// and releases it when the Buf leaves; Get hands out a reference of its
// own. It is safe for concurrent use. Stored bytes are shared with callers
// and must be treated as read-only by both sides.
type Cache[K comparable] struct {
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
	l, err := simplelru.NewLRU[K, *Buf](math.MaxInt, c.onEvict)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	c.lru = l
	return c, nil
}

// onEvict runs under c.mu for every value leaving the LRU list.
func (c *Cache[K]) onEvict(_ K, v *Buf) {
	c.bytes -= int64(cap(v.B))
	if c.evicting {
		c.st.Evictions++
	}
	v.Release()
}

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
// reservations fit the bound, or no value is left. It runs under c.mu.
func (c *Cache[K]) evict() {
	c.evicting = true
	for c.bytes+c.reserved > c.maxBytes {
		if _, _, ok := c.lru.RemoveOldest(); !ok {
			break
		}
	}
	c.evicting = false
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
	s.MaxBytes = c.maxBytes
	return s
}
