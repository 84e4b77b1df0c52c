package engine

import (
	"context"
	"testing"

	"github.com/cramfs/cramfs/engine/layout"
	"github.com/cramfs/cramfs/fs"
)

// TestReorderWindowCoversKernelReadahead: through a mount, the kernel
// reads ahead of a sequential reader in requests of fs.DefaultMaxRead, up
// to fs.DefaultMaxReadAhead of them in flight, which reach the engine in
// any order. Each window of requests arriving last first (the worst
// order), the reads stay one run: no restart of the readahead's ramp, no
// cancelled readahead.
func TestReorderWindowCoversKernelReadahead(t *testing.T) {
	m, _ := newTestManager(t, Options{})
	req, ahead := int64(fs.DefaultMaxRead), int64(fs.DefaultMaxReadAhead)
	const windows = 6
	var segs []layout.Segment
	for off := int64(0); off < windows*ahead+req; off += 3 << 20 {
		segs = append(segs, layout.Segment{Offset: off, CompLen: 3 << 20})
	}
	l := &layout.Layout{Segments: segs}
	v := &VirtualBAM{m: m, cur: noRun, left: noRun, ahead: map[int]context.CancelFunc{}}
	v.noteRead(l, 0, req) // the reader's own request starts the run
	first := v.runID
	for w := req; w+ahead <= windows*ahead+req; w += ahead {
		for off := w + ahead - req; off >= w; off -= req {
			v.noteRead(l, off, off+req)
			if v.runID != first {
				t.Fatalf("the request at %d MiB of the window at %d MiB restarted the run (reorder window %d MiB, kernel read-ahead %d MiB)",
					off>>20, w>>20, m.reorder>>20, ahead>>20)
			}
		}
	}
}
