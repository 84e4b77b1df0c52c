package states

import (
	"math/rand/v2"
	"sync"
	"testing"
)

// entry is a state of a test: its bytes, whether it holds a descriptor,
// and how often its owner was told to drop it.
type entry struct {
	res   Resident
	drops int
}

func (e *entry) Resident() *Resident { return &e.res }
func (e *entry) Drop()               { e.drops++ }

// budget is a Reserver that counts what is reserved in it.
type budget struct {
	mu       sync.Mutex
	reserved int64
}

func (b *budget) Reserve(n int64)   { b.mu.Lock(); b.reserved += n; b.mu.Unlock() }
func (b *budget) Unreserve(n int64) { b.mu.Lock(); b.reserved -= n; b.mu.Unlock() }

// check checks the INVARIANT lines of FileStates under its lock, and that
// the budget holds the bytes counted.
func (s *FileStates) check(t *testing.T, b *budget) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var bytes int64
	files := 0
	for e := s.lru.Front(); e != nil; e = e.Next() {
		r := e.Value.(Entry).Resident()
		if r.elem != e || r.gone {
			t.Errorf("entry not at its element (%v) or gone (%v)", r.elem == e, r.gone)
		}
		bytes += r.Bytes
		if r.File {
			files++
		}
	}
	if bytes != s.bytes || files != s.files {
		t.Errorf("counts %d bytes and %d descriptors, its entries hold %d and %d", s.bytes, s.files, bytes, files)
	}
	if (s.bytes > s.maxBytes || s.files > s.maxFiles) && s.lru.Len() > 1 {
		t.Errorf("%d entries hold %d bytes and %d descriptors, bounds %d and %d", s.lru.Len(), s.bytes, s.files, s.maxBytes, s.maxFiles)
	}
	if b != nil && s.budget == Reserver(b) {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.reserved != s.bytes {
			t.Errorf("budget holds %d bytes, the states %d", b.reserved, s.bytes)
		}
	}
}

// TestFileStatesBounds touches, removes and drops entries at random and
// checks the invariants after each step: within both bounds (or one entry
// left), counts equal to the entries', each entry dropped at most once and
// never held again once gone, the budget holding the bytes counted.
func TestFileStatesBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	b := &budget{}
	s := NewFileStates(1000, 3)
	s.Count(b)
	var all []*entry
	for step := range 2000 {
		switch op := r.IntN(10); {
		case op < 6 || len(all) == 0:
			e := &entry{res: Resident{Bytes: int64(r.IntN(400)), File: r.IntN(2) == 0}}
			all = append(all, e)
			s.Touch(e)
		case op < 8:
			s.Touch(all[r.IntN(len(all))])
		case op < 9:
			s.Remove(all[r.IntN(len(all))])
		default:
			if step%100 == 0 {
				s.DropAll()
			}
		}
		s.check(t, b)
		if t.Failed() {
			t.Fatalf("after step %d", step)
		}
	}
	entries, _, _ := s.Snapshot()
	held := map[*entry]bool{}
	for _, e := range entries {
		held[e.(*entry)] = true
	}
	for i, e := range all {
		if e.drops > 1 {
			t.Errorf("entry %d dropped %d times", i, e.drops)
		}
		if (e.drops > 0 || e.res.gone) && held[e] {
			t.Errorf("entry %d held after it left (drops %d, gone %v)", i, e.drops, e.res.gone)
		}
	}
}

// TestFileStatesKeepsTheLastTouched: an entry larger than the byte bound
// is kept while it is the one last touched, and the others leave.
func TestFileStatesKeepsTheLastTouched(t *testing.T) {
	s := NewFileStates(100, 10)
	small := &entry{res: Resident{Bytes: 10}}
	big := &entry{res: Resident{Bytes: 500}}
	s.Touch(small)
	s.Touch(big)
	entries, bytes, _ := s.Snapshot()
	if len(entries) != 1 || entries[0] != Entry(big) || bytes != 500 || small.drops != 1 {
		t.Fatalf("held %d entries of %d bytes, small dropped %d times; want only the big one", len(entries), bytes, small.drops)
	}
	s.check(t, nil)
}
