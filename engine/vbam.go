package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/cramfs/cramfs/cache"
	"github.com/cramfs/cramfs/encode/bgzf"
)

// VirtualBAM is the BAM file (SAMv1 §4) of one CRAM, materialised on
// demand: its size and .bai are known from the layout, and its bytes are
// built segment by segment as they are read, identical on every read. It
// is safe for concurrent use.
type VirtualBAM struct {
	m      *Manager
	src    Source
	id     string // identity of the file and its layout in the block cache
	key    string // index key of the layout; "" when it is not persisted
	hdr    []byte // the header's BGZF blocks
	layout Layout
	bai    []byte
	hasBAI bool
	csi    bool // bai holds a CSI
	// readahead is how many segments are built ahead of a sequential
	// reader (Options.Readahead resolved for this file).
	readahead int
	maxSeg    int64 // the largest segment's BGZF bytes

	// stale is set once a rebuilt segment disagreed with the layout (see
	// Manager.dropLayout).
	stale atomic.Bool

	mu      sync.Mutex
	lastEnd int64 // where the previous read ended; -1 before any
	run     int   // sequential reads in a row
	// passed is the first segment the current run of reads has not yet
	// left behind (see noteRead); runID counts restarts of the run, so
	// that readahead asked for by an earlier run is not judged by this
	// one's position.
	passed int
	runID  uint64
	ahead  map[int]bool // segments being built by readahead
}

// Name returns the name of the underlying Source.
func (v *VirtualBAM) Name() string { return v.src.Name() }

// Stale reports whether a segment rebuilt for v disagreed with its
// layout: the file changed under it. v keeps failing the reads of that
// segment; a new Open of the file scans it again and serves the new
// version, so callers that share VirtualBAMs should open anew.
func (v *VirtualBAM) Stale() bool { return v.stale.Load() }

// Size returns the exact size of the virtual BAM in bytes.
func (v *VirtualBAM) Size() int64 { return v.layout.Size }

// Layout returns a copy of the segment layout.
func (v *VirtualBAM) Layout() Layout { return v.layout.clone() }

