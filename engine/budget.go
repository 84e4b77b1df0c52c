package engine

import (
	"errors"
	"fmt"
	"math"

	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/engine/states"
)

// CountDecoders makes the memory of p's decoders count against the cache
// budget, so that the budget bounds the decoded data of the containers
// being built as well as the BGZF data kept: the cache holds less while
// the decoders are large. They take at most half of the budget, and never
// so much that three of the largest segments opened so far no longer fit
// (the one read and two built ahead): a cache taken over by decoders
// would evict segments before they are read, and rebuild the one being
// read at every read. Call it before opening files.
func (m *Manager) CountDecoders(p Decoders) {
	m.decoders.Store(&decoderBudget{p})
	p.Count(m.cache, m.decoderShare())
}

// Decoders is a pool of decoders whose memory can be counted against a
// budget (cram.DecoderPool).
type Decoders interface {
	// Count makes the decoders' memory count against b, up to maxBytes.
	Count(b states.Reserver, maxBytes int64)
	// Footprint returns the decoders' memory and the part of it counted.
	Footprint() (total, counted int64)
}

// decoderBudget is the Decoders a Manager counts, as one pointer.
type decoderBudget struct{ Decoders }

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
		p.Count(m.cache, m.decoderShare())
	}
}

// segmentsThatFit returns how many segments of size seg the cache can
// hold beside the decoders and the file states counted in it (a segment's storage is a
// sixteenth larger than its bytes, see cache.Pool.Get).
func (m *Manager) segmentsThatFit(seg int64) int {
	if seg <= 0 {
		return math.MaxInt
	}
	return int(m.segmentBudget() / (seg + seg/16))
}

// keepsFile reports whether the cache can hold every segment of a file of
// size bytes beside the decoders and file states counted in it, and
// beside a window of ahead segments built ahead of its reader, the one
// read and one passed, of at most seg bytes each (with the storage's
// sixteenth, see cache.Pool.Get).
func (m *Manager) keepsFile(size, seg int64, ahead int) bool {
	return size+size/16+int64(ahead+2)*(seg+seg/16) <= m.segmentBudget()
}

// segmentBudget is what the cache budget leaves for segments beside the
// decoders and the file states counted in it.
func (m *Manager) segmentBudget() int64 {
	stateBytes, _ := m.states.Stats()
	free := m.opts.CacheSize - stateBytes
	if p := m.decoders.Load(); p != nil {
		_, counted := p.Footprint()
		free -= counted
	}
	return max(free, 0)
}

// explainSize adds to a container refused for its size (source.TooLarge)
// the cache size that would let it be decoded.
func (m *Manager) explainSize(err error) error {
	var se source.TooLarge
	if !errors.As(err, &se) {
		return err
	}
	mib := func(n int64) int64 { return (n + 1<<20 - 1) >> 20 }
	return fmt.Errorf("%w; with %d threads (-@) and a %d MiB cache (--cache-size) a container may take %d MiB to decode: --cache-size %dM would allow this one",
		err, m.opts.Threads, mib(m.opts.CacheSize), mib(m.opts.ContainerMemory()), mib(m.opts.cacheSizeFor(se.NeededMemory())))
}
