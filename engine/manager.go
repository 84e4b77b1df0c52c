package engine

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/cramfs/cramfs/cache"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/layout"
	"github.com/cramfs/cramfs/engine/states"
)

// LOCK ORDERING
//
// The engine's locks are ordered as listed; a goroutine holding one takes
// only locks further down the list. Two locks of one line, or two of one
// kind (two layouts' locks), are never held together:
//
//  1. saveQueue.fileMu (held while an index file is written with learned
//     digests, or removed as wrong: file I/O)
//  2. Manager.mu
//  3. states.FileStates.mu
//  4. CRAM.mu (held while the file is opened again and its header and
//     container table read: file I/O), DecoderPool.mu, saveQueue.mu
//  5. layoutState.mu, VirtualBAM.mu, workerPool.mu
//  6. cache.Cache.mu, then cache.Pool.mu (package cache)
//
// The code nests locks at these places only; every other lock is taken
// alone and released before the next:
//
//   - fileMu, then Manager.mu: layoutState.writeLearnedIfCurrent reads gens.
//   - fileMu, then layoutState.mu: layoutState.writeLearned adopts the
//     digests of the index file on disk.
//   - Manager.mu, then VirtualBAM.mu: buildOrWait calls skip (readahead's
//     VirtualBAM.behind).
//   - Manager.mu, then cache.Cache.mu: buildOrWait looks the segment up
//     again before it registers a build.
//   - states.FileStates.mu, then cache.Cache.mu: states.FileStates.Count.
//   - DecoderPool.mu, then cache.Cache.mu: DecoderPool.settle.
//
// The rest of the order is that of the invariant check (checkInvariants,
// invariants_test.go), which holds Manager.mu, states.FileStates.mu and the
// locks of the entries together to see one consistent state.
//
// Callbacks run without their caller's lock: states.FileStates calls
// stateEntry.drop (which takes Manager.mu or CRAM.mu) after releasing
// states.FileStates.mu, and DecoderPool its OnChange function after DecoderPool.mu.
//
// Waits: no lock is held while waiting for a worker (workerPool.acquire),
// for a segment build led by another caller (building.done) or for a
// layout scan or reload (Manager.opens). A worker is held only while one
// container is decoded and compressed (buildSegment, scanRun.build): never
// while waiting for a build, a layout or another worker, so that the
// workers cannot all wait for each other.

