package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/cramfs/cramfs/encode/bai"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/encode/csi"
	"github.com/cramfs/cramfs/engine/layout"
	"github.com/cramfs/cramfs/engine/source"
)

// indexBuilder is a BAI or CSI builder.
type indexBuilder interface {
	Add(refID int32, beg, end int64, unmapped bool, vStart, vEnd uint64) error
	Scheme() bai.Scheme
	Merge(f *bai.Fragment, shift uint64) (bool, error)
	Finish(finalVOffset uint64) ([]byte, error)
}

// baiMaxRefLen is the longest reference a BAI can index (SAMv1 §5.2).
const baiMaxRefLen = 1 << 29

// scan decodes and compresses every container of src once, in parallel,
// and derives the layout and the .bai (SAMv1 §5.2) from the results, which
// are consumed in container order within a bounded window. The workers
// also make each container's part of the index (a bai.Fragment), so that
// the consumer's work follows the bins a container touches, not its
// records.
func (m *Manager) scan(ctx context.Context, src source.Source, hdrRaw []byte, hdrSeg layout.Segment) (*layout.File, error) {
	n := src.NumContainers()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	r := &scanRun{
		m:      m,
		src:    src,
		g:      g,
		gctx:   gctx,
		cancel: cancel,
		slots:  make(chan struct{}, 2*m.opts.Threads),
		res:    make([]chan *builtSegment, n),
		lean:   m.leanScanner(src),
	}
	m.scanning(r, true)
	defer m.scanning(r, false)
	for i := range r.res {
		r.res[i] = make(chan *builtSegment, 1)
	}
	r.newIndex(hdrRaw)
	g.Go(r.startBuilds)
	segs, off, consumeErr := r.consume(hdrSeg.CompLen)
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
	idx := &layout.File{
		Layout: layout.Layout{
			Level:    m.opts.Level.Deflate(),
			Header:   hdrSeg,
			Segments: segs,
			Size:     off + int64(len(bgzf.EOF)),
		},
	}
	if r.bld != nil {
		b, err := r.bld.Finish(uint64(off) << 16)
		if err != nil {
			r.noIndex(err)
		} else {
			idx.HasBAI, idx.BAI, idx.CSI = true, b, r.csi
		}
	}
	return idx, nil
}

// scanRun is one scan of a file: the container builds in flight, at most
// one per slot, and the index made of their results in container order.
type scanRun struct {
	// Dependencies.
	m   *Manager
	src source.Source

	// Constant for the scan. lean is src when its containers are measured
	// rather than built (see Manager.leanScanner), else nil.
	lean   source.LayoutScanner
	g      *errgroup.Group
	gctx   context.Context // ends with the first failed build
	cancel context.CancelFunc
	slots  chan struct{}        // one token per build not yet consumed
	res    []chan *builtSegment // by container, each filled once
	scheme bai.Scheme           // of bld as made, for the workers' fragments; zero for none

	// Mutable: hint, atomic, is the largest container's blocks so far (a
	// size hint, its max racy), recHint likewise its most records (a
	// measured container's record table is made that large at once); bld
	// and csi are the consumer's only.
	hint    atomic.Int64
	recHint atomic.Int64
	bld     indexBuilder // nil once no index can be built
	csi     bool         // bld is a CSI builder
	// Mutable: party, guarded by the Manager's workerPool, claims the
	// scan's workers; done, atomic, counts the containers scanned.
	party party
	done  atomic.Int64
}

// startBuilds starts the build of every container in order, each once a
// slot and a worker are free; it stops when the scan's context ends.
func (r *scanRun) startBuilds() error {
	for i := range r.res {
		select {
		case r.slots <- struct{}{}:
		case <-r.gctx.Done():
			return nil
		}
		if err := r.m.acquire(r.gctx, &r.party, i); err != nil {
			return nil
		}
		r.g.Go(func() error { return r.build(i) })
	}
	return nil
}

