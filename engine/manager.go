package engine

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/cramfs/cramfs/cache"
	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/encode/bai"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/encode/csi"
)

// indexBuilder is a BAI or CSI builder.
type indexBuilder interface {
	Add(refID int32, beg, end int64, unmapped bool, vStart, vEnd uint64) error
	Finish(finalVOffset uint64) ([]byte, error)
}

// baiMaxRefLen is the longest reference a BAI can index (SAMv1 §5.2).
const baiMaxRefLen = 1 << 29

// Manager serves virtual BAMs for any number of CRAM files, sharing one
// block cache and one bounded pool of workers between them. It is safe for
// concurrent use.
type Manager struct {
	opts  Options
	log   *slog.Logger
	cache *cache.Cache[cache.Key]
	sem   chan struct{} // one token per worker

	// Free lists, one entry per worker at most; unlike a sync.Pool they
	// survive garbage collections, which emptied a pool every few
	// containers and made each build regrow its buffer.
	comps chan *bgzf.Compressor // at opts.Level
	raws  chan []byte           // scratch for decoded containers

	// pool recycles the storage of segments that left the cache and that
	// no reader holds any more (a sixteenth of the cache at most: in steady
	// state each build takes what its Add evicted).
	pool *cache.Pool

	// states holds the per-file state of open files (see FileStates),
	// its bytes counted against the cache.
	states *FileStates

	opens    singleflight.Group // one layout scan per file
	mu       sync.Mutex
	layouts  map[string]*layoutState // by index key, those held in states; guarded by mu
	building map[cache.Key]*building // segment builds in flight, guarded by mu
	warnOnce sync.Once
	anonSeq  atomic.Uint64

	ctx    context.Context // cancelled by Close; bounds readahead
	cancel context.CancelFunc

	// reorder is reorderWindow; tests shrink it to fit small fixtures.
	reorder int64

	// decoders, set by CountDecoders, count against the cache; maxSeg is
	// the largest segment of the files opened.
	decoders atomic.Pointer[DecoderPool]
	maxSeg   atomic.Int64
}

