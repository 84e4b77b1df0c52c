package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"unsafe"

	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/layout"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/engine/states"
)

// Open returns the virtual BAM of src. The first Open of a file scans every
// container once (or loads the persisted layout index); concurrent Opens of
// the same file share one scan.
func (m *Manager) Open(ctx context.Context, src source.Source) (*VirtualBAM, error) {
	hdrRaw, err := headerOf(src)
	if err != nil {
		return nil, err
	}
	c, err := m.getComp()
	if err != nil {
		return nil, fmt.Errorf("%s: BGZF level %d: %w", src.Name(), m.opts.Level.Deflate(), err)
	}
	// Only measured here: the header's blocks are a segment of the cache,
	// built (and checked against hdrSeg) when they are read, so that a
	// listing of many files does not fill the cache with headers.
	_, hdrSeg, err := compressHeader(c, src, nil, hdrRaw)
	m.putComp(c)
	if err != nil {
		return nil, err
	}
	if src.NumContainers() < 0 {
		return nil, fmt.Errorf("%w: %s: %d containers", ErrInvalid, src.Name(), src.NumContainers())
	}

	id, depends, idErr := m.identify(src)
	persist := idErr == nil
	var key string
	if persist {
		key = layout.Key(id, depends)
	} else {
		key, depends = "anon:"+src.Name(), ""
		m.log.Debug("no file identity; layout kept in memory only", "file", src.Name(), "err", idErr)
	}
	r, err, _ := m.opens.Do(key, func() (any, error) {
		idx, scanned, err := m.layoutFor(ctx, src, key, depends, id, hdrRaw, hdrSeg)
		return openedLayout{idx, scanned}, err
	})
	if err != nil {
		return nil, m.explainSize(err)
	}
	idx := r.(openedLayout).idx
	ls := m.keep(key, idx, persist)
	// Segments are cached per layout: after a layout was dropped and the
	// file scanned again, a segment of the old layout is never served.
	cacheID := key + "/" + ls.tag
	layoutKey := key
	if !persist {
		cacheID = fmt.Sprintf("%s#%d", key, m.anonSeq.Add(1))
		layoutKey = ""
	}

	maxSeg := idx.Layout.MaxSegment()
	m.noteSegmentSize(maxSeg)
	v := &VirtualBAM{
		m:         m,
		src:       src,
		id:        cacheID,
		key:       layoutKey,
		depends:   depends,
		tag:       ls.tag,
		fid:       id,
		hdrSeg:    hdrSeg,
		size:      idx.Layout.Size,
		hasBAI:    idx.HasBAI,
		csi:       idx.CSI,
		cur:       noRun,
		left:      noRun,
		ahead:     make(map[int]context.CancelFunc),
		maxSeg:    maxSeg,
		readahead: m.opts.readahead(maxSeg),
		scanned:   r.(openedLayout).scanned,
	}
	if !persist {
		v.pinned = ls
	}
	return v, nil
}

// openedLayout is the layout an Open found, and whether it scanned the
// file for it.
type openedLayout struct {
	idx     *layout.File
	scanned bool
}

// headerOf returns the uncompressed BAM header of src.
func headerOf(src source.Source) ([]byte, error) {
	h, err := src.Header()
	if err != nil {
		return nil, err
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("%w: %s: empty BAM header", ErrInvalid, src.Name())
	}
	return h, nil
}

// compressHeader appends the BGZF blocks of the BAM header hdrRaw of src,
// made by c, to dst, and returns them with their segment.
func compressHeader(c *bgzf.Compressor, src source.Source, dst, hdrRaw []byte) ([]byte, layout.Segment, error) {
	start := len(dst)
	dst, err := compressSegment(c, dst, hdrRaw)
	if err != nil {
		return dst[:start], layout.Segment{}, fmt.Errorf("%s: compressing header: %w", src.Name(), err)
	}
	digest, err := segmentDigest(dst[start:])
	if err != nil {
		return dst[:start], layout.Segment{}, fmt.Errorf("%s: compressing header: %w", src.Name(), err)
	}
	return dst, layout.Segment{CompLen: int64(len(dst) - start), RawLen: int64(len(hdrRaw)), Digest: digest}, nil
}

