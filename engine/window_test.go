package engine

import (
	"testing"

	"github.com/cramfs/cramfs/engine/layout"
)

// windowTest is the synth fixture opened for the readahead window tests:
// a Manager of two workers whose reorder window is 16 KiB (the fixture's
// runs are short: windows may grow past it), the file's readahead at
// least 3, and a reader at off.
type windowTest struct {
	t      *testing.T
	src    *fakeSource
	m      *Manager
	v      *VirtualBAM
	lay    layout.Layout
	segs   []layout.Segment
	before []int64 // each segment's decodes by the scan
	p      []byte  // the reads' buffer
	off    int64   // where the next read starts
}

func newWindowTest(t *testing.T) *windowTest {
	src := newFakeSource(fixture(t, "synth"), "")
	m, _ := newTestManager(t, Options{Threads: 2})
	m.reorder = 16 << 10
	v := openT(t, m, src)
	if v.readahead < 3 {
		t.Fatalf("readahead resolved to %d; the test needs at least 3", v.readahead)
	}
	lay := v.Layout()
	return &windowTest{t: t, src: src, m: m, v: v, lay: lay, segs: lay.Segments, before: decodeCounts(src), p: make([]byte, 512)}
}

// built reports whether segment i was decoded since the scan.
func (w *windowTest) built(i int) bool { return w.src.decodes[i].Load() > w.before[i] }

// dataFrom returns the first segment from i on that holds records.
func (w *windowTest) dataFrom(i int) int {
	for w.segs[i].CompLen == 0 {
		i++
	}
	return i
}

// read reads len(w.p) bytes at w.off and moves past them.
func (w *windowTest) read() {
	w.t.Helper()
	if _, err := w.v.ReadAt(w.p, w.off); err != nil {
		w.t.Fatal(err)
	}
	w.off += int64(len(w.p))
}

// done waits for the builds ahead to end and checks the invariants.
func (w *windowTest) done() {
	w.m.settle(w.t, w.v)
	w.m.checkInvariants(w.t, w.v)
}
