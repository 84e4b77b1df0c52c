package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/cramfs/cramfs/cache"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/layout"
	"github.com/cramfs/cramfs/engine/source"
)

// VirtualBAM is the BAM file (SAMv1 §4) of one CRAM, materialised on
// demand: its size and .bai are known from the layout, and its bytes are
// built segment by segment as they are read, identical on every read. It
// is safe for concurrent use.
type VirtualBAM struct {
	// Dependencies.
	m   *Manager
	src source.Source

	// Constant after Manager.Open. The layout and index are the
	// Manager's, in its states.FileStates (see state), the header's blocks a
	// segment of its cache.
	//
	// INVARIANT: pinned != nil <=> key == ""; a layout pinned has tag and
	//            is not persisted
	// INVARIANT: key != "" => id == key + "/" + tag: a layout dropped and
	//            scanned again (another tag) never shares cached segments
	// INVARIANT: every layout v serves (state) has tag, its Size is size
	//            and its index is as hasBAI and csi say
	id      string          // identity of the file and its layout in the block cache
	key     string          // index key of the layout; "" when it is not persisted
	depends string          // what the bytes depend on besides the file (layout.Depends)
	tag     string          // layoutTag of the layout
	fid     source.Identity // of the file when opened
	hdrSeg  layout.Segment  // the header's blocks, to check a rebuild
	size    int64
	hasBAI  bool
	csi     bool         // the index is a CSI
	pinned  *layoutState // for a file without identity, whose layout cannot be read again; else nil
	// readahead is how many segments are built ahead of a sequential
	// reader (Options.Readahead resolved for this file).
	readahead int
	maxSeg    int64 // the largest segment's BGZF bytes
	scanned   bool  // Open scanned the file (else its layout was known)

	// Mutable, atomic: stale is set once a rebuilt segment disagreed with
	// the layout (see Manager.dropLayout), which then keeps in dropped the
	// layout it took from the Manager, so that the segments that still
	// match it are served.
	//
	// INVARIANT: dropped != nil => stale, and (under Manager.mu) dropped
	//            is not in Manager.layouts
	stale   atomic.Bool
	dropped atomic.Pointer[layoutState]

	// Mutable: party, guarded by the Manager's workerPool, claims the
	// workers of v's segment builds.
	//
	// INVARIANT (at rest): party has no waiter and no claim
	party party

	// Mutable, guarded by mu: the position of the run of reads.
	//
	// INVARIANT: cur.end >= -1, cur.reads >= 0 and 0 <= passed <= the
	//            number of segments; likewise left
	// INVARIANT: every key of ahead is a segment number
	// INVARIANT (at rest): ahead is empty
	mu sync.Mutex
	// cur is the run of reads going on (noRun before any read), left the
	// one the last jump left, which a read near its end resumes (jump).
	cur, left readRun
	// passed is the first segment the current run of reads has not yet
	// left behind (see noteRead); runID counts restarts of the run, so
	// that readahead asked for by an earlier run is not judged by this
	// one's position.
	passed int
	runID  uint64
	ahead  map[int]context.CancelFunc // segments being built by readahead, each build's cancel
}

// startAhead registers segment i as being built ahead and returns the
// context of its build, which ends when the build is abandoned
// (abandonAhead) or the Manager closes; ok is false when i is being built
// ahead already (or its abandoned build has not ended yet).
func (v *VirtualBAM) startAhead(i int) (ctx context.Context, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.ahead[i]; ok {
		return nil, false
	}
	ctx, v.ahead[i] = context.WithCancel(v.m.ctx)
	return ctx, true
}

