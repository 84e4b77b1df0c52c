package engine

import (
	"context"
	"errors"
	"math"
	"sort"

	"github.com/cramfs/cramfs/cache"
	"github.com/cramfs/cramfs/engine/layout"
	"github.com/cramfs/cramfs/engine/source"
)

// reorderWindow is how far before or after the previous read's end a read
// may start and still count as part of a sequential run: at least twice a
// mount's kernel read-ahead (fs.DefaultMaxReadAhead, 1 MiB; up to 4 MiB
// through fs.Options), whose requests reach the engine in any order, a
// request at most a window early or late.
// rampReads is how many sequential reads widen the readahead window by
// one segment.
const (
	reorderWindow = 8 << 20
	rampReads     = 4
)

// tailPage is the unit in which the kernel reads a file: htslib reads the
// BGZF EOF block (its last 28 bytes) right after the header, and the
// kernel asks for the whole page that holds it.
const tailPage = 4096

// noteRead records a read of [off, end) and, when it continues the
// previous read, builds the next segments ahead in the background and
// has the segments the run has left more than the reorder window behind
// leave the cache first (leaveBehind).
//
// Unless Options.Readahead is set, the window grows with the run of
// sequential reads: it stays at the segment being read until the run has
// read a reorder window's bytes (a region query, a short run, mostly ends
// before that), then widens by one segment every rampReads
// reads up to the file's readahead, so that a reader streaming the whole
// file keeps every worker busy without region queries paying for
// containers they never read. Reads that arrive slightly out of
// order (the kernel's concurrent readahead requests) keep the run going,
// and a read near where the run before a jump ended resumes that run
// (jump).
func (v *VirtualBAM) noteRead(l *layout.Layout, off, end int64) {
	v.mu.Lock()
	win := v.m.reorder
	near := v.cur.near(off, win)
	fresh := false
	if !near {
		fresh = !v.jump(off, win)
	}
	// A read that ends beyond every read of the run so far continues it,
	// in order or not: the kernel's concurrent readahead requests arrive
	// in any order, and counting only the one that starts where the last
	// ended left the window small, or the readahead idle, when they did.
	seq := !fresh && (off == v.cur.end || v.cur.near(off, win) && end > v.cur.end)
	if seq {
		v.cur.reads++
	}
	v.cur.end = max(v.cur.end, end)
	run, short, runFrom := v.cur.reads, end-v.cur.from < win, v.cur.from
	segs := l.Segments
	// The segment read is in use: a jump, or a read going back, restarts
	// the count of segments the run has passed from it. Only a jump
	// starts a new run (another reader, or a seek): reads going back a
	// little are the kernel's readahead requests arriving out of order.
	var abandoned []context.CancelFunc
	cur := sort.Search(len(segs), func(i int) bool { return segs[i].End() > off })
	if !near || cur < v.passed {
		v.passed = cur
		if !near {
			v.runID++
			abandoned = v.abandonAhead(cur, sort.Search(len(segs), func(i int) bool { return segs[i].End() >= end }))
		}
	}
	runID := v.runID
	from := v.passed
	for v.passed < len(segs) && segs[v.passed].End() <= off-win {
		v.passed++
	}
	to := v.passed
	v.mu.Unlock()
	cancelAll(abandoned)
	v.leaveBehind(from, to)
	if fresh {
		v.buildReach(l, cur, off, runID)
	}
	// Only with room for it beside a full window, the segment being read
	// and one passed: else the tail pushes out a segment the reader needs,
	// and a reader not checking the EOF block builds the tail twice.
	if off == 0 && v.readahead > 0 && v.m.segmentsThatFit(v.maxSeg) > v.readahead+2 {
		next := noNext
		if v.m.keepsFile(v.size, v.maxSeg, v.readahead) {
			next = secondSegment(l, win)
		}
		v.prefetchTail(l, runID, next)
	}
	if !seq || v.readahead == 0 {
		return
	}
	window := v.readahead
	if v.m.opts.Readahead == 0 {
		window = min(window, 1+run/rampReads, v.regionWindow(l, runFrom, end))
		if short {
			window = 1
		}
	}
	// The window (the segment read counts) holds fewer segments than the
	// cache can keep beside the decoders, one being left for the segment
	// just passed or one finishing as the next starts: built ahead of a
	// cache too small for them, segments push out the one being read or
	// each other, and are built again.
	window = min(window, v.m.segmentsThatFit(v.maxSeg)-1)
	i := sort.Search(len(segs), func(i int) bool { return segs[i].End() > end })
	v.prefetchSegments(segs, i, window, math.MaxInt64, runID)
}