// NewManager returns a Manager with opts (zero fields take their defaults)
// logging to log (nil discards).
func NewManager(opts Options, log *slog.Logger) *Manager {
	opts = opts.withDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := cache.New[cache.Key](opts.CacheSize)
	if err != nil { // unreachable: withDefaults makes the size non-negative
		c, _ = cache.New[cache.Key](0)
	}
	if n, err := removeStaleTemps(opts.CacheDir, opts.SharedCache, time.Now()); n > 0 {
		log.Info("removed temporary layout indexes of killed writers", "dir", opts.CacheDir, "count", n)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Debug("cache directory not cleaned", "dir", opts.CacheDir, "err", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	states := NewFileStates(opts.stateBytes(), opts.MaxOpenFiles)
	states.count(c)
	return &Manager{
		states:   states,
		opts:     opts,
		log:      log,
		cache:    c,
		sem:      make(chan struct{}, opts.Threads),
		comps:    make(chan *bgzf.Compressor, opts.Threads),
		raws:     make(chan []byte, opts.Threads),
		layouts:  make(map[string]*layoutState),
		pool:     cache.NewPool(opts.CacheSize / 16),
		building: make(map[cache.Key]*building),
		ctx:      ctx,
		cancel:   cancel,
		reorder:  reorderWindow,
	}
}

// Close stops readahead and drops the file states, closing the descriptors
// not in use. Open VirtualBAMs still serve reads.
func (m *Manager) Close() {
	m.cancel()
	m.states.dropAll()
}

// CountDecoders makes the memory of p's decoders count against the cache
// budget, so that the budget bounds the decoded data of the containers
// being built as well as the BGZF data kept: the cache holds less while
// the decoders are large. They take at most half of the budget, and never
// so much that three of the largest segments opened so far no longer fit
// (the one read and two built ahead): a cache taken over by decoders
// would evict segments before they are read, and rebuild the one being
// read at every read. Call it before opening files.
func (m *Manager) CountDecoders(p *DecoderPool) {
	m.decoders.Store(p)
	p.count(m.cache, m.decoderShare())
}

// decoderShare is how much of the cache budget counted decoders may take.
func (m *Manager) decoderShare() int64 {
	c := m.opts.CacheSize
	return max(0, min(c/2, c-3*m.maxSeg.Load()))
}

// noteSegmentSize records the largest segment of a file being opened,
// shrinking the decoders' share of the cache to keep room for three.
func (m *Manager) noteSegmentSize(n int64) {
	for {
		old := m.maxSeg.Load()
		if n <= old {
			return
		}
		if m.maxSeg.CompareAndSwap(old, n) {
			break
		}
	}
	if p := m.decoders.Load(); p != nil {
		p.count(m.cache, m.decoderShare())
	}
}

// segmentsThatFit returns how many segments of size seg the cache can
// hold beside the decoders and the file states counted in it (a segment's storage is a
// sixteenth larger than its bytes, see cache.Pool.Get).
func (m *Manager) segmentsThatFit(seg int64) int {
	if seg <= 0 {
		return math.MaxInt
	}
	stateBytes, _ := m.states.Stats()
	free := m.opts.CacheSize - stateBytes
	if p := m.decoders.Load(); p != nil {
		_, counted := p.Footprint()
		free -= counted
	}
	return int(max(free, 0) / (seg + seg/16))
}

// States returns the FileStates of the Manager: CRAMs opened with it as
// CRAMOptions.States share the bounds and the budget of the layouts.
func (m *Manager) States() *FileStates { return m.states }

// Options returns the options in effect, defaults resolved.
func (m *Manager) Options() Options { return m.opts }

// CacheStats returns the counters of the shared block cache.
func (m *Manager) CacheStats() cache.Stats { return m.cache.Stats() }

func (m *Manager) acquire(ctx context.Context) error {
	select {
	case m.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (m *Manager) release() { <-m.sem }

func (m *Manager) getComp() (*bgzf.Compressor, error) {
	select {
	case c := <-m.comps:
		return c, nil
	default:
		return bgzf.NewCompressor(m.opts.Level.Deflate())
	}
}

func (m *Manager) putComp(c *bgzf.Compressor) {
	select {
	case m.comps <- c:
	default:
	}
}

func (m *Manager) getRaw() []byte {
	select {
	case b := <-m.raws:
		return b[:0]
	default:
		return nil
	}
}

func (m *Manager) putRaw(b []byte) {
	select {
	case m.raws <- b[:0]:
	default:
	}
}

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
		return m.layoutFor(ctx, src, key, depends, id, hdrRaw, hdrSeg)
	})
	if err != nil {
		return nil, m.explainSize(err)
	}
	idx := r.(*indexFile)
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
	}
	if !persist {
		v.pinned = ls
	}
	return v, nil
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
type layoutState struct {
	m   *Manager
	key string
	idx *indexFile
	tag string // layoutTag of idx.Layout
	resident
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
}

// keep returns the state of the file version key, made of idx unless it
// is held already; a persisted one goes into m.states.
func (m *Manager) keep(key string, idx *indexFile, persist bool) *layoutState {
	ls := &layoutState{m: m, key: key, idx: idx, tag: layoutTag(&idx.Layout)}
	ls.resident.bytes = int64(256 + len(idx.BAI) + len(idx.Layout.Segments)*int(unsafe.Sizeof(Segment{})))
	if !persist {
		return ls
	}
	m.mu.Lock()
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
	idx, err := m.layoutFor(ctx, v.src, v.key, v.depends, v.fid, nil, v.hdrSeg)
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

// layoutTag fingerprints the level and segments of l, for the block
// cache's keys.
func layoutTag(l *Layout) string {
	h := sha256.New()
	var b [3 * 8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(l.Level))
	h.Write(b[:8])
	for i := -1; i < len(l.Segments); i++ {
		s := l.Header
		if i >= 0 {
			s = l.Segments[i]
		}
		binary.LittleEndian.PutUint64(b[:], uint64(s.CompLen))
		binary.LittleEndian.PutUint64(b[8:], uint64(s.RawLen))
		binary.LittleEndian.PutUint64(b[16:], uint64(s.Digest))
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
// scanning (then persisting it). depends is "" for a Source whose layout
// is not persisted. hdrRaw, the BAM header, is read from src when the
// scan needs it and it is nil. The caller keeps the layout (Manager.keep).
func (m *Manager) layoutFor(ctx context.Context, src Source, key, depends string, id identity, hdrRaw []byte, hdrSeg Segment) (*indexFile, error) {
	persist := depends != ""
	if persist {
		if idx := m.loadLayout(src, key, depends, id, hdrSeg); idx != nil {
			return idx, nil
		}
	}
	if hdrRaw == nil {
		var err error
		if hdrRaw, err = headerOf(src); err != nil {
			return nil, err
		}
	}
	idx, err := m.scan(ctx, src, hdrRaw, hdrSeg)
	if err != nil || !persist {
		return idx, err
	}
	// The file read must still be the version identified before the scan:
	// else the layout could be of neither, and is not kept.
	after, _, err := m.identify(src.(fileSource))
	if err != nil {
		return nil, fmt.Errorf("%s: identity after the scan: %w", src.Name(), err)
	}
	if after != id {
		return nil, fmt.Errorf("%w: %s: identity before the scan (size %d, mtime %d, ctime %d, inode %d), after (size %d, mtime %d, ctime %d, inode %d)",
			ErrChanged, src.Name(), id.Size, id.MTime, id.CTime, id.Ino, after.Size, after.MTime, after.CTime, after.Ino)
	}
	idx.Depends = depends
	idx.ID = id
	if err := writeIndex(m.opts.CacheDir, indexName(key), idx, m.opts.SharedCache); err != nil {
		m.warnOnce.Do(func() {
			m.log.Warn("cannot persist layout indexes; keeping them in memory while they fit, scanning files again after", "dir", m.opts.CacheDir, "err", err)
		})
	}
	return idx, nil
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
	path := filepath.Join(m.opts.CacheDir, indexName(v.key))
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		m.log.Warn("cannot remove a layout index found wrong", "file", v.src.Name(), "index", path, "err", err)
	}
	m.log.Warn("layout dropped: a rebuilt segment disagrees with it; the next open scans the file again", "file", v.src.Name())
}

// scan decodes and compresses every container of src once, in parallel,
// and derives the layout and the .bai (SAMv1 §5.2) from the results, which
// are consumed in container order within a bounded window.
func (m *Manager) scan(ctx context.Context, src Source, hdrRaw []byte, hdrSeg Segment) (*indexFile, error) {
	n := src.NumContainers()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	window := 2 * m.opts.Threads
	slots := make(chan struct{}, window)
	var hint atomic.Int64 // largest container's blocks so far
	res := make([]chan *builtSegment, n)
	for i := range res {
		res[i] = make(chan *builtSegment, 1)
	}
	g.Go(func() error {
		for i := 0; i < n; i++ {
			select {
			case slots <- struct{}{}:
			case <-gctx.Done():
				return nil
			}
			if err := m.acquire(gctx); err != nil {
				return nil
			}
			g.Go(func() error {
				defer m.release()
				c, err := m.getComp()
				if err != nil {
					return fmt.Errorf("%s: BGZF level %d: %w", src.Name(), m.opts.Level.Deflate(), err)
				}
				defer m.putComp(c)
				bs, raw, err := scanContainer(gctx, src, c, m.pool, hint.Load(), i, m.getRaw())
				m.putRaw(raw)
				if err != nil {
					return err
				}
				if n := bgzf.StoredSize(bs.seg.RawLen); n > hint.Load() {
					hint.Store(n) // racy max: only a size hint
				}
				res[i] <- bs
				return nil
			})
		}
		return nil
	})

	var bld indexBuilder
	csiIndex := false
	if nRef, maxLen, err := parseRefs(hdrRaw); err != nil {
		m.log.Warn("no index: unreadable header", "file", src.Name(), "err", err)
	} else if maxLen > baiMaxRefLen {
		// BAI addresses 2^29 bases; longer references need a CSI, as
		// samtools index -c builds.
		bld, csiIndex = csi.NewBuilder(nRef, maxLen), true
	} else {
		bld = bai.NewBuilder(nRef)
	}
	noIndex := func(err error) {
		m.log.Warn("no index for this file", "file", src.Name(), "err", err)
		bld = nil
	}
	segs := make([]Segment, 0, n)
	off := hdrSeg.CompLen
	var consumeErr error
consume:
	for i := 0; i < n; i++ {
		var bs *builtSegment
		select {
		case bs = <-res[i]:
		case <-gctx.Done():
			break consume
		}
		<-slots
		s := bs.seg
		s.Offset = off
		off += s.CompLen
		segs = append(segs, s)
		if bld == nil {
			continue
		}
		vm := voffsetMapper{base: s.Offset, end: s.End(), blocks: bs.blocks}
		for _, r := range bs.recs {
			vs, err := vm.at(r.uStart)
			if err != nil {
				consumeErr = fmt.Errorf("%s: container %d: %w", src.Name(), i, err)
				cancel()
				break consume
			}
			ve, err := vm.at(r.uEnd)
			if err != nil {
				consumeErr = fmt.Errorf("%s: container %d: %w", src.Name(), i, err)
				cancel()
				break consume
			}
			if err := bld.Add(r.refID, r.beg, r.end, r.unmapped, vs, ve); err != nil {
				noIndex(fmt.Errorf("container %d: %w", i, err))
				break
			}
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if consumeErr != nil {
		return nil, consumeErr
	}
	if len(segs) != n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s: scan stopped after %d of %d containers", src.Name(), len(segs), n)
	}
	idx := &indexFile{
		Layout: Layout{
			Level:    m.opts.Level.Deflate(),
			Header:   hdrSeg,
			Segments: segs,
			Size:     off + int64(len(bgzf.EOF)),
		},
	}
	if bld != nil {
		b, err := bld.Finish(uint64(off) << 16)
		if err != nil {
			noIndex(err)
		} else {
			idx.HasBAI, idx.BAI, idx.CSI = true, b, csiIndex
		}
	}
	return idx, nil
}

// explainSize adds to a container refused for its size (decode.ErrTooLarge)
// the cache size that would let it be decoded.
func (m *Manager) explainSize(err error) error {
	var se *decode.SizeError
	if !errors.As(err, &se) {
		return err
	}
	mib := func(n int64) int64 { return (n + 1<<20 - 1) >> 20 }
	return fmt.Errorf("%w; with %d threads (-@) and a %d MiB cache (--cache-size) a container may take %d MiB to decode: --cache-size %dM would allow this one",
		err, m.opts.Threads, mib(m.opts.CacheSize), mib(m.opts.ContainerMemory()), mib(m.opts.cacheSizeFor(se.Need)))
}

// buildHeader builds the header's blocks of src again and checks them
// against want, the header segment src was opened with.
func (m *Manager) buildHeader(src Source, want Segment) (*cache.Buf, error) {
	raw, err := headerOf(src)
	if err != nil {
		return nil, err
	}
	c, err := m.getComp()
	if err != nil {
		return nil, fmt.Errorf("%s: BGZF level %d: %w", src.Name(), m.opts.Level.Deflate(), err)
	}
	defer m.putComp(c)
	buf := m.pool.Get(int(want.CompLen))
	var got Segment
	buf.B, got, err = compressHeader(c, src, buf.B[:0], raw)
	if err == nil && got != want {
		err = fmt.Errorf("%w: %s: header built again gives %+v, not %+v", ErrChanged, src.Name(), got, want)
	}
	if err != nil {
		buf.Release()
		return nil, err
	}
	return buf, nil
}

// building is one segment build in flight, shared by every caller that
// asks for the segment meanwhile.
type building struct {
	done    chan struct{} // closed when buf or err is set
	waiters int           // callers waiting besides the leader, guarded by Manager.mu
	buf     *cache.Buf    // holds one reference per waiter
	err     error
}

// build appends container i of src to buf.B as BGZF blocks made by c and
// returns the BAM bytes they hold. With rebuild, a Rebuilder source may
// leave out the checks the caller's digest comparison covers.
func (m *Manager) build(ctx context.Context, src Source, i int, c *bgzf.Compressor, buf *cache.Buf, rebuild bool) (int64, error) {
	if rb, ok := src.(Rebuilder); ok && rebuild {
		var rawLen int64
		var err error
		buf.B, rawLen, err = rb.RebuildContainerBlocks(ctx, i, c, buf.B)
		return rawLen, err
	}
	if ba, ok := src.(BlockAppender); ok {
		// Records go into blocks as they are encoded: no BAM buffer.
		var rawLen int64
		var err error
		buf.B, rawLen, err = ba.AppendContainerBlocks(ctx, i, c, buf.B, nil)
		return rawLen, err
	}
	raw, err := src.AppendContainer(ctx, i, m.getRaw())
	defer m.putRaw(raw)
	if err != nil {
		return 0, err
	}
	if buf.B, err = compressSegment(c, buf.B, raw); err != nil {
		return 0, fmt.Errorf("%s: container %d: compressing: %w", src.Name(), i, err)
	}
	return int64(len(raw)), nil
}

// buildSegment rebuilds segment i of src and checks it against want. The
// Buf it returns holds one reference, the caller's.
func (m *Manager) buildSegment(ctx context.Context, src Source, i int, want Segment) (*cache.Buf, error) {
	if i == headerSegment {
		return m.buildHeader(src, want)
	}
	if err := m.acquire(ctx); err != nil {
		return nil, err
	}
	defer m.release()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The segment counts against the cache's bound while it is built, so
	// that the cache budget covers the builds in flight too.
	m.cache.Reserve(want.CompLen)
	defer m.cache.Unreserve(want.CompLen)
	c, err := m.getComp()
	if err != nil {
		return nil, fmt.Errorf("%s: BGZF level %d: %w", src.Name(), m.opts.Level.Deflate(), err)
	}
	defer m.putComp(c)
	buf := m.pool.Get(int(min(want.CompLen, 64<<20)))
	rawLen, err := m.build(ctx, src, i, c, buf, true)
	if err != nil {
		buf.Release()
		return nil, m.explainSize(err) // Source errors name the file and container
	}
	comp := buf.B
	crc, err := segmentDigest(comp)
	if err == nil && (int64(len(comp)) != want.CompLen || rawLen != want.RawLen || crc != want.Digest) {
		err = fmt.Errorf("built %d bytes (%d raw, digest %08x), layout has %d (%d raw, %08x)", len(comp), rawLen, crc, want.CompLen, want.RawLen, want.Digest)
		// The rebuild skipped checks the digest stands in for; building
		// with them names the cause when one of them fails (a different
		// reference than the layout was made with fails its MD5 check).
		if _, ok := src.(Rebuilder); ok {
			buf.B = buf.B[:0]
			if _, cerr := m.build(ctx, src, i, c, buf, false); cerr != nil {
				buf.Release()
				m.log.Error("rebuilt segment differs from layout; refusing to serve it", "file", src.Name(), "container", i, "err", cerr)
				return nil, fmt.Errorf("%w: %w", ErrMismatch, cerr)
			}
		}
	}
	if err != nil {
		buf.Release()
		err := fmt.Errorf("%w: %s: container %d at offset %d: %w", ErrMismatch, src.Name(), i, src.ContainerOffset(i), err)
		m.log.Error("rebuilt segment differs from layout; refusing to serve it", "file", src.Name(), "container", i, "err", err)
		return nil, err
	}
	return buf, nil
}
