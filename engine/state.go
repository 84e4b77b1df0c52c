package engine

import (
	"container/list"
	"fmt"
	"os"
	"sync"
	"syscall"
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

	// Mutable, guarded by mu (which also guards every entry's resident).
	//
	// INVARIANT: each entry e of lru has e.res().elem at its element of
	//            lru and !e.res().gone
	// INVARIANT: bytes is the sum of the entries' resident.bytes, files
	//            the number of entries with resident.file
	// INVARIANT: bytes <= maxBytes && files <= maxFiles, or lru holds at
	//            most one entry (the one last touched, whatever its size)
	// INVARIANT (at rest): budget, when set, holds bytes reserved
	mu     sync.Mutex
	budget reserver  // set by count; nil: nothing counted
	lru    list.List // of stateEntry, most recently used first
	bytes  int64     // bytes of the entries held
	files  int       // entries holding a descriptor
}

// stateEntry is one file's state in a FileStates.
type stateEntry interface {
	res() *resident
	// drop is called, without the FileStates lock, once the entry has
	// left: the owner forgets it and frees what it holds once unused.
	drop()
}

// resident is an entry's place in a FileStates, guarded by FileStates.mu.
//
// INVARIANT: gone => elem == nil
type resident struct {
	elem  *list.Element
	bytes int64
	file  bool // holds a descriptor
	gone  bool // dropped: never added again
}

// NewFileStates returns a FileStates keeping at most maxBytes of state and
// maxFiles descriptors (each at least 1).
func NewFileStates(maxBytes int64, maxFiles int) *FileStates {
	return &FileStates{maxBytes: max(maxBytes, 1), maxFiles: max(maxFiles, 1)}
}

// MaxFiles is the bound on the descriptors held.
func (s *FileStates) MaxFiles() int { return s.maxFiles }

// count makes the states' bytes count against b.
func (s *FileStates) count(b reserver) {
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

// Stats returns the bytes and the descriptors held.
func (s *FileStates) Stats() (bytes int64, files int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes, s.files
}

// touch marks e used, adding it if it is new, and drops the least
// recently used entries (never e) while a bound is passed. An entry that
// was dropped is not added again.
func (s *FileStates) touch(e stateEntry) {
	s.mu.Lock()
	r := e.res()
	if r.gone {
		s.mu.Unlock()
		return
	}
	var grown int64
	if r.elem == nil {
		r.elem = s.lru.PushFront(e)
		s.bytes += r.bytes
		grown = r.bytes
		if r.file {
			s.files++
		}
	} else {
		s.lru.MoveToFront(r.elem)
	}
	var out []stateEntry
	var freed int64
	for s.bytes > s.maxBytes || s.files > s.maxFiles {
		back := s.lru.Back()
		if back == nil || back == r.elem {
			break
		}
		v := back.Value.(stateEntry)
		freed += s.unlink(v.res())
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
		v.drop()
	}
}

// dropAll drops every entry; each is rebuilt when next used.
func (s *FileStates) dropAll() {
	s.mu.Lock()
	var out []stateEntry
	var freed int64
	for e := s.lru.Front(); e != nil; e = s.lru.Front() {
		v := e.Value.(stateEntry)
		freed += s.unlink(v.res())
		out = append(out, v)
	}
	b := s.budget
	s.mu.Unlock()
	if b != nil {
		b.Unreserve(freed)
	}
	for _, v := range out {
		v.drop()
	}
}

// remove takes e out, if it is held, without calling its drop.
func (s *FileStates) remove(e stateEntry) {
	s.mu.Lock()
	freed := s.unlink(e.res())
	b := s.budget
	s.mu.Unlock()
	if b != nil && freed > 0 {
		b.Unreserve(freed)
	}
}

// unlink removes r's entry under s.mu, marks it gone and returns its bytes.
func (s *FileStates) unlink(r *resident) int64 {
	r.gone = true
	if r.elem == nil {
		return 0
	}
	s.lru.Remove(r.elem)
	r.elem = nil
	s.bytes -= r.bytes
	if r.file {
		s.files--
	}
	return r.bytes
}

// fileVersion identifies the version of a file a descriptor reads: a file
// replaced, truncated or rewritten in place differs in one of these.
type fileVersion struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds
}

func (v fileVersion) String() string {
	return fmt.Sprintf("device %d inode %d, %d bytes, mtime %d, ctime %d", v.dev, v.ino, v.size, v.mtime, v.ctime)
}

// sameBesidesCTime reports whether v and o are of the same file (device
// and inode) with the same size and mtime, whatever their ctimes.
func (v fileVersion) sameBesidesCTime(o fileVersion) bool {
	v.ctime = o.ctime
	return v == o
}

// versionOf is the version of the file fi (an fstat) describes.
func versionOf(fi os.FileInfo) fileVersion {
	v := fileVersion{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		v.dev, v.ino = uint64(s.Dev), s.Ino
		v.ctime = s.Ctim.Sec*1e9 + s.Ctim.Nsec
	}
	return v
}
