package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"sync"

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
	id     string // identity of the file in the block cache
	hdr    []byte // the header's BGZF blocks
	layout Layout
	bai    []byte
	hasBAI bool
	csi    bool // bai holds a CSI
	// readahead is how many segments are built ahead of a sequential
	// reader (Options.Readahead resolved for this file).
	readahead int

	mu      sync.Mutex
	lastEnd int64        // where the previous read ended; -1 before any
	ahead   map[int]bool // segments being built by readahead
}

// Name returns the name of the underlying Source.
func (v *VirtualBAM) Name() string { return v.src.Name() }

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
		var chunk []byte
		var base int64
		switch {
		case off < v.layout.Header.CompLen:
			chunk = v.hdr
		case off >= eof:
			chunk, base = bgzf.EOF, eof
		default:
			i := v.segmentAt(off)
			b, err := v.segment(ctx, i)
			if err != nil {
				return n, err
			}
			chunk, base = b, v.layout.Segments[i].Offset
		}
		c := copy(p[n:], chunk[off-base:])
		n += c
		off += int64(c)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// View returns the n bytes at off without copying them when they lie in
// one piece of the file (the header, one segment or the EOF block), and
// nil otherwise, when ReadAt must assemble them. n must be positive and
// off+n at most Size. The returned bytes are shared: callers must not
// modify them. Reads through View count as reads for readahead.
func (v *VirtualBAM) View(ctx context.Context, off int64, n int) ([]byte, error) {
	size := v.layout.Size
	if off < 0 || n <= 0 || off > size-int64(n) {
		return nil, fmt.Errorf("%w: %s: view of %d bytes at %d, size %d", ErrInvalid, v.src.Name(), n, off, size)
	}
	end := off + int64(n)
	eof := v.layout.eofOffset()
	var chunk []byte
	var base int64
	switch {
	case end <= v.layout.Header.CompLen:
		chunk = v.hdr
	case off >= eof:
		chunk, base = bgzf.EOF, eof
	case off >= v.layout.Header.CompLen && end <= eof:
		i := v.segmentAt(off)
		seg := v.layout.Segments[i]
		if end > seg.End() {
			return nil, nil
		}
		v.noteRead(off, end)
		b, err := v.segment(ctx, i)
		if err != nil {
			return nil, err
		}
		chunk, base = b, seg.Offset
	default:
		return nil, nil
	}
	return chunk[off-base : end-base : end-base], nil
}

// segmentAt returns the segment holding offset off, which must lie
// between the header and the EOF block.
func (v *VirtualBAM) segmentAt(off int64) int {
	segs := v.layout.Segments
	return sort.Search(len(segs), func(i int) bool { return segs[i].End() > off })
}

// segment returns the BGZF bytes of segment i, from the cache or built
// once however many callers (of any VirtualBAM of the same file) ask at
// the same time.
func (v *VirtualBAM) segment(ctx context.Context, i int) ([]byte, error) {
	key := cache.Key{File: v.id, Segment: i}
	if b, ok := v.m.cache.Get(key); ok {
		return b, nil
	}
	for attempt := 0; ; attempt++ {
		r, err, _ := v.m.builds.Do(v.id+"/"+strconv.Itoa(i), func() (any, error) {
			if v.m.cache.Contains(key) {
				if b, ok := v.m.cache.Get(key); ok {
					return b, nil
				}
			}
			b, err := v.m.buildSegment(ctx, v.src, i, v.layout.Segments[i])
			if err != nil {
				return nil, err
			}
			v.m.cache.Add(key, b)
			return b, nil
		})
		if err == nil {
			return r.([]byte), nil
		}
		// The build was led by another caller whose context ended (an
		// interrupted read, or readahead at Close): build again for this one.
		if attempt < 3 && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			continue
		}
		return nil, err
	}
}

// noteRead records a read of [off, end) and, when it continues the
// previous read, builds the next segments ahead in the background.
func (v *VirtualBAM) noteRead(off, end int64) {
	v.mu.Lock()
	seq := off == v.lastEnd
	v.lastEnd = end
	v.mu.Unlock()
	if !seq || v.readahead == 0 {
		return
	}
	segs := v.layout.Segments
	i := sort.Search(len(segs), func(i int) bool { return segs[i].End() > end })
	for todo := v.readahead; i < len(segs) && todo > 0; i++ {
		if segs[i].CompLen == 0 {
			continue
		}
		todo--
		v.prefetch(i)
	}
}

// prefetch builds segment i in the background unless it is cached or
// already being prefetched.
func (v *VirtualBAM) prefetch(i int) {
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
		if _, err := v.segment(v.m.ctx, i); err != nil && !errors.Is(err, context.Canceled) {
			v.m.log.Debug("readahead failed", "file", v.src.Name(), "segment", i, "err", err)
		}
	}()
}