// Manager serves virtual BAMs for any number of CRAM files, sharing one
// block cache and one bounded pool of workers between them. It is safe for
// concurrent use.
type Manager struct {
	// Dependencies, made by NewManager; each is safe for concurrent use.
	log *slog.Logger
	// cache holds the built segments, by cache.Key{VirtualBAM.id, segment}.
	//
	// INVARIANT (at rest): its reservations are the bytes of states plus
	// those of the decoders counted against it (CountDecoders): no build
	// holds storage
	cache *cache.Cache[cache.Key]
	// pool is the cache's: it recycles the storage of segments that left
	// the cache and that no reader holds any more, within the cache's
	// bound.
	pool *cache.Pool
	// states holds the per-file state of open files (see states.FileStates),
	// its bytes counted against the cache.
	states *states.FileStates
	// dir is the cache directory the layouts are persisted in.
	dir layout.Dir

	// Constant after NewManager.
	opts   Options         // defaults resolved
	ctx    context.Context // cancelled by Close; bounds readahead
	cancel context.CancelFunc
	// reorder is reorderWindow; tests shrink it, before any read, to fit
	// small fixtures.
	reorder int64
	// Resource pools: workers hands out the workers (its own lock); comps
	// and raws, synchronised by their channels, are free lists, one entry
	// per worker at most (unlike a sync.Pool they survive garbage
	// collections, which would make each build regrow its buffer).
	workers *workerPool
	comps   chan *bgzf.Compressor // at opts.Level
	raws    chan []byte           // scratch for decoded containers

	// Mutable, guarded by mu. "At rest" below means: no call into the
	// Manager or its VirtualBAMs under way and no build ahead running (a
	// save of learned digests may run).
	mu sync.Mutex
	// layouts holds, by index key, the persisted layouts in states.
	//
	// INVARIANT: for each k/ls, ls.key == k, ls.persist and ls.m == m
	// INVARIANT: for each ls, ls.gen == gens[ls.key]: a layout held is of
	//            its file version's current generation
	// INVARIANT: for each ls, !ls.learn.left: a layout flushed has left
	// INVARIANT (at rest): each ls is an entry of states
	layouts map[string]*layoutState
	// building holds the segment builds in flight, by cache key.
	//
	// INVARIANT: for each b, b.done is open and b.waiters >= 0
	// INVARIANT (at rest): empty
	building map[cache.Key]*building
	// gens counts, by index key, the layouts of the file version dropped
	// as wrong (dropLayout, the only writer, adds one; see layoutTag).
	//
	// INVARIANT: every value is at least 1
	gens map[string]uint64
	// scans holds the layout scans in progress.
	//
	// INVARIANT: for each r, r.m == m and r.done <= len(r.res)
	// INVARIANT (at rest): empty
	scans  map[*scanRun]struct{}
	closed bool // set by Close
	// background counts the goroutines started (startBackground) that
	// Close waits for; its Adds are made under mu while !closed.
	background sync.WaitGroup
	opens      singleflight.Group // one layout scan per file; its own lock
	warnOnce   sync.Once          // one warning about the cache directory
	saves      saveQueue          // learned digests to persist; its own lock
	anonSeq    atomic.Uint64      // numbers the layouts of files without identity
	// decoders, set by CountDecoders, count against the cache; maxSeg is
	// the largest segment of the files opened. Both atomic.
	decoders atomic.Pointer[decoderBudget]
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
	dir := layout.Dir{Path: opts.CacheDir, Shared: opts.SharedCache}
	if n, err := dir.RemoveStaleTemps(time.Now()); n > 0 {
		log.Info("removed temporary layout indexes of killed writers", "dir", opts.CacheDir, "count", n)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Debug("cache directory not cleaned", "dir", opts.CacheDir, "err", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	fileStates := states.NewFileStates(opts.stateBytes(), opts.MaxOpenFiles)
	fileStates.Count(c)
	return &Manager{
		states:   fileStates,
		dir:      dir,
		opts:     opts,
		log:      log,
		cache:    c,
		workers:  newWorkerPool(opts.Threads),
		comps:    make(chan *bgzf.Compressor, opts.Threads),
		raws:     make(chan []byte, opts.Threads),
		layouts:  make(map[string]*layoutState),
		pool:     c.Pool(),
		building: make(map[cache.Key]*building),
		gens:     make(map[string]uint64),
		scans:    make(map[*scanRun]struct{}),
		ctx:      ctx,
		cancel:   cancel,
		reorder:  reorderWindow,
	}
}

// Close stops readahead, waits for the goroutines the Manager started
// (builds ahead of readers) to end, and drops the file states, closing the
// descriptors not in use. Open VirtualBAMs still serve reads.
func (m *Manager) Close() {
	m.cancel()
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.background.Wait()
	m.states.DropAll()
}

// startBackground counts a goroutine about to start, which must call
// m.background.Done when it ends, so that Close waits for it; it reports
// false, counting nothing, once Close has begun.
func (m *Manager) startBackground() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return false
	}
	m.background.Add(1)
	return true
}

// States returns the states.FileStates of the Manager: CRAMs opened with it as
// cram.Options.States share the bounds and the budget of the layouts.
func (m *Manager) States() *states.FileStates { return m.states }

// Options returns the options in effect, defaults resolved.
func (m *Manager) Options() Options { return m.opts }

// CacheStats returns the counters of the shared block cache.
func (m *Manager) CacheStats() cache.Stats { return m.cache.Stats() }

// StateStats are the open files' state held (states.FileStates) against
// its bounds.
type StateStats struct {
	Bytes, MaxBytes int64 // state counted against the budget, and its share of it
	Files, MaxFiles int   // CRAM descriptors held open, and how many may be
}

// StateStats returns the open files' state held now and its bounds.
func (m *Manager) StateStats() StateStats {
	bytes, files := m.states.Stats()
	maxBytes, maxFiles := m.states.Bounds()
	return StateStats{Bytes: bytes, MaxBytes: maxBytes, Files: files, MaxFiles: maxFiles}
}

// acquire waits for a worker for p (see workerPool), or for ctx to end;
// p's lowest order first (a segment's or a container's number).
func (m *Manager) acquire(ctx context.Context, p *party, order int) error {
	return m.workers.acquire(ctx, p, order)
}

// release gives back a worker acquire gave.
func (m *Manager) release() { m.workers.release() }

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
