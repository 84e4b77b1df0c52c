package engine

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/layout"
	"github.com/cramfs/cramfs/engine/states"
)

// checkInvariants checks the INVARIANT lines of the engine's state for m
// and the VirtualBAMs vs (see the LOCK ORDERING block in manager.go): the
// ones that hold whenever their locks are free, taking the locks in the
// documented order, then, once m is at rest (settle), the ones marked "at
// rest". A violation fails t, naming the structure, the invariant and what
// was found. Tests call it at their end, once their own calls returned;
// checkLocked alone may run while readers are at work.
func (m *Manager) checkInvariants(t testing.TB, vs ...*VirtualBAM) {
	t.Helper()
	m.checkLocked(t, vs...)
	if m.settle(t, vs...) {
		m.checkAtRest(t, vs...)
	}
}

// checkLocked checks the invariants that hold whenever their locks are
// free, holding Manager.mu throughout and the other locks in their turn.
func (m *Manager) checkLocked(t testing.TB, vs ...*VirtualBAM) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	m.checkMaps(t)
	var known []*layoutState
	for _, ls := range m.layouts {
		known = append(known, ls)
	}
	for _, v := range vs {
		known = append(known, m.checkVirtualBAM(t, v)...)
	}
	m.checkStates(t, known)
	m.checkSaves(t)
	parties := make([]*party, 0, len(vs)+len(m.scans))
	for _, v := range vs {
		parties = append(parties, &v.party)
	}
	for r := range m.scans {
		parties = append(parties, &r.party)
	}
	m.checkWorkers(t, parties)
}

// checkMaps checks Manager.layouts, gens, building and scans, under
// Manager.mu.
func (m *Manager) checkMaps(t testing.TB) {
	t.Helper()
	for k, ls := range m.layouts {
		if ls.key != k || !ls.persist || ls.m != m {
			t.Errorf("Manager.layouts[%q]: key %q, persist %v, own Manager %v; want the key it is held by, persisted, of this Manager", k, ls.key, ls.persist, ls.m == m)
		}
		if ls.gen != m.gens[k] {
			t.Errorf("Manager.layouts[%q]: generation %d, gens has %d: a layout held must be of the current generation", k, ls.gen, m.gens[k])
		}
		m.checkLayoutState(t, "Manager.layouts["+k+"]", ls)
		ls.mu.Lock()
		left := ls.learn.left
		ls.mu.Unlock()
		if left {
			t.Errorf("Manager.layouts[%q]: its learned digests were flushed (left), yet it is held", k)
		}
	}
	for k, n := range m.gens {
		if n < 1 {
			t.Errorf("Manager.gens[%q] = %d, want at least 1", k, n)
		}
	}
	for k, b := range m.building {
		select {
		case <-b.done:
			t.Errorf("Manager.building[%v]: done is closed, yet the build is still registered", k)
		default:
		}
		if b.waiters < 0 {
			t.Errorf("Manager.building[%v]: %d waiters, want at least 0", k, b.waiters)
		}
	}
	for r := range m.scans {
		if done := r.done.Load(); r.m != m || done > int64(len(r.res)) {
			t.Errorf("Manager.scans: scan of %s (own Manager %v) has %d of %d containers done", r.src.Name(), r.m == m, done, len(r.res))
		}
	}
}