// layoutState is the layout and index of one file version: in the
// Manager's states.FileStates when the layout can be read again from its index
// key, else pinned by its VirtualBAMs.
//
// A layout is made by Manager.keep, held in Manager.layouts and the
// states.FileStates while it is persisted, and leaves them when the states.FileStates
// drop it (drop: its learned digests are flushed, the VirtualBAMs read
// it again) or when a rebuilt segment disagrees with it (dropLayout: it
// is the wrong one, kept only by the VirtualBAMs that found it so, as
// VirtualBAM.dropped). A layout not persisted is pinned by its
// VirtualBAMs (VirtualBAM.pinned) and is in neither.
type layoutState struct {
	// Dependencies.
	m *Manager

	// Constant.
	//
	// INVARIANT: tag == layoutTag(&idx.Layout, gen)
	// INVARIANT: measured is the number of idx.Layout.Segments with NoDigest
	// INVARIANT: idx.Layout is contiguous (see layout.Layout) and of m's level
	key      string
	idx      *layout.File // as scanned or loaded; its Learned is not updated
	tag      string       // layoutTag of idx.Layout and gen
	gen      uint64       // layouts of the file version dropped before this one (Manager.gens)
	persist  bool         // idx is persisted under key in the cache directory
	measured int          // segments with NoDigest

	// Mutable, guarded by the states.FileStates' lock.
	//
	// INVARIANT: !persist => never an entry of the states.FileStates (elem == nil)
	res states.Resident
	// Mutable, guarded by mu: the digests learned (see learned).
	//
	// INVARIANT: learn.by == nil if measured == 0, else
	//            len(learn.by) == len(idx.Layout.Segments)
	// INVARIANT: learn.by[i].ok => idx.Layout.Segments[i].NoDigest
	// INVARIANT: learn.known <= measured
	// INVARIANT: !persist => !learn.saving && !learn.timed (nothing is saved)
	mu    sync.Mutex
	learn learnedDigests
}

// Resident implements states.Entry.
func (ls *layoutState) Resident() *states.Resident { return &ls.res }

// Drop implements states.Entry.
func (ls *layoutState) Drop() {
	m := ls.m
	m.mu.Lock()
	if m.layouts[ls.key] == ls {
		delete(m.layouts, ls.key)
	}
	m.mu.Unlock()
	ls.flush()
}

// keep returns the state of the file version key, made of idx unless it
// is held already; a persisted one goes into m.states.
func (m *Manager) keep(key string, idx *layout.File, persist bool) *layoutState {
	ls := &layoutState{m: m, key: key, idx: idx, persist: persist}
	ls.measured = ls.learn.init(idx)
	ls.res.Bytes = int64(256 + len(idx.BAI) + len(idx.Layout.Segments)*int(unsafe.Sizeof(layout.Segment{})+unsafe.Sizeof(learnedDigest{})))
	m.mu.Lock()
	ls.gen = m.gens[key]
	ls.tag = layoutTag(&idx.Layout, ls.gen)
	if !persist {
		m.mu.Unlock()
		return ls
	}
	if old := m.layouts[key]; old != nil && old.idx == idx {
		ls = old
	} else {
		m.layouts[key] = ls
	}
	m.mu.Unlock()
	m.states.Touch(ls)
	return ls
}

// layoutState returns the state of v's file version, read again (the
// persisted index, checked against what v was opened with, else a scan)
// if it was dropped. Once v is Stale without its layout (dropLayout found
// it no longer held), or the layout held is another (scanned again since
// v's was found wrong), every use fails with ErrMismatch and nothing is
// read again.
func (m *Manager) layoutState(ctx context.Context, v *VirtualBAM) (*layoutState, error) {
	m.mu.Lock()
	ls := m.layouts[v.key]
	m.mu.Unlock()
	if ls == nil && !v.stale.Load() {
		// Other readers may wait for this one: not tied to its context.
		r, err, _ := m.opens.Do("state:"+v.key, func() (any, error) {
			return m.reloadLayout(context.WithoutCancel(ctx), v)
		})
		if err != nil {
			if errors.Is(err, source.ErrChanged) {
				v.stale.Store(true)
			}
			return nil, err
		}
		ls = r.(*layoutState)
	}
	if ls == nil || ls.tag != v.tag {
		v.stale.Store(true)
		return nil, fmt.Errorf("%w: %s: its layout was found wrong and dropped; the file must be opened again", ErrMismatch, v.src.Name())
	}
	m.states.Touch(ls)
	return ls, nil
}

// reloadLayout reads the layout of v's file version again, from memory,
// the persisted index or a scan of the file (which must still be the
// version v was opened with), and keeps it.
func (m *Manager) reloadLayout(ctx context.Context, v *VirtualBAM) (*layoutState, error) {
	idx, _, err := m.layoutFor(ctx, v.src, v.key, v.depends, v.fid, nil, v.hdrSeg)
	if err != nil {
		return nil, m.explainSize(err)
	}
	if idx.Layout.Size != v.size || idx.HasBAI != v.hasBAI || idx.CSI != v.csi {
		return nil, fmt.Errorf("%w: %s: layout read again is of %d bytes, not %d", source.ErrChanged, v.src.Name(), idx.Layout.Size, v.size)
	}
	m.log.Debug("file state read again", "file", v.src.Name())
	return m.keep(v.key, idx, true), nil
}

