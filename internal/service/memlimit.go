package service

import (
	"os"
	"runtime/debug"
	"sync"

	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/engine/layout"
)

// memoryLimit keeps the Go heap near the cache budget plus a constant
// (see limitBytes). Without a limit the collector lets the heap grow to
// twice the live data, which is mostly cache and decoder buffers, so RSS
// would be about twice the cache budget. GOMEMLIMIT, when set, wins.
type memoryLimit struct {
	// constant
	cacheSize int64
	threads   int
	decoders  *cram.DecoderPool

	mu     sync.Mutex // guards maxRaw and the limit set
	maxRaw int64      // largest segment's BAM bytes seen so far
}

func newMemoryLimit(cacheSize int64, threads int, decoders *cram.DecoderPool) *memoryLimit {
	m := &memoryLimit{cacheSize: max(cacheSize, 0), threads: threads, decoders: decoders}
	decoders.OnChange(m.apply)
	m.apply()
	return m
}

// noteLayout raises the limit for a file with larger containers.
func (m *memoryLimit) noteLayout(l layout.Layout) {
	var raw int64
	for _, s := range l.Segments {
		raw = max(raw, s.RawLen)
	}
	m.mu.Lock()
	grew := raw > m.maxRaw
	m.maxRaw = max(m.maxRaw, raw)
	m.mu.Unlock()
	if grew {
		m.apply()
	}
}

func (m *memoryLimit) apply() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	total, counted := m.decoders.Footprint()
	debug.SetMemoryLimit(limitBytes(m.cacheSize, m.threads, m.maxRaw, total-counted))
}

// limitHeadroom is the Go memory a mount needs beyond its cache budget:
// the runtime and FUSE buffers, a free segment buffer kept for the next
// build, and room for the collector to work in; each worker adds
// workerHeadroom for its codecs' tables (tok3, bzip2, rANS, fqzcomp: up to
// about 20 MiB for CRAM 3.1 archive containers). What the limit does not
// cover (the binary's pages, reference pages being read: 7-10 MiB) keeps
// a two-worker mount's RSS within the cache budget plus 150 MiB.
const (
	limitHeadroom  = 96 << 20
	workerHeadroom = 20 << 20
)

// limitBytes is the Go memory limit of a mount: the cache budget, which
// covers the segments kept, the builds in flight and the decoders' buffers
// (up to half of it, see engine.Manager.CountDecoders), plus the headroom
// and the decoder memory the cache could not take. With no cache or a
// small one, the builds in flight (one container's BAM per worker, maxRaw
// bytes at most) take the cache's place. A limit below the live heap makes
// the collector run without pause, so every term is memory that is live.
func limitBytes(cacheSize int64, threads int, maxRaw, uncountedDecoders int64) int64 {
	return max(cacheSize, int64(threads)*maxRaw) + limitHeadroom + int64(threads)*workerHeadroom + max(uncountedDecoders, 0)
}