// prefetchSegments prefetches, for the run of reads runID, the first n
// segments from i on that hold records and begin before before.
func (v *VirtualBAM) prefetchSegments(segs []layout.Segment, i, n int, before int64, runID uint64) {
	for ; i < len(segs) && n > 0 && segs[i].Offset < before; i++ {
		if segs[i].CompLen == 0 {
			continue
		}
		n--
		v.prefetch(segs[i], i, runID, noNext)
	}
}

// linearWindow is the stretch of reference a BAI's linear index gives
// one offset (SAMv1 §5.1.3): 16 kb.
const linearWindow = 1 << 14

// buildReach starts, at a jump to off past the file's first record (a
// region query), the builds of the segments after off's that its reader
// will more likely than not read before it reaches its region. A reader
// of a BAI starts at the linear index's offset for the region's 16 kb
// window and reads every record from there: on average half a window's
// bytes before its region begins, its region's after. In a file deep
// enough that half a window runs past the segment, the reader otherwise
// built the next segment only once it came to it, the kernel asking for a
// page only after the one before arrived: one build after the other,
// each waited for. At the density of off's segment (its bytes over the
// reference bases its container spans, source.Spanner), the segments
// that start before off plus half a window build now, at most Threads-1
// (the read builds off's itself), and none when the cache could not hold
// them beside the segment read and one passed.
// i is the segment that holds off.
func (v *VirtualBAM) buildReach(l *layout.Layout, i int, off int64, runID uint64) {
	sp, ok := v.src.(source.Spanner)
	segs := l.Segments
	if !ok || i >= len(segs) || off <= segs[0].Offset || segs[i].CompLen == 0 {
		return
	}
	span, ok := sp.ContainerSpan(i)
	if !ok {
		return
	}
	reach := off + reachBytes(segs[i].CompLen, span)
	room := min(v.m.opts.Threads-1, v.m.segmentsThatFit(v.maxSeg)-2)
	v.prefetchSegments(segs, i+1, room, reach, runID)
}

// reachBytes is half a linear-index window's bytes in a segment of
// compLen bytes whose container spans span reference bases.
func reachBytes(compLen, span int64) int64 {
	if span <= 0 {
		return 0
	}
	return int64(float64(compLen) * linearWindow / 2 / float64(span))
}

// readRun is a run of reads of a VirtualBAM: where its first read began,
// the furthest end of its reads (-1: no run), and how many of its reads
// continued it.
type readRun struct {
	from, end int64
	reads     int
}

// noRun is the readRun before any read.
var noRun = readRun{end: -1}

// near reports whether a read at off lies within win of the run's
// furthest end.
func (r readRun) near(off, win int64) bool {
	return r.end >= 0 && off >= r.end-win && off <= r.end+win
}

// jump moves v to the run of a read at off away from the current run, and
// reports whether that resumed the run the previous jump left (a read near
// where it ended) rather than beginning a new one. htslib reads a BAM's
// first bytes, then the EOF block at the file's end, then goes on from
// where it stopped: resumed, that reader of the whole file keeps the run
// it began at the file's start, and its readahead. The run jumped from is
// the one a later jump may resume. Under v.mu.
func (v *VirtualBAM) jump(off, win int64) bool {
	from := v.cur
	resumed := v.left.near(off, win)
	if resumed {
		v.cur = v.left
	} else {
		v.cur = readRun{from: off, end: off}
	}
	v.left = from
	return resumed
}

// leaveBehind has segments [from, to), which the run of reads has left
// behind, leave the cache first. A sequential reader does not come back
// soon for them, and through the mount the kernel keeps what it was
// served in its page cache (files are opened with FOPEN_KEEP_CACHE) while
// it has room. When the cache can hold the whole file they are demoted:
// they stay for a later read of the file, which the page cache may have
// let go, while the budget has room, but leave before the segments not
// passed (those of region queries, headers, the window ahead), so that a
// streamed file does not push those out. Else they leave now, their
// storage going to the next segment built: the cache would evict the
// first segments of a file larger than it before a second read came back
// to them, and keeping them would only fill the budget with fresh pages.
func (v *VirtualBAM) leaveBehind(from, to int) {
	if from >= to {
		return
	}
	keep := v.m.keepsFile(v.size, v.maxSeg, v.readahead)
	for j := from; j < to; j++ {
		k := cache.Key{File: v.id, Segment: j}
		if keep {
			v.m.cache.Demote(k)
		} else {
			v.m.cache.Remove(k)
		}
	}
}

// aheadNext is a segment that a build ahead starts building once it is
// done itself; i is -1 for none.
type aheadNext struct {
	seg layout.Segment
	i   int
}

// noNext is the aheadNext of a build ahead that starts no other.
var noNext = aheadNext{i: -1}