// identify returns the identity of the file src reads and what its bytes
// depend on, or an error when its layout cannot be persisted.
func (m *Manager) identify(src source.Source) (source.Identity, string, error) {
	id, err := src.Identity()
	if m.opts.SharedCache {
		id.Dev = 0 // NFS clients number devices differently
	}
	return id, layout.Depends(m.opts.Level.Deflate(), src.Variant()), err
}

// layoutTag fingerprints the level and the segments' lengths of l, and
// gen, the number of layouts of the file version dropped (dropLayout), for
// the block cache's keys. The digests are left out: they check builds
// rather than shape the file, and a measured layout learns them later
// (or another writer's index has them from the start). A layout dropped
// and scanned again to the same lengths still gets another tag.
func layoutTag(l *layout.Layout, gen uint64) string {
	h := sha256.New()
	var b [2 * 8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(l.Level))
	binary.LittleEndian.PutUint64(b[8:], gen)
	h.Write(b[:])
	for i := -1; i < len(l.Segments); i++ {
		s := l.Header
		if i >= 0 {
			s = l.Segments[i]
		}
		binary.LittleEndian.PutUint64(b[:], uint64(s.CompLen))
		binary.LittleEndian.PutUint64(b[8:], uint64(s.RawLen))
		h.Write(b[:])
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// validFor reports why idx cannot serve src, or nil if it can.
func (m *Manager) validFor(idx *layout.File, src source.Source, depends string, id source.Identity, hdrSeg layout.Segment) error {
	switch {
	case idx.Depends != depends:
		return fmt.Errorf("%w: index built for %q, want %q", ErrInvalid, idx.Depends, depends)
	case idx.ID != id:
		return fmt.Errorf("%w: index belongs to another file version", ErrInvalid)
	case idx.Layout.Level != m.opts.Level.Deflate():
		return fmt.Errorf("%w: index level %d, want %d", ErrInvalid, idx.Layout.Level, m.opts.Level.Deflate())
	case idx.Layout.Header != hdrSeg:
		return fmt.Errorf("%w: index header segment %+v, header now gives %+v", ErrInvalid, idx.Layout.Header, hdrSeg)
	case len(idx.Layout.Segments) != src.NumContainers():
		return fmt.Errorf("%w: index has %d segments, file has %d containers", ErrInvalid, len(idx.Layout.Segments), src.NumContainers())
	}
	return nil
}

// layoutFor finds a trustworthy layout for src: in memory, on disk, or by
// scanning (then persisting it; scanned is then true). depends is "" for a source.Source whose layout
// is not persisted. hdrRaw, the BAM header, is read from src when the
// scan needs it and it is nil. The caller keeps the layout (Manager.keep).
func (m *Manager) layoutFor(ctx context.Context, src source.Source, key, depends string, id source.Identity, hdrRaw []byte, hdrSeg layout.Segment) (*layout.File, bool, error) {
	persist := depends != ""
	if persist {
		if idx := m.loadLayout(src, key, depends, id, hdrSeg); idx != nil {
			return idx, false, nil
		}
	}
	if hdrRaw == nil {
		var err error
		if hdrRaw, err = headerOf(src); err != nil {
			return nil, false, err
		}
	}
	idx, err := m.scan(ctx, src, hdrRaw, hdrSeg)
	if err != nil || !persist {
		return idx, true, err
	}
	// The file read must still be the version identified before the scan:
	// else the layout could be of neither, and is not kept.
	after, _, err := m.identify(src)
	if err != nil {
		return nil, false, fmt.Errorf("%s: identity after the scan: %w", src.Name(), err)
	}
	if after != id {
		return nil, false, fmt.Errorf("%w: %s: identity before the scan (size %d, mtime %d, ctime %d, inode %d), after (size %d, mtime %d, ctime %d, inode %d)",
			source.ErrChanged, src.Name(), id.Size, id.MTime, id.CTime, id.Ino, after.Size, after.MTime, after.CTime, after.Ino)
	}
	idx.Depends = depends
	idx.ID = id
	if err := m.dir.Save(key, idx); err != nil {
		m.warnOnce.Do(func() {
			m.log.Warn("cannot persist layout indexes; keeping them in memory while they fit, scanning files again after", "dir", m.opts.CacheDir, "err", err)
		})
	}
	return idx, true, nil
}

// loadLayout returns the layout of src kept in memory or persisted in the
// cache directory, or nil when there is none that is valid and trusted.
// An index refused is logged, with why.
func (m *Manager) loadLayout(src source.Source, key, depends string, id source.Identity, hdrSeg layout.Segment) *layout.File {
	m.mu.Lock()
	ls := m.layouts[key]
	m.mu.Unlock()
	if ls != nil && m.validFor(ls.idx, src, depends, id, hdrSeg) == nil {
		return ls.idx
	}
	idx, err := m.dir.Load(key)
	if err == nil {
		err = m.validFor(idx, src, depends, id, hdrSeg)
	} else if errors.Is(err, fs.ErrNotExist) {
		var legacy string
		if legacy, idx, err = m.loadLegacy(src, id, hdrSeg); err == nil {
			// Kept, and written again, in the current format.
			idx.Depends = depends
			werr := m.dir.Save(key, idx)
			m.log.Debug("layout index of an earlier format loaded", "file", src.Name(), "index", m.dir.PathOf(legacy), "rewritten", werr == nil)
			return idx
		}
	}
	switch {
	case err == nil:
		m.log.Debug("layout index loaded", "file", src.Name(), "index", m.dir.PathOf(key))
		return idx
	case errors.Is(err, fs.ErrNotExist):
	case errors.Is(err, layout.ErrUntrustedDir):
		// Said once: every file would say it, and nothing is written there.
		m.warnOnce.Do(func() {
			m.log.Warn("layout indexes refused; keeping layouts in memory", "dir", m.opts.CacheDir, "why", err)
		})
	case errors.Is(err, layout.ErrUntrusted):
		m.log.Warn("layout index refused; rebuilding the layout", "file", src.Name(), "index", m.dir.PathOf(key), "why", err)
	default:
		m.log.Info("layout index unusable; rebuilding", "file", src.Name(), "index", m.dir.PathOf(key), "err", err)
	}
	return nil
}

// loadLegacy loads the index of src in an older format still read
// (layout.LegacyFormats, newest first), made by an earlier cramfs, and
// returns its key. With none there, the error is the newest format's.
func (m *Manager) loadLegacy(src source.Source, id source.Identity, hdrSeg layout.Segment) (string, *layout.File, error) {
	var first error
	var firstKey string
	for _, format := range layout.LegacyFormats {
		depends := layout.DependsFormat(format, m.opts.Level.Deflate(), src.Variant())
		key := layout.Key(id, depends)
		idx, err := m.dir.Load(key)
		if err == nil {
			err = m.validFor(idx, src, depends, id, hdrSeg)
		}
		if err == nil || !errors.Is(err, fs.ErrNotExist) {
			return key, idx, err
		}
		if first == nil {
			first, firstKey = err, key
		}
	}
	return firstKey, nil, first
}

// dropLayout forgets the layout v serves, in memory and on disk, once a
// segment rebuilt for v disagreed with it: the file changed in a way its
// identity did not show, or the layout was wrong. v's reads keep failing
// (see VirtualBAM.Stale), but the next Open of the file scans it again.
func (m *Manager) dropLayout(v *VirtualBAM) {
	if !v.stale.CompareAndSwap(false, true) || v.key == "" {
		return
	}
	m.mu.Lock()
	ls := m.layouts[v.key]
	if ls == nil || ls.tag == v.tag {
		// v's layout, or none held (v's left memory, its digests may be
		// being saved): the next is another generation, and no save of a
		// layout kept before restores the file (writeLearnedIfCurrent).
		m.gens[v.key]++
	}
	// A newer layout held (the file scanned again since v's was dropped)
	// owns the index file now: it is not v's to remove.
	newer := ls != nil && ls.tag != v.tag
	if ls != nil && ls.tag == v.tag {
		v.dropped.Store(ls) // before it leaves layouts, for v's readers
		delete(m.layouts, v.key)
	} else {
		ls = nil // dropped from the states, or scanned since: not v's
	}
	m.mu.Unlock()
	if ls != nil {
		m.states.Remove(ls)
	}
	if newer {
		m.log.Warn("a rebuilt segment disagrees with a layout dropped before; the file was scanned again since", "file", v.src.Name())
		return
	}
	m.saves.fileMu.Lock()
	defer m.saves.fileMu.Unlock()
	if err := m.dir.Remove(v.key); err != nil {
		m.log.Warn("cannot remove a layout index found wrong", "file", v.src.Name(), "index", m.dir.PathOf(v.key), "err", err)
	}
	m.log.Warn("layout dropped: a rebuilt segment disagrees with it; the next open scans the file again", "file", v.src.Name())
}
