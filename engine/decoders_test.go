package engine

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cramfs/cramfs/engine/states"
)

// TestStreamingFitsTheCacheLeftByDecoders streams a file through managers
// whose cache, once the decoders are counted in it, holds only a few of
// its segments, and checks that every container is decoded once: the
// readahead window shrinks to what fits, and the decoders' share leaves
// room for three segments. A window built ahead regardless pushed out the
// segment being read, which every later read then built again (the 3.1
// archive file took 42 s to stream with a 64 MiB cache, and 43 s with four
// threads and the default cache, instead of 4).
func TestStreamingFitsTheCacheLeftByDecoders(t *testing.T) {
	// Segments of one size: with the fixture's usual mix of sizes, a
	// window sized by the largest fits the cache anyway.
	fx := fixture(t, "synth")
	probe, _ := newTestManager(t, Options{})
	seg := openT(t, probe, evenSource(fx, 100)).maxSeg // 120 segments of about 14 KB
	for _, tc := range []struct {
		name      string
		cacheSize int64
		threads   int
	}{
		{"two segments", 2*seg + seg/4, 2},
		{"four segments", 4*seg + seg/4, 2},
		{"six segments, four threads", 6*seg + seg/4, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := evenSource(fx, 100)
			m, _ := newTestManager(t, Options{Threads: tc.threads, CacheSize: tc.cacheSize})
			// The fixture is smaller than the reorder window: scaled down,
			// segments the reader has passed count as passed, as on real
			// files, and readahead queued for them is dropped.
			m.reorder = 4 << 10
			pool := &fixedDecoders{total: 100 * seg} // decoders as large as the archive's, relative to the cache
			m.CountDecoders(pool)
			v := openT(t, m, src)
			if _, counted := pool.Footprint(); counted > max(0, tc.cacheSize-3*seg) {
				t.Fatalf("decoders take %d bytes of a %d-byte cache; three %d-byte segments no longer fit", counted, tc.cacheSize, seg)
			}
			before := decodeCounts(src)
			// Reads smaller than a segment, as the mount's are on real
			// files: a read that spans several segments builds them in
			// turn, and those may push out the last one, prefetched first.
			readAll(t, v, 1<<10)
			checkDecodedOnce(t, src, before)
			m.checkInvariants(t, v)
		})
	}
}

// evenSource serves fx in containers of n records each, so that its
// segments are of about the same size.
func evenSource(fx *bamFixture, n int) *fakeSource {
	s := &fakeSource{name: fx.path, header: fx.header}
	for i := 0; i < len(fx.recs); i += n {
		var c []byte
		for _, r := range fx.recs[i:min(i+n, len(fx.recs))] {
			c = append(c, r...)
		}
		s.conts = append(s.conts, c)
	}
	s.decodes = make([]atomic.Int64, len(s.conts))
	return s
}

// fixedDecoders is a pool of decoders of a fixed footprint (Decoders),
// counted like a cram.DecoderPool: up to the bound it is given.
type fixedDecoders struct {
	total int64

	mu      sync.Mutex
	budget  states.Reserver
	counted int64
}

func (p *fixedDecoders) Count(b states.Reserver, maxBytes int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.budget != nil {
		p.budget.Unreserve(p.counted)
	}
	p.budget, p.counted = b, min(p.total, max(maxBytes, 0))
	b.Reserve(p.counted)
}

func (p *fixedDecoders) Footprint() (total, counted int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total, p.counted
}