// checkLayoutState checks the constant fields of ls and its learned
// digests (under ls.mu); where names it.
func (m *Manager) checkLayoutState(t testing.TB, where string, ls *layoutState) {
	t.Helper()
	l := &ls.idx.Layout
	m.checkLayout(t, where, l)
	if want := layoutTag(l, ls.gen); ls.tag != want {
		t.Errorf("%s: tag %s, layoutTag of its layout and generation %d is %s", where, ls.tag, ls.gen, want)
	}
	measured := 0
	for _, s := range l.Segments {
		if s.NoDigest {
			measured++
		}
	}
	if ls.measured != measured {
		t.Errorf("%s: measured %d, its layout has %d segments without digest", where, ls.measured, measured)
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ld := &ls.learn
	if measured == 0 && ld.by != nil || measured > 0 && len(ld.by) != len(l.Segments) {
		t.Errorf("%s: %d learned digest slots for %d segments, %d measured; want none when none is measured, else one per segment", where, len(ld.by), len(l.Segments), measured)
	}
	ok := 0
	for i, d := range ld.by {
		if d.ok {
			ok++
			if i < len(l.Segments) && !l.Segments[i].NoDigest {
				t.Errorf("%s: digest learned for segment %d, whose digest the scan built", where, i)
			}
		}
	}
	if ld.known != ok || ld.saved > ld.known || ld.known > ls.measured {
		t.Errorf("%s: learned digests: known %d, saved %d, %d slots set, %d measured; want known = slots set, saved <= known <= measured", where, ld.known, ld.saved, ok, ls.measured)
	}
	if !ls.persist && (ld.saving || ld.timed) {
		t.Errorf("%s: not persisted, yet a save is under way (%v) or due (%v)", where, ld.saving, ld.timed)
	}
}

// checkLayout checks that l is contiguous, of m's level, with the
// header's digest known and no digest kept for a segment without one.
func (m *Manager) checkLayout(t testing.TB, where string, l *layout.Layout) {
	t.Helper()
	if l.Level != m.opts.Level.Deflate() {
		t.Errorf("%s: layout of level %d, Manager level %d", where, l.Level, m.opts.Level.Deflate())
	}
	if h := l.Header; h.Offset != 0 || h.CompLen <= 0 || h.RawLen <= 0 || h.NoDigest || h.HasSum {
		t.Errorf("%s: header segment %+v, want offset 0, blocks, data, a digest and no content sum", where, h)
	}
	off := l.Header.CompLen
	for i, s := range l.Segments {
		if s.Offset != off {
			t.Errorf("%s: segment %d at offset %d, the one before ends at %d", where, i, s.Offset, off)
		}
		if s.NoDigest && s.Digest != 0 {
			t.Errorf("%s: segment %d has no digest but keeps %08x", where, i, s.Digest)
		}
		if (s.CompLen == 0) != (s.RawLen == 0) {
			t.Errorf("%s: segment %d of %d bytes holds %d bytes of data; want both 0 or neither", where, i, s.CompLen, s.RawLen)
		}
		if s.HasSum && !s.NoDigest || !s.HasSum && s.Sum != 0 {
			t.Errorf("%s: segment %d: content sum %08x (recorded %v) with digest built %v; want a sum only on a measured segment", where, i, s.Sum, s.HasSum, !s.NoDigest)
		}
		off = s.End()
	}
	if want := off + int64(len(bgzf.EOF)); l.Size != want {
		t.Errorf("%s: size %d, the segments and the EOF block end at %d", where, l.Size, want)
	}
}

// checkVirtualBAM checks v under Manager.mu (and v.mu), and returns the
// layouts v may serve: pinned, dropped, or the one held of its tag.
func (m *Manager) checkVirtualBAM(t testing.TB, v *VirtualBAM) []*layoutState {
	t.Helper()
	name := "VirtualBAM " + v.src.Name()
	if v.m != m {
		t.Errorf("%s: checked with a Manager not its own", name)
		return nil
	}
	if (v.pinned != nil) != (v.key == "") {
		t.Errorf("%s: pinned %v with index key %q: want a pinned layout exactly when there is no key", name, v.pinned != nil, v.key)
	}
	if v.key != "" && v.id != v.key+"/"+v.tag {
		t.Errorf("%s: cache id %q, want key/tag %q", name, v.id, v.key+"/"+v.tag)
	}
	var serves []*layoutState
	if v.pinned != nil {
		if v.pinned.persist {
			t.Errorf("%s: pinned layout is persisted", name)
		}
		serves = append(serves, v.pinned)
	}
	if d := v.dropped.Load(); d != nil {
		if !v.stale.Load() || m.layouts[v.key] == d {
			t.Errorf("%s: keeps a dropped layout, stale %v, the layout still held %v; want stale and not held", name, v.stale.Load(), m.layouts[v.key] == d)
		}
		serves = append(serves, d)
	}
	if ls := m.layouts[v.key]; ls != nil && ls.tag == v.tag {
		serves = append(serves, ls)
	}
	segs := -1
	for _, ls := range serves {
		l := &ls.idx.Layout
		if ls.tag != v.tag || l.Size != v.size || ls.idx.HasBAI != v.hasBAI || ls.idx.CSI != v.csi {
			t.Errorf("%s: serves a layout of tag %s, %d bytes, index %v (CSI %v); it was opened with tag %s, %d bytes, index %v (CSI %v)",
				name, ls.tag, l.Size, ls.idx.HasBAI, ls.idx.CSI, v.tag, v.size, v.hasBAI, v.csi)
		}
		m.checkLayoutState(t, name, ls)
		segs = len(l.Segments)
	}
	v.checkRun(t, name, segs)
	return serves
}

// checkRun checks v's run of reads, under v.mu; segs is the number of
// segments of its layout, -1 when no layout is held.
func (v *VirtualBAM) checkRun(t testing.TB, name string, segs int) {
	t.Helper()
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, r := range []readRun{v.cur, v.left} {
		if r.end < -1 || r.reads < 0 {
			t.Errorf("%s: run of reads from %d: last end %d, %d reads; want last end >= -1, reads >= 0", name, r.from, r.end, r.reads)
		}
	}
	if v.passed < 0 || segs >= 0 && v.passed > segs {
		t.Errorf("%s: run of reads: passed %d of %d segments; want 0 <= passed <= segments", name, v.passed, segs)
	}
	for i := range v.ahead {
		if i < 0 || segs >= 0 && i >= segs {
			t.Errorf("%s: segment %d built ahead, of %d segments", name, i, segs)
		}
	}
}

// checkStates checks the FileStates' counts against its entries, and the
// layouts among them and those known (held, pinned or dropped). The
// FileStates' own invariants are checked by package states' tests, a
// CRAM's by package cram's.
func (m *Manager) checkStates(t testing.TB, known []*layoutState) {
	t.Helper()
	entries, bytes, files := m.states.Snapshot()
	maxBytes, maxFiles := m.states.Bounds()
	var sum int64
	n := 0
	for _, e := range entries {
		r := e.Resident()
		sum += r.Bytes
		if r.File {
			n++
		}
		if st, ok := e.(*layoutState); ok {
			if !st.persist {
				t.Errorf("FileStates: holds layout %s, not persisted", st.key)
			}
			m.checkLayoutState(t, "FileStates entry "+st.key, st)
		}
	}
	if sum != bytes || n != files {
		t.Errorf("FileStates: counts %d bytes and %d descriptors, its entries hold %d and %d", bytes, files, sum, n)
	}
	if (bytes > maxBytes || files > maxFiles) && len(entries) > 1 {
		t.Errorf("FileStates: %d entries hold %d bytes and %d descriptors, bounds %d and %d", len(entries), bytes, files, maxBytes, maxFiles)
	}
	for _, ls := range known {
		if !ls.persist && slices.Contains(entries, states.Entry(ls)) {
			t.Errorf("layout %s: not persisted, yet an entry of the FileStates", ls.key)
		}
	}
}

// checkSaves checks the queue of learned digests to save, under its lock
// (and each layout's).
func (m *Manager) checkSaves(t testing.TB) {
	t.Helper()
	q := &m.saves
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queue) > 0 && !q.running {
		t.Errorf("saveQueue: %d layouts queued and no goroutine writing them", len(q.queue))
	}
	for i, ls := range q.queue {
		if slices.Index(q.queue, ls) != i {
			t.Errorf("saveQueue: layout %s queued twice", ls.key)
		}
		ls.mu.Lock()
		saving := ls.learn.saving
		ls.mu.Unlock()
		if !ls.persist || !saving {
			t.Errorf("saveQueue: layout %s queued, persisted %v, save under way %v; want both", ls.key, ls.persist, saving)
		}
	}
}

