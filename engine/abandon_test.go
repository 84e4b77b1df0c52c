package engine

import (
	"testing"
	"time"

	"github.com/cramfs/cramfs/engine/source"
)

// TestJumpAbandonsReadahead: a reader that jumps elsewhere (a region query
// going to its next region) abandons the builds ahead of its previous
// position: those waiting for a worker never build, and the build of its
// new position does not wait behind them.
func TestJumpAbandonsReadahead(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	// The first build ahead holds the only worker until its context ends.
	src.gateIdx, src.gate = 1, make(chan struct{})
	release := openGate(t, src)
	m, _ := newTestManager(t, Options{Threads: 1, Readahead: 3})
	m.reorder = 1 << 10
	v := openT(t, m, src)
	lay := v.Layout()
	segs := lay.Segments
	var ahead []int // the window a run ending in segment 0 builds ahead
	for i := 1; i < len(segs) && len(ahead) < 3; i++ {
		if segs[i].CompLen > 0 {
			ahead = append(ahead, i)
		}
	}
	last := len(segs) - 1
	for segs[last].CompLen == 0 {
		last--
	}
	if len(ahead) < 3 || ahead[0] != 1 || last <= ahead[2] || segs[last].Offset-segs[0].End() < 2*m.reorder {
		t.Fatalf("fixture too short for the test: %d segments", len(segs))
	}
	before := decodeCounts(src) // the scan's
	// Two reads in a row at the end of segment 0: segments 1 (held) and
	// the two after it are built ahead.
	p := make([]byte, 16)
	for _, off := range []int64{segs[0].End() - 32, segs[0].End() - 16} {
		if _, err := v.ReadAt(p, off); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(10 * time.Second); src.decodes[1].Load() == before[1]; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("segment 1 was not built ahead")
		}
	}
	// The jump: its segment must be built without the held build ending.
	done := make(chan error, 1)
	go func() {
		_, err := v.ReadAt(p, segs[last].Offset)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		release()
		<-done
		t.Fatal("the read after a jump waited for the builds ahead of the previous position")
	}
	release()
	if !m.settle(t, v) {
		return
	}
	for _, i := range ahead[1:] {
		if n := src.decodes[i].Load() - before[i]; n != 0 {
			t.Errorf("segment %d, ahead of the position left, built %d times after the jump", i, n)
		}
	}
	m.checkInvariants(t, v)
}

// TestRegionRunWindow: a run of reads that began past the file's first
// record (a region query) has a readahead window of one segment, and one
// more per regionRamp segments read up to one per worker besides the
// segment read, not the whole-file reader's.
func TestRegionRunWindow(t *testing.T) {
	w := newWindowTest(t)
	from := w.dataFrom(1)
	w.off = w.segs[from].Offset + 16
	for range 4 * rampReads * w.v.readahead {
		w.read()
	}
	c := w.lay.SegmentAt(w.off)
	want := min(1+(c-from)/regionRamp, w.m.opts.Threads+1)
	if want >= w.v.readahead {
		t.Fatalf("fixture's segments too small: the run read %d segments", c-from)
	}
	checkWindow(t, w.segs, c, want, w.built)
	w.done()
}

// TestDeepRegionBuildsAhead: a region query that has read two segments
// past the one it began in (a deep region) has the next segment built
// before it gets there, and however far it reads, no more than one
// segment building ahead per worker.
func TestDeepRegionBuildsAhead(t *testing.T) {
	w := newWindowTest(t)
	from := w.dataFrom(1)
	w.off = w.segs[from].Offset + 16
	readTo := func(seg int) int {
		t.Helper()
		for w.lay.SegmentAt(w.off) < seg || w.off-w.segs[from].Offset < w.m.reorder {
			w.read()
		}
		return w.lay.SegmentAt(w.off - 1)
	}
	for _, step := range []struct{ to, window int }{{from + 2, 2}, {from + 12, w.m.opts.Threads + 1}} {
		c := readTo(step.to)
		if c+6 >= len(w.segs) {
			t.Fatalf("fixture too short: %d segments", len(w.segs))
		}
		checkWindow(t, w.segs, c, step.window, w.built)
	}
	w.done()
}

// spannedSource is a fakeSource whose containers each span span reference
// bases (source.Spanner).
type spannedSource struct {
	*fakeSource
	span int64
}

func (s spannedSource) ContainerSpan(int) (int64, bool) { return s.span, true }

// A region query's first read builds the segments its reader will more
// likely than not read before its region (buildReach): in a file dense
// enough that half a 16 kb window of records runs past the segment read,
// the next one builds at the jump; in a sparse one, and from a Source that
// does not know its containers' spans, nothing more is built.
func TestRegionJumpBuildsReach(t *testing.T) {
	for _, tc := range []struct {
		name string
		span int64 // 0: not a Spanner
		want bool
	}{{"dense", 1, true}, {"sparse", 1 << 40, false}, {"no spans", 0, false}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := newFakeSource(fixture(t, "synth"), "")
			var src source.Source = fake
			if tc.span > 0 {
				src = spannedSource{fake, tc.span}
			}
			m, _ := newTestManager(t, Options{Threads: 2})
			v := openT(t, m, src)
			before := decodeCounts(fake)
			segs := v.Layout().Segments
			k := 1
			for segs[k].CompLen < 1024 {
				k++
			}
			next := k + 1
			for next < len(segs) && segs[next].CompLen == 0 {
				next++
			}
			if next == len(segs) {
				t.Fatal("fixture has no segment after the one read")
			}
			p := make([]byte, 256)
			if _, err := v.ReadAt(p, segs[k].Offset+segs[k].CompLen/2); err != nil {
				t.Fatal(err)
			}
			m.settle(t, v)
			if got := fake.decodes[next].Load() > before[next]; got != tc.want {
				t.Errorf("segment %d after a read in segment %d built: %v, want %v", next, k, got, tc.want)
			}
			for i := next + 1; i < len(segs); i++ {
				if fake.decodes[i].Load() > before[i] {
					t.Errorf("segment %d built, beyond Threads-1 segments ahead of %d", i, k)
				}
			}
			m.checkInvariants(t, v)
		})
	}
}
