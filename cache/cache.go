// Package cache holds built BGZF data of virtual BAM segments in memory,
// bounded by the total number of bytes held rather than by entry count.
package cache

import (
	"container/list"
	"errors"
	"fmt"
	"sync"
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
// Values demoted (Demote: a sequential reader passed them) leave before
// any other, the least recently demoted first, and are used again like
// any other once found by Get: they stay while the bound has room.
//
// The bound covers the values, the reservations (Reserve, Alloc) and the
// free storage of its Pool: storage of values that left, which no reader
// holds any more, kept for the next Alloc.
type Cache[K comparable] struct {
	// Dependency, made by New.
	pool *Pool

	// Mutable, guarded by mu: every value is in one of hot and cold,
	// most recently used (or demoted) at the front, and in items.
	//
	// INVARIANT: len(items) == hot.Len() + cold.Len(), and bytes is the
	//            sum of their values' capacities
	mu       sync.Mutex
	items    map[K]*list.Element // of *entry[K]
	hot      list.List
	cold     list.List // demoted values, which leave first
	maxBytes int64
	bytes    int64
	reserved int64 // bytes of storage being filled, counted against maxBytes
	st       Stats
}

// entry is a value of a Cache under its key, in the list named by cold.
type entry[K comparable] struct {
	key  K
	buf  *Buf
	cold bool
}

// New returns a cache holding buffers of at most maxBytes bytes of
// capacity in all. A
// maxBytes of 0 gives a cache that stores nothing.
func New[K comparable](maxBytes int64) (*Cache[K], error) {
	if maxBytes < 0 {
		return nil, fmt.Errorf("%w: negative byte bound %d", ErrInvalid, maxBytes)
	}
	c := &Cache[K]{maxBytes: maxBytes, items: make(map[K]*list.Element)}
	// A quarter of the bound at most, what a sequential reader's
	// readahead may hold (engine.Options.Readahead): the reader leaves
	// segments behind in bursts while the builds of its window wait for
	// workers, which then take their storage.
	c.pool = &Pool{maxBytes: maxBytes / 4, shared: &sharedBound{max: maxBytes}}
	return c, nil
}

// Pool returns the pool whose free storage counts against the cache's
// bound: Bufs from its Get return their storage to it.
func (c *Cache[K]) Pool() *Pool { return c.pool }

// listOf returns the list holding e.
func (c *Cache[K]) listOf(e *entry[K]) *list.List {
	if e.cold {
		return &c.cold
	}
	return &c.hot
}

// drop removes the value of el, under c.mu, and releases the cache's
// reference to it.
func (c *Cache[K]) drop(el *list.Element) {
	e := el.Value.(*entry[K])
	c.listOf(e).Remove(el)
	delete(c.items, e.key)
	c.bytes -= int64(cap(e.buf.B))
	c.publish() // before the storage may return to the pool
	e.buf.Release()
}

// remove drops the value stored under k, if any, under c.mu.
func (c *Cache[K]) remove(k K) bool {
	el, ok := c.items[k]
	if ok {
		c.drop(el)
	}
	return ok
}

// moveTo puts the value of el at the front of hot, or of cold when cold
// is set, under c.mu.
func (c *Cache[K]) moveTo(el *list.Element, cold bool) {
	e := el.Value.(*entry[K])
	if e.cold == cold {
		c.listOf(e).MoveToFront(el)
		return
	}
	c.listOf(e).Remove(el)
	e.cold = cold
	c.items[e.key] = c.listOf(e).PushFront(e)
}

// publish tells the pool, under c.mu, what the values and reservations hold.
func (c *Cache[K]) publish() { c.pool.shared.held.Store(c.bytes + c.reserved) }

// Get returns the value stored under k, with a reference the caller must
// Release, and marks it most recently used.
func (c *Cache[K]) Get(k K) (*Buf, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		c.st.Misses++
		return nil, false
	}
	c.st.Hits++
	return c.take(el), true
}

// GetAgain is Get for a caller whose own Get of k just missed and that
// looks again (under a lock of its own) before building the value: it
// counts no second lookup, neither a hit nor a miss.
func (c *Cache[K]) GetAgain(k K) (*Buf, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		return nil, false
	}
	return c.take(el), true
}

// take marks el most recently used and returns its value with a
// reference for the caller. c.mu must be held.
func (c *Cache[K]) take(el *list.Element) *Buf {
	c.moveTo(el, false)
	v := el.Value.(*entry[K]).buf
	v.Retain()
	return v
}

// Demote makes the value stored under k, if any, leave before every value
// not demoted, after those demoted before it, and reports whether there
// was one. A Get of it undoes that.
func (c *Cache[K]) Demote(k K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if ok {
		c.moveTo(el, true)
	}
	return ok
}

// Contains reports whether k is stored, without touching recency or stats.
func (c *Cache[K]) Contains(k K) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.items[k]
	return ok
}

// Add stores v under k with a reference of its own (the caller keeps
// its), replacing any previous value, and evicts values (see evict) until
// the byte bound holds. A value larger than the bound is not
// stored; Add reports whether v was stored.
func (c *Cache[K]) Add(k K, v *Buf) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if int64(cap(v.B)) > c.maxBytes {
		c.st.Rejected++
		c.remove(k) // never leave an older value behind a newer one
		return false
	}
	c.remove(k)
	v.Retain()
	c.items[k] = c.hot.PushFront(&entry[K]{key: k, buf: v})
	c.bytes += int64(cap(v.B))
	c.st.Adds++
	c.evict()
	return true
}

// evict drops values, the demoted first (evictOldest), until the values
// and the reservations fit the bound, or no value is left, then the free
// storage beyond what they leave. It runs under c.mu.
func (c *Cache[K]) evict() {
	for c.bytes+c.reserved > c.maxBytes && c.evictOldest() {
	}
	c.publish()
	c.pool.fit()
}

// evictOldest drops the least recently demoted value or, when none is,
// the least recently used, if there is one, under c.mu.
func (c *Cache[K]) evictOldest() bool {
	el := c.cold.Back()
	if el == nil {
		el = c.hot.Back()
	}
	if el == nil {
		return false
	}
	c.drop(el)
	c.st.Evictions++
	return true
}

// Alloc returns a Buf holding one reference, with len(B) == 0 and
// cap(B) >= n, for a value about to be built: free storage that fits n
// (see Pool.Get) or, when the bound leaves no room for fresh storage, that
// of the values evicted for it (demoted first, see evictOldest). Its capacity counts
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
		s = newStorage(int(need))
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
	return c.remove(k)
}

// Len returns the number of values held.
func (c *Cache[K]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
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
	s.Entries = len(c.items)
	s.Bytes = c.bytes
	s.Reserved = c.reserved
	_, s.Free = c.pool.Free()
	s.MaxBytes = c.maxBytes
	return s
}