// secondSegment returns the segment after the first one a reader opening
// the file reads, when that first one holds at least win bytes: the run
// cannot read a reorder window's bytes, which opens the readahead window,
// before that segment is built, so the next one would not be built before
// the reader asks for it, and a second worker would idle meanwhile (files
// of long reads, whose containers are about 10 MiB of BAM). Else noNext.
// noteRead asks only when the cache keeps the whole file (keepsFile): a
// region query, which opens the file too, then builds one segment it may
// not need, once; of a file larger than the cache it could build it again
// at every open.
func secondSegment(l *layout.Layout, win int64) aheadNext {
	segs := l.Segments
	first := 0
	for first < len(segs) && segs[first].CompLen == 0 {
		first++
	}
	if first >= len(segs) || segs[first].CompLen < win {
		return noNext
	}
	for i := first + 1; i < len(segs); i++ {
		if segs[i].CompLen > 0 {
			return aheadNext{seg: segs[i], i: i}
		}
	}
	return noNext
}

// prefetchTail builds in the background the segments of the page before
// the EOF block, which a reader opening the file (the read at offset 0)
// reads next when it checks the EOF block, as htslib does: their build
// then overlaps the first segment's rather than following it. The last of
// them, once built, builds next (secondSegment): after the tail, which
// keeps its place before it, since workers take a reader's lowest segment
// first and the reader checking the EOF block would wait for next's build.
func (v *VirtualBAM) prefetchTail(l *layout.Layout, runID uint64, next aheadNext) {
	eof := l.EOFOffset()
	from := max(eof&^(tailPage-1), l.Header.CompLen)
	segs := l.Segments
	started := false
	for i := len(segs) - 1; i >= l.SegmentAt(from); i-- {
		if segs[i].Offset >= eof || segs[i].CompLen == 0 {
			continue
		}
		if v.prefetch(segs[i], i, runID, next) {
			started, next = true, noNext
		}
	}
	if !started && next.i >= 0 {
		v.prefetch(next.seg, next.i, runID, noNext)
	}
}

// prefetch builds segment i (want) in the background, for the run of reads
// runID, unless it is cached or already being prefetched, and once built
// prefetches next (see nextAhead); it reports whether it started the build.
func (v *VirtualBAM) prefetch(want layout.Segment, i int, runID uint64, next aheadNext) bool {
	if v.m.ctx.Err() != nil || v.m.cache.Contains(cache.Key{File: v.id, Segment: i}) {
		return false
	}
	ctx, ok := v.startAhead(i)
	if !ok {
		return false
	}
	if !v.m.startBackground() {
		v.doneAhead(i)
		return false
	}
	// The build's place among v's is taken here, in the order noteRead
	// asks for segments: the goroutines run in any order, the last one
	// started often first, and would otherwise take free workers so.
	v.m.workers.claim(&v.party, i)
	go v.buildAhead(ctx, want, i, runID, next)
	return true
}

// buildAhead is prefetch's goroutine, one of those Manager.Close waits for;
// ctx ends when the build is abandoned (see abandonAhead).
func (v *VirtualBAM) buildAhead(ctx context.Context, want layout.Segment, i int, runID uint64, next aheadNext) {
	defer v.m.background.Done()
	if next.i >= 0 {
		defer v.nextAhead(next, runID) // last: once i is no longer ahead
	}
	defer v.doneAhead(i)
	defer v.m.workers.unclaim(&v.party, i) // if it built nothing itself
	// The reader may have overtaken this goroutine before it ran:
	// a segment it has left behind is not built again, and one it
	// passed during the build leaves first, as noteRead has it. The check
	// is made again where the build would start, under the lock the
	// cache lookup takes: the reader may build, read and drop the
	// segment between a check here and the lookup.
	if ctx.Err() != nil || v.behind(i, runID) {
		return
	}
	b, err := v.segmentUnless(ctx, want, i, func() bool { return v.behind(i, runID) })
	if err != nil {
		if !errors.Is(err, context.Canceled) && !errors.Is(err, errSkipped) {
			v.m.log.Debug("readahead failed", "file", v.src.Name(), "segment", i, "err", err)
		}
		return
	}
	b.Release()
	if v.behind(i, runID) {
		v.leaveBehind(i, i+1)
	}
}

// nextAhead is buildAhead's prefetch of next, while the run of reads
// runID goes on and has not passed it.
func (v *VirtualBAM) nextAhead(next aheadNext, runID uint64) {
	v.mu.Lock()
	current := runID == v.runID && next.i >= v.passed
	v.mu.Unlock()
	if current {
		v.prefetch(next.seg, next.i, runID, noNext)
	}
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
