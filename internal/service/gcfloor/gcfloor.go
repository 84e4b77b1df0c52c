// Package gcfloor gives the Go collector a heap floor: it does not run
// while the heap holds less than the floor, and beyond it paces as GOGC
// says. A short command that ends with a few tens of MB of heap otherwise
// collects several times while its heap grows from the runtime's 4 MB
// start, with its workers waiting at each cycle's phases; the floor takes
// those cycles away and leaves the bound on a large heap as it was (twice
// the live heap at GOGC=100, and the memory limit, which still caps it).
//
// The floor is kept by the GC percent: after each cycle it is set so that
// the next goal, the live heap times 1 + percent/100, is the floor or the
// user's pacing, whichever is larger.
package gcfloor

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// minHeap is the runtime's smallest heap goal at GOGC=100 (its
// heapMinimum): before the first cycle the goal is minHeap × percent/100.
const minHeap = 4 << 20

// maxPercent bounds the percent set: a floor over a live heap this many
// hundredths smaller is not kept exactly (the goal stays 1 + maxPercent/100
// times the live heap).
const maxPercent = 100_000

// floor is the process's floor, set once by Set.
type floor struct {
	// Constant after Set.
	bytes uint64
	base  int // the percent the user's pacing asks (100 unless changed)
}

var (
	once    sync.Once
	current *floor
)

// Set keeps the heap goal at least bytes from now on, for the whole
// process; only the first call counts. It does nothing when GOGC is set
// (the user paces the collector) or when the collector is off.
func Set(bytes uint64) {
	once.Do(func() {
		if os.Getenv("GOGC") != "" {
			return
		}
		base := debug.SetGCPercent(100)
		debug.SetGCPercent(base)
		if base < 0 {
			return
		}
		current = &floor{bytes: bytes, base: base}
		current.tune(liveHeap())
		current.arm()
	})
}

// percent is the GC percent whose next goal, over a live heap of live
// bytes, is f.bytes, or f.base when that asks more.
func (f *floor) percent(live uint64) int {
	live = max(live, minHeap)
	if live >= f.bytes {
		return f.base
	}
	p := (f.bytes-live)*100/live + 1
	return max(f.base, int(min(p, maxPercent)))
}

// tune sets the GC percent for a live heap of live bytes. It runs at Set
// and then on the runtime's cleanup goroutine, one call at a time.
func (f *floor) tune(live uint64) {
	debug.SetGCPercent(f.percent(live))
}

// sentinel is an object whose cleanup marks the end of a GC cycle. It is
// larger than the runtime's tiny allocations, which share a block with
// others and so may stay reachable.
type sentinel struct{ _ [32]byte }

// arm makes the end of the next GC cycle tune the percent and arm again.
func (f *floor) arm() {
	runtime.AddCleanup(new(sentinel), func(f *floor) {
		f.tune(liveHeap())
		f.arm()
	}, f)
}

// liveHeap is the heap the last GC cycle marked live (0 before the first).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