// checkWorkers checks the worker pool and the parties given, under the
// pool's lock.
func (m *Manager) checkWorkers(t testing.TB, parties []*party) {
	t.Helper()
	w := m.workers
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.free < 0 || w.free > m.opts.Threads {
		t.Errorf("workerPool: %d workers free of %d", w.free, m.opts.Threads)
	}
	for i, p := range w.ring {
		if slices.Index(w.ring, p) != i || !p.queued || len(p.waiters) == 0 {
			t.Errorf("workerPool: ring entry %d: in the ring once %v, queued %v, %d waiters", i, slices.Index(w.ring, p) == i, p.queued, len(p.waiters))
			continue
		}
		if w.free > 0 && p.eligible(p.waiters[0].order) {
			t.Errorf("workerPool: %d workers free while a party's first waiter (order %d) may have one", w.free, p.waiters[0].order)
		}
	}
	claims := 0
	for _, p := range parties {
		claims += len(p.claims)
	}
	if w.claimed < claims {
		t.Errorf("workerPool: %d claims counted, the parties given hold %d", w.claimed, claims)
	}
	for _, p := range parties {
		if in := slices.Contains(w.ring, p); p.queued != (len(p.waiters) > 0) || p.queued != in {
			t.Errorf("party: queued %v, %d waiters, in the ring %v; want all three to agree", p.queued, len(p.waiters), in)
		}
		if !slices.IsSortedFunc(p.waiters, func(a, b waiter) int { return a.order - b.order }) || !slices.IsSorted(p.claims) {
			t.Errorf("party: waiters %v or claims %v out of order", p.waiters, p.claims)
		}
	}
}

