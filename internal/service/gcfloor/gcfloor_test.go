package gcfloor

import (
	"runtime"
	"runtime/metrics"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	f := &floor{bytes: 64 << 20, base: 100}
	for _, c := range []struct {
		live uint64
		want int
	}{
		{0, 1501},             // before the first cycle: goal minHeap × 15.01
		{4 << 20, 1501},       // 4 MB × 16.01: the floor
		{16 << 20, 301},       // 16 MB × 4.01
		{32 << 20, 101},       // twice the live heap is the floor: GOGC's own
		{40 << 20, 100},       // GOGC's goal is over the floor
		{64 << 20, 100},       // at the floor
		{1 << 30, 100},        // far over it
		{(64 << 20) - 1, 100}, // one byte under
	} {
		if got := f.percent(c.live); got != c.want {
			t.Errorf("percent(%d) = %d, want %d", c.live, got, c.want)
		}
	}
	// A user's GOGC above what the floor asks wins.
	if got := (&floor{bytes: 64 << 20, base: 2000}).percent(4 << 20); got != 2000 {
		t.Errorf("base 2000: percent = %d, want 2000", got)
	}
	// A floor far over the live heap is capped.
	if got := (&floor{bytes: 1 << 50, base: 100}).percent(0); got != maxPercent {
		t.Errorf("huge floor: percent = %d, want %d", got, maxPercent)
	}
}

// testFloor is the floor this test binary sets (Set counts once).
const testFloor = 16 << 20

func read(name string) uint64 {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func gogc() int { return int(read("/gc/gogc:percent")) }

// settle runs a collection and, with a floor set, runs more until the
// percent is what the floor asks for the live heap the last one marked:
// the cleanup that sets it runs on its own goroutine after a cycle ends,
// and may read the cycle before.
func settle(t *testing.T) {
	t.Helper()
	runtime.GC()
	if current == nil {
		return
	}
	deadline := time.Now().Add(10 * time.Second)
	for gogc() != current.percent(liveHeap()) {
		if time.Now().After(deadline) {
			t.Fatalf("GC percent %d, want %d, after collections for 10 s", gogc(), current.percent(liveHeap()))
		}
		time.Sleep(time.Millisecond)
		runtime.GC()
	}
}

var sink []byte

// TestFloorHoldsCollections: with the floor set, half of it allocated as
// garbage over a small live heap starts no GC cycle; at GOGC's own pacing
// (the goal twice the live heap, at least 4 MB) it starts some.
func TestFloorHoldsCollections(t *testing.T) {
	t.Setenv("GOGC", "")
	runtime.GC()
	Set(testFloor)
	settle(t)
	if live := liveHeap(); live > testFloor/4 {
		t.Fatalf("live heap %d: too large a start for this test", live)
	}
	before := read("/gc/cycles/total:gc-cycles")
	for range (testFloor / 2) >> 16 {
		sink = make([]byte, 64<<10)
	}
	if n := read("/gc/cycles/total:gc-cycles") - before; n != 0 {
		t.Errorf("%d GC cycles while allocating %d bytes of garbage under a floor of %d (percent %d)", n, testFloor/2, testFloor, gogc())
	}
}

// TestLargeHeapKeepsPacing: once the live heap is over the floor, the
// percent is GOGC's again, so a large heap is bounded as before; when it
// falls back under, the floor holds again.
func TestLargeHeapKeepsPacing(t *testing.T) {
	t.Setenv("GOGC", "")
	Set(testFloor)
	live := make([][]byte, 0, 2*testFloor>>16)
	for range cap(live) {
		live = append(live, make([]byte, 64<<10))
	}
	settle(t)
	if p := gogc(); p != 100 {
		t.Errorf("percent %d over a live heap of %d, want 100", p, liveHeap())
	}
	runtime.KeepAlive(live)
	live = nil
	settle(t)
	if p := gogc(); p <= 100 {
		t.Errorf("percent %d over a live heap of %d, want more than 100", p, liveHeap())
	}
}