// build builds container i, holding a worker, and hands its result to
// the consumer.
func (r *scanRun) build(i int) error {
	m := r.m
	defer m.release()
	if r.lean != nil {
		return r.measure(i)
	}
	c, err := m.getComp()
	if err != nil {
		return fmt.Errorf("%s: BGZF level %d: %w", r.src.Name(), m.opts.Level.Deflate(), err)
	}
	defer m.putComp(c)
	bs, raw, err := scanContainer(r.gctx, r.src, c, m.pool, r.hint.Load(), i, m.getRaw())
	m.putRaw(raw)
	if err != nil {
		return err
	}
	r.done.Add(1)
	if n := bgzf.StoredSize(bs.seg.RawLen); n > r.hint.Load() {
		r.hint.Store(n) // racy max: only a size hint
	}
	bs.frag = r.fragment(bs)
	r.res[i] <- bs
	return nil
}

// measure is build for a scan that measures its containers (r.lean set).
func (r *scanRun) measure(i int) error {
	bs, err := measureContainer(r.gctx, r.src, r.lean, i, int(r.recHint.Load()))
	if err != nil {
		return err
	}
	if n := int64(bs.numRecords()); n > r.recHint.Load() {
		r.recHint.Store(n) // racy max: only a size hint
	}
	r.done.Add(1)
	bs.frag = r.fragment(bs)
	r.res[i] <- bs
	return nil
}

// ScanProgress is a layout scan in progress (see Manager.Scans).
type ScanProgress struct {
	File  string // the source.Source's Name
	Done  int    // containers scanned
	Total int    // data containers of the file
}

// Scans returns the layout scans in progress, by file name.
func (m *Manager) Scans() []ScanProgress {
	m.mu.Lock()
	out := make([]ScanProgress, 0, len(m.scans))
	for r := range m.scans {
		out = append(out, ScanProgress{File: r.src.Name(), Done: int(r.done.Load()), Total: len(r.res)})
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b ScanProgress) int { return strings.Compare(a.File, b.File) })
	return out
}

// scanning adds r to the scans in progress, or removes it.
func (m *Manager) scanning(r *scanRun, on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if on {
		m.scans[r] = struct{}{}
	} else {
		delete(m.scans, r)
	}
}

// leanScanner returns src as a source.LayoutScanner when its layout can be
// measured rather than built: at level 0, where the blocks follow from the
// records' lengths, unless Options.Digests asks for every segment's digest.
func (m *Manager) leanScanner(src source.Source) source.LayoutScanner {
	ls, ok := src.(source.LayoutScanner)
	if !ok || m.opts.Level.Deflate() != 0 || m.opts.Digests {
		return nil
	}
	return ls
}

// newIndex chooses the index builder for the references of hdrRaw: a BAI,
// or a CSI when a reference is longer than a BAI addresses (2^29 bases;
// samtools index -c builds the same); none when the header is unreadable.
// It runs before the builds start, which read the scheme.
func (r *scanRun) newIndex(hdrRaw []byte) {
	nRef, maxLen, err := parseRefs(hdrRaw)
	switch {
	case err != nil:
		r.m.log.Warn("no index: unreadable header", "file", r.src.Name(), "err", err)
		return
	case maxLen > baiMaxRefLen:
		r.bld, r.csi = csi.NewBuilder(nRef, maxLen), true
	default:
		r.bld = bai.NewBuilder(nRef)
	}
	r.scheme = r.bld.Scheme()
}

// fragment makes, on a worker, what the records of bs add to the index:
// their virtual offsets relative to the segment's start (the consumer
// shifts them by the segment's offset) and the fragment they make. It
// returns nil when no index is built, or when an offset cannot be found
// or a record is refused within the container: the consumer then adds
// the records one by one, which reports the error as it always did.
func (r *scanRun) fragment(bs *builtSegment) *bai.Fragment {
	if r.scheme == (bai.Scheme{}) || bs.numRecords() == 0 {
		return nil
	}
	f := bai.NewFragment(r.scheme)
	vm := voffsetMapper{end: bs.seg.CompLen, blocks: bs.blocks}
	for it := (recIter{bs: bs}); ; {
		rec, ok := it.next()
		if !ok {
			break
		}
		vs, err := vm.at(rec.uStart)
		if err != nil {
			return nil
		}
		ve, err := vm.at(rec.uEnd)
		if err != nil {
			return nil
		}
		if f.Add(rec.refID, rec.beg, rec.end, rec.unmapped, vs, ve) != nil {
			return nil
		}
	}
	return f
}

