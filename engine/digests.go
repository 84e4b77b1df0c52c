package engine

import (
	"maps"
	"sync"
	"time"

	"github.com/cramfs/cramfs/engine/layout"
)

// A level-0 layout scanned by measuring records (Segment.NoDigest) learns
// each segment's digest from the segment's first build, which is checked
// in full (the reference MD5s included); the builds after it, once the
// segment left the cache, are checked against it like the builds of a
// layout scanned by building. The digests learned go into the index file,
// so that a remount checks them too: batched, at most saveEvery after one
// was learned, so that a mount killed loses only the last few seconds'.

// learnedDigest is the digest of a measured segment, once learned.
type learnedDigest struct {
	d  uint32
	ok bool
}

// saveEvery bounds how long a digest learned waits to be written: the
// index file is written at most about once per saveEvery (besides the
// doublings of due), as it is of O(segments) bytes.
const saveEvery = 2 * time.Second

// learnedDigests are the digests a layoutState learned of its measured
// segments, and how many of them its index file holds.
//
// INVARIANT: known is the number of entries of by with ok
// INVARIANT: saved <= known
type learnedDigests struct {
	by     []learnedDigest // by segment; nil when no segment is measured
	known  int             // entries of by learned
	saved  int             // known when the index file was last written
	saving bool            // a save is under way
	left   bool            // the layout left memory: every digest learned is due
	last   time.Time       // when the last save began; zero before the first
	timed  bool            // a timer will look again once saveEvery passed
}

// init makes l hold the digests idx has learned and returns how many of
// its segments are measured.
func (l *learnedDigests) init(idx *layout.File) int {
	segs := idx.Layout.Segments
	measured := 0
	for _, s := range segs {
		if s.NoDigest {
			measured++
		}
	}
	if measured == 0 {
		return 0
	}
	l.by = make([]learnedDigest, len(segs))
	for i, d := range idx.Learned {
		if i >= 0 && i < len(segs) && segs[i].NoDigest {
			l.by[i] = learnedDigest{d: d, ok: true}
			l.known++
		}
	}
	l.saved = l.known
	return measured
}

// due reports whether the index file should be written again at now: no
// save is under way and the digests known have doubled since the last one,
// are all known, the layout left memory, or saveEvery passed since the
// last save (a file of n segments read whole in t seconds is written
// about log2(n) + t/saveEvery times).
func (l *learnedDigests) due(measured int, now time.Time) bool {
	return !l.saving && l.known > l.saved &&
		(l.known >= 2*l.saved || l.known == measured || l.left || now.Sub(l.last) >= saveEvery)
}

// pending reports whether digests learned wait for a save with none under
// way and no timer set: the caller sets one.
func (l *learnedDigests) pending() bool {
	return !l.saving && !l.timed && l.known > l.saved
}

// snapshot returns the digests learned, by segment.
func (l *learnedDigests) snapshot() map[int]uint32 {
	out := make(map[int]uint32, l.known)
	for i, ld := range l.by {
		if ld.ok {
			out[i] = ld.d
		}
	}
	return out
}

// want returns segment i of the layout as its build is checked: with its
// digest once learned.
func (ls *layoutState) want(i int) layout.Segment {
	s := ls.idx.Layout.Segments[i]
	if !s.NoDigest {
		return s
	}
	ls.mu.Lock()
	ld := ls.learn.by[i]
	ls.mu.Unlock()
	if ld.ok {
		s.Digest, s.NoDigest = ld.d, false
	}
	return s
}

// learned records d, the digest of measured segment i at its first build,
// and has the index file written when due.
func (ls *layoutState) learned(i int, d uint32) {
	ls.mu.Lock()
	l := &ls.learn
	if !l.by[i].ok {
		l.by[i] = learnedDigest{d: d, ok: true}
		l.known++
	}
	ls.mu.Unlock()
	ls.saveIfDue()
}

// flush writes the digests learned and not yet saved, when the layout
// leaves memory (after the save under way, if one is).
func (ls *layoutState) flush() {
	ls.mu.Lock()
	ls.learn.left = true
	ls.mu.Unlock()
	ls.saveIfDue()
}

// saveIfDue starts a save of the digests learned when one is due, else,
// when some wait, sets a timer to look again once saveEvery passed since
// the last save.
func (ls *layoutState) saveIfDue() {
	if !ls.persist {
		return
	}
	now := time.Now()
	ls.mu.Lock()
	l := &ls.learn
	save := l.due(ls.measured, now)
	l.saving = l.saving || save
	var wait time.Duration
	if !save && l.pending() {
		l.timed = true
		wait = saveEvery - now.Sub(l.last)
	}
	ls.mu.Unlock()
	switch {
	case save:
		ls.m.startSave(ls)
	case wait > 0:
		time.AfterFunc(wait, ls.timerFired)
	}
}

// timerFired is the timer saveIfDue set: it saves the digests learned since,
// unless the Manager closed (its Close saved them).
func (ls *layoutState) timerFired() {
	ls.mu.Lock()
	ls.learn.timed = false
	ls.mu.Unlock()
	if !ls.m.startBackground() {
		return
	}
	defer ls.m.background.Done()
	ls.saveIfDue()
}

