// Package states bounds what open files keep in memory and how many
// descriptors they hold: a FileStates is an LRU of per-file states
// (a CRAM's descriptor and container table, a virtual BAM's layout and
// index), each of which its owner rebuilds on demand once dropped.
package states

import (
	"container/list"
	"sync"
)

// FileStates holds what open files keep beyond a small constant (a CRAM's
// descriptor, parsed header and container table, a virtual BAM's layout,
// index and header blocks) within a byte bound and a bound on open
// descriptors, and drops the least recently used when a bound is passed;
// each owner rebuilds its state on demand from the same file version. Its
// bytes are reserved in the budget it is given (a Manager's cache), so
// the cache keeps fewer segments while many files are open. It is safe
// for concurrent use.
type FileStates struct {
	// Constant after NewFileStates.
	maxBytes int64
	maxFiles int

	// Mutable, guarded by mu (which also guards every entry's Resident).
	//
	// INVARIANT: each entry e of lru has e.Resident().elem at its element of
	//            lru and !e.Resident().gone
	// INVARIANT: bytes is the sum of the entries' Resident.Bytes, files
	//            the number of entries with Resident.File
	// INVARIANT: bytes <= maxBytes && files <= maxFiles, or lru holds at
	//            most one entry (the one last touched, whatever its size)
	// INVARIANT (at rest): budget, when set, holds bytes reserved
	mu     sync.Mutex
	budget Reserver  // set by Count; nil: nothing counted
	lru    list.List // of Entry, most recently used first
	bytes  int64     // bytes of the entries held
	files  int       // entries holding a descriptor
}

// Entry is one file's state in a FileStates.
type Entry interface {
	Resident() *Resident
	// Drop is called, without the FileStates lock, once the entry has
	// left: the owner forgets it and frees what it holds once unused.
	Drop()
}

// Resident is an entry's place in a FileStates, guarded by FileStates.mu.
//
// INVARIANT: gone => elem == nil
type Resident struct {
	// Set by the owner before the entry is first touched, constant after.
	Bytes int64 // the state's memory
	File  bool  // the state holds a descriptor

	elem *list.Element
	gone bool // dropped: never added again
}

// NewFileStates returns a FileStates keeping at most maxBytes of state and
// maxFiles descriptors (each at least 1).
func NewFileStates(maxBytes int64, maxFiles int) *FileStates {
	return &FileStates{maxBytes: max(maxBytes, 1), maxFiles: max(maxFiles, 1)}
}

// MaxFiles is the bound on the descriptors held.
func (s *FileStates) MaxFiles() int { return s.maxFiles }

// Count makes the states' bytes count against b.
func (s *FileStates) Count(b Reserver) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.budget != nil {
		s.budget.Unreserve(s.bytes)
	}
	s.budget = b
	if b != nil {
		b.Reserve(s.bytes)
	}
}

// Reserver is a byte budget (a cache.Cache) that storage is counted
// against.
type Reserver interface {
	Reserve(n int64)
	Unreserve(n int64)
}

// Stats returns the bytes and the descriptors held.
func (s *FileStates) Stats() (bytes int64, files int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes, s.files
}

// Touch marks e used, adding it if it is new, and drops the least
// recently used entries (never e) while a bound is passed. An entry that
// was dropped is not added again.
func (s *FileStates) Touch(e Entry) {
	s.mu.Lock()
	r := e.Resident()
	if r.gone {
		s.mu.Unlock()
		return
	}
	var grown int64
	if r.elem == nil {
		r.elem = s.lru.PushFront(e)
		s.bytes += r.Bytes
		grown = r.Bytes
		if r.File {
			s.files++
		}
	} else {
		s.lru.MoveToFront(r.elem)
	}
	var out []Entry
	var freed int64
	for s.bytes > s.maxBytes || s.files > s.maxFiles {
		back := s.lru.Back()
		if back == nil || back == r.elem {
			break
		}
		v := back.Value.(Entry)
		freed += s.unlink(v.Resident())
		out = append(out, v)
	}
	b := s.budget
	s.mu.Unlock()
	if b != nil {
		if grown > freed {
			b.Reserve(grown - freed)
		} else if freed > grown {
			b.Unreserve(freed - grown)
		}
	}
	for _, v := range out {
		v.Drop()
	}
}

// DropAll drops every entry; each is rebuilt when next used.
func (s *FileStates) DropAll() {
	s.mu.Lock()
	var out []Entry
	var freed int64
	for e := s.lru.Front(); e != nil; e = s.lru.Front() {
		v := e.Value.(Entry)
		freed += s.unlink(v.Resident())
		out = append(out, v)
	}
	b := s.budget
	s.mu.Unlock()
	if b != nil {
		b.Unreserve(freed)
	}
	for _, v := range out {
		v.Drop()
	}
}

// Remove takes e out, if it is held, without calling its drop.
func (s *FileStates) Remove(e Entry) {
	s.mu.Lock()
	freed := s.unlink(e.Resident())
	b := s.budget
	s.mu.Unlock()
	if b != nil && freed > 0 {
		b.Unreserve(freed)
	}
}

// unlink removes r's entry under s.mu, marks it gone and returns its bytes.
func (s *FileStates) unlink(r *Resident) int64 {
	r.gone = true
	if r.elem == nil {
		return 0
	}
	s.lru.Remove(r.elem)
	r.elem = nil
	s.bytes -= r.Bytes
	if r.File {
		s.files--
	}
	return r.Bytes
}

// Snapshot returns the entries held, most recently used first, with the
// bytes and descriptors counted for them, all as of one moment.
func (s *FileStates) Snapshot() (entries []Entry, bytes int64, files int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := s.lru.Front(); e != nil; e = e.Next() {
		entries = append(entries, e.Value.(Entry))
	}
	return entries, s.bytes, s.files
}

// Bounds returns the bounds on the bytes and the descriptors held.
func (s *FileStates) Bounds() (maxBytes int64, maxFiles int) { return s.maxBytes, s.maxFiles }