// Index returns the BAI index (SAMv1 §5.2) of the virtual BAM, or nil when
// none could be built (records not sorted by coordinate). The slice is
// shared: callers must not modify it.
func (v *VirtualBAM) Index() []byte {
	if !v.hasBAI {
		return nil
	}
	return v.bai
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
	size := v.layout.Size
	if off >= size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	v.noteRead(off, min(size, off+int64(len(p))))
	eof := v.layout.eofOffset()
	n := 0
	for n < len(p) && off < size {
		var c int
		switch {
		case off < v.layout.Header.CompLen:
			c = copy(p[n:], v.hdr[off:])
		case off >= eof:
			c = copy(p[n:], bgzf.EOF[off-eof:])
		default:
			i := v.segmentAt(off)
			b, err := v.segment(ctx, i)
			if err != nil {
				return n, err
			}
			c = copy(p[n:], b.B[off-v.layout.Segments[i].Offset:])
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
	size := v.layout.Size
	if off < 0 || n <= 0 || off > size-int64(n) {
		return nil, noRelease, fmt.Errorf("%w: %s: view of %d bytes at %d, size %d", ErrInvalid, v.src.Name(), n, off, size)
	}
	end := off + int64(n)
	v.noteRead(off, end)
	hdrEnd, eof := v.layout.Header.CompLen, v.layout.eofOffset()
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
			p = v.hdr[off:min(end, hdrEnd)]
		case off >= eof:
			p = []byte(bgzf.EOF[off-eof : end-eof])
		default:
			i := v.segmentAt(off)
			seg := v.layout.Segments[i]
			b, err := v.segment(ctx, i)
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

// segmentAt returns the segment holding offset off, which must lie
// between the header and the EOF block.
func (v *VirtualBAM) segmentAt(off int64) int {
	segs := v.layout.Segments
	return sort.Search(len(segs), func(i int) bool { return segs[i].End() > off })
}

// segment returns the BGZF bytes of segment i with a reference the caller
// must release, from the cache or built once however many callers (of any
// VirtualBAM of the same file) ask at the same time.
func (v *VirtualBAM) segment(ctx context.Context, i int) (*cache.Buf, error) {
	return v.segmentUnless(ctx, i, nil)
}

// errSkipped is segmentUnless's answer when skip said not to build.
var errSkipped = errors.New("segment build skipped")

// segmentUnless is segment, except that when the segment is neither
// cached nor being built and skip (if set) reports true, it builds
// nothing and returns errSkipped. skip is called with the Manager's lock
// held, so a segment dropped from the cache after skip said no is seen.
func (v *VirtualBAM) segmentUnless(ctx context.Context, i int, skip func() bool) (*cache.Buf, error) {
	key := cache.Key{File: v.id, Segment: i}
	for attempt := 0; ; attempt++ {
		if b, ok := v.m.cache.Get(key); ok {
			return b, nil
		}
		b, err := v.buildOrWait(ctx, key, i, skip)
		if err == nil {
			return b, nil
		}
		// The build was led by another caller whose context ended (an
		// interrupted read, or readahead at Close): build again for this one.
		if attempt < 3 && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			continue
		}
		return nil, err
	}
}

// buildOrWait builds segment i, or waits for the build already in flight,
// and returns it with a reference for the caller.
func (v *VirtualBAM) buildOrWait(ctx context.Context, key cache.Key, i int, skip func() bool) (*cache.Buf, error) {
	m := v.m
	m.mu.Lock()
	if b, ok := m.building[key]; ok {
		b.waiters++
		m.mu.Unlock()
		select {
		case <-b.done:
			return b.buf, b.err
		case <-ctx.Done():
			m.mu.Lock()
			select {
			case <-b.done:
				// Finished meanwhile: a reference was taken for us.
				m.mu.Unlock()
				if b.buf != nil {
					b.buf.Release()
				}
			default:
				b.waiters--
				m.mu.Unlock()
			}
			return nil, ctx.Err()
		}
	}
	// The segment may have been cached between the caller's lookup and
	// here; the in-flight entry is registered under the same lock that
	// finishing builds take after adding to the cache.
	if b, ok := m.cache.Get(key); ok {
		m.mu.Unlock()
		return b, nil
	}
	if skip != nil && skip() {
		m.mu.Unlock()
		return nil, errSkipped
	}
	b := &building{done: make(chan struct{})}
	m.building[key] = b
	m.mu.Unlock()

	buf, err := m.buildSegment(ctx, v.src, i, v.layout.Segments[i])
	if err == nil {
		m.cache.Add(key, buf)
	} else if errors.Is(err, ErrMismatch) {
		m.dropLayout(v)
	}
	m.mu.Lock()
	delete(m.building, key)
	b.buf, b.err = buf, err
	if buf != nil {
		for range b.waiters {
			buf.Retain()
		}
	}
	close(b.done)
	m.mu.Unlock()
	return buf, err
}

// reorderWindow is how far before or after the previous read's end a read
// may start and still count as part of a sequential run; rampReads is how
// many sequential reads widen the readahead window by one segment.
const (
	reorderWindow = 4 << 20
	rampReads     = 4
)

// noteRead records a read of [off, end) and, when it continues the
// previous read, builds the next segments ahead in the background and
// drops from the cache the segments the run has left more than the
// reorder window behind.
//
// Unless Options.Readahead is set, the window grows with the run of
// sequential reads: it starts at the segment being read (a region query,
// a short run, mostly ends in it) and widens by one segment every
// rampReads reads up to the file's readahead, so that a reader streaming
// the whole file keeps every worker busy without region queries paying
// for containers they never read. (Starting at one segment per worker
// built the next container for every region, and with large containers
// the cache then dropped segments that later regions came back for.) Reads
// that arrive slightly out of order (the kernel's concurrent readahead
// requests) keep the run going.
func (v *VirtualBAM) noteRead(off, end int64) {
	v.mu.Lock()
	seq := off == v.lastEnd
	win := v.m.reorder
	near := v.lastEnd >= 0 && off >= v.lastEnd-win && off <= v.lastEnd+win
	switch {
	case seq:
		v.run++
	case !near:
		v.run = 0
	}
	v.lastEnd = end
	run := v.run
	segs := v.layout.Segments
	// The segment read is in use: a jump, or a read going back, restarts
	// the count of segments the run has passed from it. Only a jump
	// starts a new run (another reader, or a seek): reads going back a
	// little are the kernel's readahead requests arriving out of order.
	if cur := sort.Search(len(segs), func(i int) bool { return segs[i].End() > off }); !near || cur < v.passed {
		v.passed = cur
		if !near {
			v.runID++
		}
	}
	runID := v.runID
	drop := v.passed
	for v.passed < len(segs) && segs[v.passed].End() <= off-win {
		v.passed++
	}
	dropEnd := v.passed
	v.mu.Unlock()
	// A sequential reader does not come back for a segment it has left
	// well behind, and through the mount the kernel keeps what it was
	// served in its page cache (files are opened with FOPEN_KEEP_CACHE).
	// Such a segment leaves the cache now rather than when it is least
	// recently used, and its storage goes to the next segment built: a
	// streamed file no longer fills the cache with fresh pages (76,000
	// page faults and 310 MiB peak RSS for the 2M-read CRAM 3.0 file
	// before, 27,000 and 112 MiB after).
	for j := drop; j < dropEnd; j++ {
		v.m.cache.Remove(cache.Key{File: v.id, Segment: j})
	}
	if !seq || v.readahead == 0 {
		return
	}
	window := v.readahead
	if v.m.opts.Readahead == 0 {
		window = min(window, 1+run/rampReads)
	}
	// The window (the segment read counts) holds fewer segments than the
	// cache can keep beside the decoders, one being left for the segment
	// just passed or one finishing as the next starts: built ahead of a
	// cache too small for them, segments push out the one being read or
	// each other, and are built again.
	window = min(window, v.m.segmentsThatFit(v.maxSeg)-1)
	i := sort.Search(len(segs), func(i int) bool { return segs[i].End() > end })
	for todo := window; i < len(segs) && todo > 0; i++ {
		if segs[i].CompLen == 0 {
			continue
		}
		todo--
		v.prefetch(i, runID)
	}
}

// prefetch builds segment i in the background, for the run of reads
// runID, unless it is cached or already being prefetched.
func (v *VirtualBAM) prefetch(i int, runID uint64) {
	if v.m.ctx.Err() != nil || v.m.cache.Contains(cache.Key{File: v.id, Segment: i}) {
		return
	}
	v.mu.Lock()
	if v.ahead[i] {
		v.mu.Unlock()
		return
	}
	v.ahead[i] = true
	v.mu.Unlock()
	go func() {
		defer func() {
			v.mu.Lock()
			delete(v.ahead, i)
			v.mu.Unlock()
		}()
		// The reader may have overtaken this goroutine before it ran:
		// a segment it has left behind is not built again, and one it
		// passed during the build does not stay in the cache. The check
		// is made again where the build would start, under the lock the
		// cache lookup takes: the reader may build, read and drop the
		// segment between a check here and the lookup (seen on a loaded
		// machine, where this goroutine then built it a second time).
		if v.behind(i, runID) {
			return
		}
		b, err := v.segmentUnless(v.m.ctx, i, func() bool { return v.behind(i, runID) })
		if err != nil {
			if !errors.Is(err, context.Canceled) && !errors.Is(err, errSkipped) {
				v.m.log.Debug("readahead failed", "file", v.src.Name(), "segment", i, "err", err)
			}
			return
		}
		b.Release()
		if v.behind(i, runID) {
			v.m.cache.Remove(cache.Key{File: v.id, Segment: i})
		}
	}()
}

// behind reports whether the run of reads runID, still going on, has
// left segment i behind (see noteRead). Readers taking turns on one file
// restart the run at each other's reads, so their readahead is never
// judged by another reader's position.
func (v *VirtualBAM) behind(i int, runID uint64) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return runID == v.runID && i < v.passed
}