// settleTimeout bounds how long settle waits for the builds ahead, the
// builds in flight and the scans to end.
const settleTimeout = 30 * time.Second

// settle waits for m to be at rest: no build in flight, no scan, no build
// ahead of a reader of vs; it reports whether it came to rest, failing t
// with what was still busy when not.
func (m *Manager) settle(t testing.TB, vs ...*VirtualBAM) bool {
	t.Helper()
	var busy string
	for deadline := time.Now().Add(settleTimeout); ; time.Sleep(time.Millisecond) {
		if busy = m.busy(vs); busy == "" {
			return true
		}
		if time.Now().After(deadline) {
			t.Errorf("Manager not at rest after %v: %s", settleTimeout, busy)
			return false
		}
	}
}

// busy says what of m and vs is still at work, "" when nothing is.
func (m *Manager) busy(vs []*VirtualBAM) string {
	m.mu.Lock()
	builds, scans := len(m.building), len(m.scans)
	m.mu.Unlock()
	if builds > 0 || scans > 0 {
		return fmt.Sprintf("%d builds in flight, %d scans", builds, scans)
	}
	for _, v := range vs {
		v.mu.Lock()
		ahead := len(v.ahead)
		v.mu.Unlock()
		if ahead > 0 {
			return fmt.Sprintf("%d segments of %s being built ahead", ahead, v.src.Name())
		}
	}
	return ""
}

// checkAtRest checks the invariants marked "at rest", once settle found
// m so.
func (m *Manager) checkAtRest(t testing.TB, vs ...*VirtualBAM) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	entries, bytes, _ := m.states.Snapshot()
	for k, ls := range m.layouts {
		if !slices.Contains(entries, states.Entry(ls)) {
			t.Errorf("Manager.layouts[%q]: not an entry of the FileStates at rest", k)
		}
	}
	m.checkReserved(t, len(entries), bytes)
	w := m.workers
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.free != m.opts.Threads || len(w.ring) > 0 || w.claimed != 0 {
		t.Errorf("workerPool at rest: %d of %d workers free, %d parties waiting, %d claims counted", w.free, m.opts.Threads, len(w.ring), w.claimed)
	}
	for _, v := range vs {
		if len(v.party.waiters) > 0 || len(v.party.claims) > 0 {
			t.Errorf("VirtualBAM %s at rest: %d waiters, claims %v", v.src.Name(), len(v.party.waiters), v.party.claims)
		}
	}
}

// checkReserved checks that the cache's reservations are the file
// states' bytes and the decoders' counted ones.
func (m *Manager) checkReserved(t testing.TB, entries int, stateBytes int64) {
	t.Helper()
	var decoders int64
	if p := m.decoders.Load(); p != nil {
		_, decoders = p.Footprint()
	}
	if got := m.cache.Stats().Reserved; got != stateBytes+decoders {
		t.Errorf("cache at rest: %d bytes reserved, want the %d of the %d file states plus the %d of the decoders", got, stateBytes, entries, decoders)
	}
}