// doneAhead forgets that segment i is being built ahead.
func (v *VirtualBAM) doneAhead(i int) {
	v.mu.Lock()
	cancel := v.ahead[i]
	delete(v.ahead, i)
	v.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// abandonAhead returns, under v.mu, the cancel functions of the builds
// ahead of every segment outside [from, to], for the caller to call once
// it released v.mu. A reader that jumped elsewhere (a region query going
// to its next region) no longer needs the window it had ahead: the
// builds of it still waiting for a worker would hold back those of its
// new position (a worker goes to a file's lowest segment claimed first)
// and spend the workers on segments nobody reads. A build already under
// way may finish, and is then cached. The builds stay in ahead until
// their goroutines end.
func (v *VirtualBAM) abandonAhead(from, to int) []context.CancelFunc {
	var out []context.CancelFunc
	for i, cancel := range v.ahead {
		if i < from || i > to {
			out = append(out, cancel)
		}
	}
	return out
}

// regionRamp is how many segments a run of reads that began with a jump
// reads for each segment its readahead window grows by.
const regionRamp = 2

// regionWindow bounds the readahead window of a run of reads from runFrom
// to end that began past the file's first record: a region query, not a
// reader of the whole file. Its window is the segment at the run's end,
// which is the kernel's readahead frontier, and one more for every
// regionRamp segments the run has read, up to one segment building ahead
// on each worker. The window's builds under way when the run ends are
// wasted (abandonAhead cancels only those not begun), and most regions
// read one to three segments: at the 4×Threads of a whole-file reader, a
// region of three segments built five more. A region that has read
// further is deep (16 merged copies of a file put 11-13 segments in a 100
// kb region), and a window of one left its segments built one at a time,
// each only once the reader reached it. A run from the file's start is
// not bounded.
func (v *VirtualBAM) regionWindow(l *layout.Layout, runFrom, end int64) int {
	segs := l.Segments
	if len(segs) == 0 || runFrom <= segs[0].Offset {
		return math.MaxInt
	}
	from := sort.Search(len(segs), func(i int) bool { return segs[i].End() > runFrom })
	to := sort.Search(len(segs), func(i int) bool { return segs[i].End() >= end })
	return min(1+(to-from)/regionRamp, v.m.opts.Threads+1)
}

// cancelAll calls each of fs.
func cancelAll(fs []context.CancelFunc) {
	for _, f := range fs {
		f()
	}
}

// Name returns the name of the underlying source.Source.
func (v *VirtualBAM) Name() string { return v.src.Name() }

// Stale reports whether a segment rebuilt for v disagreed with its
// layout: the file changed under it. v keeps failing the reads of that
// segment (ErrMismatch); a new Open of the file scans it again and serves
// the new version, so callers that share VirtualBAMs should open anew.
func (v *VirtualBAM) Stale() bool { return v.stale.Load() }

// Tag names the bytes v serves (fs.Tagger): its layout's tag, of the
// level, the segments' lengths and the generation of the file version's
// layouts, so that a layout dropped and scanned again gets another. Two
// VirtualBAMs of one file version with one tag serve the same bytes.
func (v *VirtualBAM) Tag() string { return v.tag }

// Size returns the exact size of the virtual BAM in bytes.
func (v *VirtualBAM) Size() int64 { return v.size }

// Scanned reports whether the Open that made v scanned the file for its
// layout, rather than finding it in memory or the cache directory.
func (v *VirtualBAM) Scanned() bool { return v.scanned }

// state returns the layout and index of the file, read again (the
// persisted index, else a scan) if they were dropped.
func (v *VirtualBAM) state(ctx context.Context) (*layoutState, error) {
	if v.pinned != nil {
		return v.pinned, nil
	}
	if ls := v.dropped.Load(); ls != nil {
		return ls, nil
	}
	return v.m.layoutState(ctx, v)
}

// Layout returns a copy of the segment layout (the zero Layout, with the
// error logged, when it cannot be read again).
func (v *VirtualBAM) Layout() layout.Layout {
	ls, err := v.state(context.Background())
	if err != nil {
		v.m.log.Error("layout unavailable", "file", v.src.Name(), "err", err)
		return layout.Layout{}
	}
	return ls.idx.Layout.Clone()
}

// Index returns the BAI index (SAMv1 §5.2) of the virtual BAM, or nil when
// none could be built (records not sorted by coordinate) or, with the
// error logged, when it cannot be read again. The slice is shared:
// callers must not modify it.
func (v *VirtualBAM) Index() []byte {
	if !v.hasBAI {
		return nil
	}
	ls, err := v.state(context.Background())
	if err != nil {
		v.m.log.Error("index unavailable", "file", v.src.Name(), "err", err)
		return nil
	}
	return ls.idx.BAI
}

// IndexExt is the file name extension of Index: ".bai", or ".csi" when a
// reference is longer than a BAI can address; "" when there is no index.
func (v *VirtualBAM) IndexExt() string {
	switch {
	case !v.hasBAI:
		return ""
	case v.csi:
		return ".csi"
	}
	return ".bai"
}

// ReadAt reads len(p) bytes at off with io.ReaderAt semantics: fewer bytes
// only at the end of the file, with io.EOF.
func (v *VirtualBAM) ReadAt(p []byte, off int64) (int, error) {
	return v.ReadAtContext(context.Background(), p, off)
}

// ReadAtContext is ReadAt with a context bounding the segment builds.
func (v *VirtualBAM) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("%w: %s: negative offset %d", ErrInvalid, v.src.Name(), off)
	}
	size := v.size
	if off >= size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	ls, err := v.state(ctx)
	if err != nil {
		return 0, err
	}
	l := &ls.idx.Layout
	v.noteRead(l, off, min(size, off+int64(len(p))))
	eof := l.EOFOffset()
	n := 0
	for n < len(p) && off < size {
		var c int
		switch {
		case off < l.Header.CompLen:
			b, err := v.segmentUnless(ctx, l.Header, layout.HeaderSegment, nil)
			if err != nil {
				return n, err
			}
			c = copy(p[n:], b.B[off:])
			b.Release()
		case off >= eof:
			c = copy(p[n:], bgzf.EOF[off-eof:])
		default:
			i := l.SegmentAt(off)
			b, err := v.segment(ctx, l, i)
			if err != nil {
				return n, err
			}
			c = copy(p[n:], b.B[off-l.Segments[i].Offset:])
			b.Release()
		}
		n += c
		off += int64(c)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// View returns the n bytes at off without copying them, as the pieces of
// the file that hold them in order (the header, one or more segments, the
// EOF block): one piece unless the bytes span two. n must be positive and
// off+n at most Size. The returned bytes are shared and stay valid until
// release is called (exactly once; it is never nil): callers must not
// modify them. Reads through View count as reads for readahead.
func (v *VirtualBAM) View(ctx context.Context, off int64, n int) (parts [][]byte, release func(), err error) {
	size := v.size
	if off < 0 || n <= 0 || off > size-int64(n) {
		return nil, noRelease, fmt.Errorf("%w: %s: view of %d bytes at %d, size %d", ErrInvalid, v.src.Name(), n, off, size)
	}
	ls, err := v.state(ctx)
	if err != nil {
		return nil, noRelease, err
	}
	l := &ls.idx.Layout
	end := off + int64(n)
	v.noteRead(l, off, end)
	hdrEnd, eof := l.Header.CompLen, l.EOFOffset()
	var held []*cache.Buf
	release = func() {
		for _, b := range held {
			b.Release()
		}
	}
	for off < end {
		var p []byte
		switch {
		case off < hdrEnd:
			b, err := v.segmentUnless(ctx, l.Header, layout.HeaderSegment, nil)
			if err != nil {
				release()
				return nil, noRelease, err
			}
			held = append(held, b)
			p = b.B[off:min(end, hdrEnd)]
		case off >= eof:
			p = []byte(bgzf.EOF[off-eof : end-eof])
		default:
			i := l.SegmentAt(off)
			seg := l.Segments[i]
			b, err := v.segment(ctx, l, i)
			if err != nil {
				release()
				return nil, noRelease, err
			}
			held = append(held, b)
			p = b.B[off-seg.Offset : min(end, seg.End())-seg.Offset]
		}
		parts = append(parts, p[:len(p):len(p)])
		off += int64(len(p))
	}
	if len(held) == 0 {
		release = noRelease
	}
	return parts, release, nil
}

func noRelease() {}

// segment returns the BGZF bytes of segment i of l with a reference the
// caller must release, from the cache or built once however many callers
// (of any VirtualBAM of the same file) ask at the same time.
func (v *VirtualBAM) segment(ctx context.Context, l *layout.Layout, i int) (*cache.Buf, error) {
	return v.segmentUnless(ctx, l.Segments[i], i, nil)
}

// errSkipped is segmentUnless's answer when skip said not to build.
var errSkipped = errors.New("segment build skipped")

// segmentUnless is segment, except that when the segment is neither
// cached nor being built and skip (if set) reports true, it builds
// nothing and returns errSkipped. skip is called with the Manager's lock
// held, so a segment dropped from the cache after skip said no is seen.
func (v *VirtualBAM) segmentUnless(ctx context.Context, want layout.Segment, i int, skip func() bool) (*cache.Buf, error) {
	key := cache.Key{File: v.id, Segment: i}
	for {
		if b, ok := v.m.cache.Get(key); ok {
			return b, nil
		}
		b, err := v.m.buildOrWait(ctx, v, key, want, i, skip)
		// A build led by another caller whose context ended is tried
		// again for this one, however many such leaders it waited for:
		// each of them was a build, not a spin.
		if !errors.Is(err, errLeaderCancelled) {
			return b, err
		}
	}
}