// saveQueue holds the layouts whose learned digests are to be written,
// written one at a time by one goroutine: a mount reading many files at
// once writes their index files in turn, holding a few descriptors and
// one file's bytes at a time, not one of each per file.
type saveQueue struct {
	// Mutable, guarded by mu.
	//
	// INVARIANT: len(queue) > 0 => running
	// INVARIANT: each ls of queue is there once, with ls.persist and
	//            ls.learn.saving
	mu      sync.Mutex
	queue   []*layoutState
	running bool // a goroutine is writing the queue
	// fileMu is held while an index file is written with learned digests,
	// and by dropLayout while it removes one.
	fileMu sync.Mutex
}

// startSave queues ls for saving, and starts the goroutine writing the
// queue in the background (Close waits for it) unless it runs, or writes
// it now once Close has begun.
func (m *Manager) startSave(ls *layoutState) {
	q := &m.saves
	q.mu.Lock()
	q.queue = append(q.queue, ls)
	run := !q.running
	q.running = true
	q.mu.Unlock()
	if !run {
		return
	}
	if !m.startBackground() {
		m.runSaves()
		return
	}
	go func() {
		defer m.background.Done()
		m.runSaves()
	}()
}

// runSaves saves the layouts queued until the queue is empty.
func (m *Manager) runSaves() {
	q := &m.saves
	for {
		q.mu.Lock()
		if len(q.queue) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		ls := q.queue[0]
		q.queue[0] = nil
		q.queue = q.queue[1:]
		q.mu.Unlock()
		ls.save()
	}
}

// save writes the index file with the digests learned, again while more
// were learned meanwhile and a save is due; the caller set learn.saving.
func (ls *layoutState) save() {
	m := ls.m
	for {
		ls.mu.Lock()
		learned, n := ls.learn.snapshot(), ls.learn.known
		ls.learn.last = time.Now()
		ls.mu.Unlock()
		err := ls.writeLearnedIfCurrent(learned)
		if err != nil {
			m.warnOnce.Do(func() {
				m.log.Warn("cannot persist layout indexes; keeping them in memory while they fit, scanning files again after", "dir", m.opts.CacheDir, "err", err)
			})
		}
		ls.mu.Lock()
		ls.learn.saved = max(ls.learn.saved, n)
		ls.learn.saving = false
		again := ls.learn.due(ls.measured, time.Now())
		ls.learn.saving = again
		ls.mu.Unlock()
		if !again {
			ls.saveIfDue() // sets the timer for digests learned meanwhile
			return
		}
	}
}

// writeLearnedIfCurrent writes the index file of ls with the digests
// learned unless a layout of its file version was dropped since ls was
// made (its index file removed as wrong: not to be restored).
func (ls *layoutState) writeLearnedIfCurrent(learned map[int]uint32) error {
	m := ls.m
	m.saves.fileMu.Lock()
	defer m.saves.fileMu.Unlock()
	m.mu.Lock()
	current := m.gens[ls.key] == ls.gen
	m.mu.Unlock()
	if !current {
		return nil
	}
	return ls.writeLearned(learned)
}

// writeLearned writes the index file of ls with the digests learned,
// merged with those of the index file there, when it is of the same
// layout (another mount of the same cache directory learned them, or an
// index made with Options.Digests has them all); the ones taken from it
// check this Manager's builds too. Called with saves.fileMu held.
func (ls *layoutState) writeLearned(learned map[int]uint32) error {
	m := ls.m
	if disk, err := m.dir.Load(ls.key); err == nil && sameLayout(disk, ls.idx) {
		theirs := digestsOf(disk)
		for i, d := range theirs {
			if !ls.idx.Layout.Segments[i].NoDigest {
				continue
			}
			if mine, ok := learned[i]; ok && mine != d {
				m.log.Warn("another writer's index learned another digest for a segment; keeping this one", "index", m.dir.PathOf(ls.key), "segment", i, "digest", mine, "theirs", d)
				continue
			}
			learned[i] = d
		}
		ls.adopt(learned)
	}
	f := *ls.idx
	f.Learned = maps.Clone(learned)
	return m.dir.Save(ls.key, &f)
}

// adopt takes the digests of learned that ls does not know yet.
func (ls *layoutState) adopt(learned map[int]uint32) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := &ls.learn
	for i, d := range learned {
		if !l.by[i].ok {
			l.by[i] = learnedDigest{d: d, ok: true}
			l.known++
		}
	}
}

// sameLayout reports whether a and b are layouts of the same file version
// and of the same shape, whatever digests each knows.
func sameLayout(a, b *layout.File) bool {
	return a.Depends == b.Depends && a.ID == b.ID && len(a.Layout.Segments) == len(b.Layout.Segments) &&
		layoutTag(&a.Layout, 0) == layoutTag(&b.Layout, 0) && a.Layout.Header == b.Layout.Header
}

// digestsOf returns the digests f knows of its data segments: built by its
// scan or learned.
func digestsOf(f *layout.File) map[int]uint32 {
	out := maps.Clone(f.Learned)
	if out == nil {
		out = map[int]uint32{}
	}
	for i, s := range f.Layout.Segments {
		if !s.NoDigest {
			out[i] = s.Digest
		}
	}
	return out
}