// noIndex gives up the index, saying why.
func (r *scanRun) noIndex(err error) {
	r.m.log.Warn("no index for this file", "file", r.src.Name(), "err", err)
	r.bld = nil
}

// consume takes the builds' results in container order, placing each
// segment after the previous (the first at off) and adding its records to
// the index. It returns the segments placed and where the last ends; it
// stops early, with those placed so far, when the scan's context ends,
// and with an error (cancelling the scan) when a record's virtual offset
// cannot be found.
func (r *scanRun) consume(off int64) ([]layout.Segment, int64, error) {
	segs := make([]layout.Segment, 0, len(r.res))
	for i := range r.res {
		var bs *builtSegment
		select {
		case bs = <-r.res[i]:
		case <-r.gctx.Done():
			return segs, off, nil
		}
		<-r.slots
		s := bs.seg
		s.Offset = off
		off += s.CompLen
		segs = append(segs, s)
		err := r.addRecords(i, s, bs)
		bs.release()
		if err != nil {
			r.cancel()
			return segs, off, err
		}
	}
	return segs, off, nil
}

// addRecords adds the records of container i, placed as s, to the index:
// its worker's fragment when the index takes it whole, else each record
// (addEach). A record the index refuses gives up the index, not the scan.
func (r *scanRun) addRecords(i int, s layout.Segment, bs *builtSegment) error {
	if r.bld == nil || bs.numRecords() == 0 {
		return nil
	}
	if bs.frag != nil && s.End() < 1<<48 {
		ok, err := r.bld.Merge(bs.frag, uint64(s.Offset)<<16)
		if err != nil {
			r.noIndex(fmt.Errorf("container %d: %w", i, err))
			return nil
		}
		if ok {
			return nil
		}
	}
	return r.addEach(i, s, bs)
}

// addEach adds the records of container i, placed as s, one by one, for a
// container whose fragment the index refused (or that has none): it gives
// the index Add would have given, or gives it up with Add's error.
func (r *scanRun) addEach(i int, s layout.Segment, bs *builtSegment) error {
	vm := voffsetMapper{base: s.Offset, end: s.End(), blocks: bs.blocks}
	for it := (recIter{bs: bs}); ; {
		rec, ok := it.next()
		if !ok {
			break
		}
		vs, err := vm.at(rec.uStart)
		if err != nil {
			return fmt.Errorf("%s: container %d: %w", r.src.Name(), i, err)
		}
		ve, err := vm.at(rec.uEnd)
		if err != nil {
			return fmt.Errorf("%s: container %d: %w", r.src.Name(), i, err)
		}
		if err := r.bld.Add(rec.refID, rec.beg, rec.end, rec.unmapped, vs, ve); err != nil {
			r.noIndex(fmt.Errorf("container %d: %w", i, err))
			return nil
		}
	}
	return nil
}

// recTables holds the record tables of measured containers (recInfo, 48
// bytes a record) for reuse once their records are in the index: a fresh
// table per container was a cleared allocation of up to megabytes, most
// of a large file's allocation.
var recTables = sync.Pool{New: func() any { return new([]recInfo) }}

// getRecs returns an empty record table with room for hint records.
func getRecs(hint int) []recInfo {
	p := recTables.Get().(*[]recInfo)
	if cap(*p) < hint {
		return make([]recInfo, 0, hint)
	}
	return (*p)[:0]
}

// putRecs gives a record table back for reuse.
func putRecs(recs []recInfo) {
	if cap(recs) > 0 {
		recs = recs[:0]
		recTables.Put(&recs)
	}
}

// layoutTables holds the record tables of measured containers
// (measureTable) for reuse, as recTables.
var layoutTables = sync.Pool{New: func() any { return new([]source.RecordLayout) }}

// getLayouts returns an empty layout table with room for hint records.
func getLayouts(hint int) []source.RecordLayout {
	p := layoutTables.Get().(*[]source.RecordLayout)
	if cap(*p) < hint {
		return make([]source.RecordLayout, 0, hint)
	}
	return (*p)[:0]
}

// putLayouts gives a layout table back for reuse.
func putLayouts(recs []source.RecordLayout) {
	if cap(recs) > 0 {
		recs = recs[:0]
		layoutTables.Put(&recs)
	}
}
