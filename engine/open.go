package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"github.com/cramfs/cramfs/encode/bgzf"
)

// Open returns the virtual BAM of src. The first Open of a file scans every
// container once (or loads the persisted layout index); concurrent Opens of
// the same file share one scan.
func (m *Manager) Open(ctx context.Context, src Source) (*VirtualBAM, error) {
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

	fsrc, _ := src.(fileSource)
	id, depends, idErr := m.identify(fsrc)
	persist := idErr == nil
	var key string
	if persist {
		key = indexKey(id, depends)
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

	maxSeg := idx.Layout.maxSegment()
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
		lastEnd:   -1,
		ahead:     make(map[int]bool),
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
	idx     *indexFile
	scanned bool
}

// headerReader is a Source whose header can fail to be read (a CRAM read
// again after its state was dropped).
type headerReader interface {
	ReadHeader() ([]byte, error)
}

// headerOf returns the uncompressed BAM header of src.
func headerOf(src Source) ([]byte, error) {
	var h []byte
	if hr, ok := src.(headerReader); ok {
		var err error
		if h, err = hr.ReadHeader(); err != nil {
			return nil, err
		}
	} else {
		h = src.Header()
	}
	if len(h) == 0 {
		return nil, fmt.Errorf("%w: %s: empty BAM header", ErrInvalid, src.Name())
	}
	return h, nil
}

// headerSegment is the segment number of the header's blocks in the
// cache.
const headerSegment = -1

// compressHeader appends the BGZF blocks of the BAM header hdrRaw of src,
// made by c, to dst, and returns them with their segment.
func compressHeader(c *bgzf.Compressor, src Source, dst, hdrRaw []byte) ([]byte, Segment, error) {
	start := len(dst)
	dst, err := compressSegment(c, dst, hdrRaw)
	if err != nil {
		return dst[:start], Segment{}, fmt.Errorf("%s: compressing header: %w", src.Name(), err)
	}
	digest, err := segmentDigest(dst[start:])
	if err != nil {
		return dst[:start], Segment{}, fmt.Errorf("%s: compressing header: %w", src.Name(), err)
	}
	return dst, Segment{CompLen: int64(len(dst) - start), RawLen: int64(len(hdrRaw)), Digest: digest}, nil
}

// layoutState is the layout and index of one file version: in the
// Manager's FileStates when the layout can be read again from its index
// key, else pinned by its VirtualBAMs.
//
// A layout is made by Manager.keep, held in Manager.layouts and the
// FileStates while it is persisted, and leaves them when the FileStates
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
	// INVARIANT: idx.Layout is contiguous (see Layout) and of m's level
	key      string
	idx      *indexFile // as scanned or loaded; its Learned is not updated
	tag      string     // layoutTag of idx.Layout and gen
	gen      uint64     // layouts of the file version dropped before this one (Manager.gens)
	persist  bool       // idx is persisted under key in the cache directory
	measured int        // segments with NoDigest

	// Mutable, guarded by the FileStates' lock.
	//
	// INVARIANT: !persist => never an entry of the FileStates (elem == nil)
	resident
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

func (ls *layoutState) res() *resident { return &ls.resident }

// drop implements stateEntry.
func (ls *layoutState) drop() {
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
func (m *Manager) keep(key string, idx *indexFile, persist bool) *layoutState {
	ls := &layoutState{m: m, key: key, idx: idx, persist: persist}
	ls.measured = ls.learn.init(idx)
	ls.resident.bytes = int64(256 + len(idx.BAI) + len(idx.Layout.Segments)*int(unsafe.Sizeof(Segment{})+unsafe.Sizeof(learnedDigest{})))
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
	m.states.touch(ls)
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
			if errors.Is(err, ErrChanged) {
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
	m.states.touch(ls)
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
		return nil, fmt.Errorf("%w: %s: layout read again is of %d bytes, not %d", ErrChanged, v.src.Name(), idx.Layout.Size, v.size)
	}
	m.log.Debug("file state read again", "file", v.src.Name())
	return m.keep(v.key, idx, true), nil
}

// errNoFile is identify's answer for a Source that reads no file.
var errNoFile = errors.New("source reads no file")

// identify returns the identity of the file src reads and what its bytes
// depend on, or an error when its layout cannot be persisted.
func (m *Manager) identify(src fileSource) (identity, string, error) {
	if src == nil {
		return identity{}, "", errNoFile
	}
	id, err := src.fileIdentity(!m.opts.SharedCache)
	return id, dependsOn(m.opts.Level.Deflate(), src.variant()), err
}

// layoutTag fingerprints the level and the segments' lengths of l, and
// gen, the number of layouts of the file version dropped (dropLayout), for
// the block cache's keys. The digests are left out: they check builds
// rather than shape the file, and a measured layout learns them later
// (or another writer's index has them from the start). A layout dropped
// and scanned again to the same lengths still gets another tag.
func layoutTag(l *Layout, gen uint64) string {
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
func (m *Manager) validFor(idx *indexFile, src Source, depends string, id identity, hdrSeg Segment) error {
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

// indexName is the file name of the index with key key in the cache
// directory.
func indexName(key string) string { return key + ".idx" }

// layoutFor finds a trustworthy layout for src: in memory, on disk, or by
// scanning (then persisting it; scanned is then true). depends is "" for a Source whose layout
// is not persisted. hdrRaw, the BAM header, is read from src when the
// scan needs it and it is nil. The caller keeps the layout (Manager.keep).
func (m *Manager) layoutFor(ctx context.Context, src Source, key, depends string, id identity, hdrRaw []byte, hdrSeg Segment) (*indexFile, bool, error) {
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
	after, _, err := m.identify(src.(fileSource))
	if err != nil {
		return nil, false, fmt.Errorf("%s: identity after the scan: %w", src.Name(), err)
	}
	if after != id {
		return nil, false, fmt.Errorf("%w: %s: identity before the scan (size %d, mtime %d, ctime %d, inode %d), after (size %d, mtime %d, ctime %d, inode %d)",
			ErrChanged, src.Name(), id.Size, id.MTime, id.CTime, id.Ino, after.Size, after.MTime, after.CTime, after.Ino)
	}
	idx.Depends = depends
	idx.ID = id
	if err := writeIndex(m.opts.CacheDir, indexName(key), idx, m.opts.SharedCache); err != nil {
		m.warnOnce.Do(func() {
			m.log.Warn("cannot persist layout indexes; keeping them in memory while they fit, scanning files again after", "dir", m.opts.CacheDir, "err", err)
		})
	}
	return idx, true, nil
}

// loadLayout returns the layout of src kept in memory or persisted in the
// cache directory, or nil when there is none that is valid and trusted.
// An index refused is logged, with why.
func (m *Manager) loadLayout(src Source, key, depends string, id identity, hdrSeg Segment) *indexFile {
	m.mu.Lock()
	ls := m.layouts[key]
	m.mu.Unlock()
	if ls != nil && m.validFor(ls.idx, src, depends, id, hdrSeg) == nil {
		return ls.idx
	}
	idx, err := loadIndex(m.opts.CacheDir, indexName(key), m.opts.SharedCache)
	if err == nil {
		err = m.validFor(idx, src, depends, id, hdrSeg)
	} else if errors.Is(err, fs.ErrNotExist) {
		var legacy string
		if legacy, idx, err = m.loadLegacy(src, id, hdrSeg); err == nil {
			// Kept, and written again, in the current format.
			idx.Depends = depends
			werr := writeIndex(m.opts.CacheDir, indexName(key), idx, m.opts.SharedCache)
			m.log.Debug("layout index of an earlier format loaded", "file", src.Name(), "index", indexName(legacy), "rewritten", werr == nil)
			return idx
		}
	}
	switch {
	case err == nil:
		m.log.Debug("layout index loaded", "file", src.Name(), "index", indexName(key))
		return idx
	case errors.Is(err, fs.ErrNotExist):
	case errors.Is(err, errUntrustedDir):
		// Said once: every file would say it, and nothing is written there.
		m.warnOnce.Do(func() {
			m.log.Warn("layout indexes refused; keeping layouts in memory", "dir", m.opts.CacheDir, "why", err)
		})
	case errors.Is(err, errUntrusted):
		m.log.Warn("layout index refused; rebuilding the layout", "file", src.Name(), "index", filepath.Join(m.opts.CacheDir, indexName(key)), "why", err)
	default:
		m.log.Info("layout index unusable; rebuilding", "file", src.Name(), "index", filepath.Join(m.opts.CacheDir, indexName(key)), "err", err)
	}
	return nil
}

// loadLegacy loads the index of src in an older format still read
// (legacyIndexFormats, newest first), made by an earlier cramfs, and
// returns its key. With none there, the error is the newest format's.
func (m *Manager) loadLegacy(src Source, id identity, hdrSeg Segment) (string, *indexFile, error) {
	fsrc, ok := src.(fileSource)
	if !ok {
		return "", nil, errNoFile
	}
	var first error
	var firstKey string
	for _, format := range legacyIndexFormats {
		depends := dependsOnFormat(format, m.opts.Level.Deflate(), fsrc.variant())
		key := indexKey(id, depends)
		idx, err := loadIndex(m.opts.CacheDir, indexName(key), m.opts.SharedCache)
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
		m.states.remove(ls)
	}
	if newer {
		m.log.Warn("a rebuilt segment disagrees with a layout dropped before; the file was scanned again since", "file", v.src.Name())
		return
	}
	m.saves.fileMu.Lock()
	defer m.saves.fileMu.Unlock()
	path := filepath.Join(m.opts.CacheDir, indexName(v.key))
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		m.log.Warn("cannot remove a layout index found wrong", "file", v.src.Name(), "index", path, "err", err)
	}
	m.log.Warn("layout dropped: a rebuilt segment disagrees with it; the next open scans the file again", "file", v.src.Name())
}
