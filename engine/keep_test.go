package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cramfs/cramfs/cache"
)

// waitBackground waits for the builds ahead m started to end.
func waitBackground(t *testing.T, m *Manager) {
	t.Helper()
	m.background.Wait()
}

// TestRereadFromCache reads a file sequentially twice through a cache
// larger than it: the segments the first pass left behind stay cached, so
// the second pass builds nothing and finds every segment it reads.
func TestRereadFromCache(t *testing.T) {
	m, v, src, want := buildOnceSetup(t, 16<<10)
	if got := readAll(t, v, 4096); !bytes.Equal(got, want) {
		t.Fatal("first pass: wrong bytes")
	}
	waitBackground(t, m)
	first, before := m.CacheStats(), decodeCounts(src)
	if got := readAll(t, v, 4096); !bytes.Equal(got, want) {
		t.Fatal("second pass: wrong bytes")
	}
	waitBackground(t, m)
	st := m.CacheStats()
	for i, n := range decodeCounts(src) {
		if n != before[i] {
			t.Errorf("container %d decoded again by the second pass", i)
		}
	}
	if st.Adds != first.Adds || st.Misses != first.Misses || st.Evictions != 0 {
		t.Errorf("second pass: %d segments built, %d misses, %d evictions; want none (first pass: %+v)",
			st.Adds-first.Adds, st.Misses-first.Misses, st.Evictions, first)
	}
	if st.Hits <= first.Hits {
		t.Errorf("second pass: no cache hits (%d before, %d after)", first.Hits, st.Hits)
	}
}

// TestPassedSegmentsWithinBudget streams a file twice through caches
// that can and cannot hold it whole: the segments kept, the builds and the
// free storage never exceed the budget and the bytes are right; a cache
// that holds the file keeps every segment, one that does not lets the
// passed segments go at once, their storage going to the next builds.
func TestPassedSegmentsWithinBudget(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	ref, _ := newTestManager(t, Options{CacheSize: -1, Readahead: -1})
	rv := openT(t, ref, src)
	want := readAll(t, rv, 1<<20)
	size, seg := int64(len(want)), rv.maxSeg
	for _, tc := range []struct {
		name  string
		cache int64
		whole bool // the cache can hold the file (keepsFile)
	}{
		{"a quarter of the file", size / 4, false},
		{"the file and a window", size + size/8 + 8*seg + 1<<20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newTestManager(t, Options{Threads: 2, CacheSize: tc.cache, Readahead: 2})
			m.reorder = 16 << 10
			v := openT(t, m, src)
			if got := m.keepsFile(v.size, v.maxSeg, v.readahead); got != tc.whole {
				t.Fatalf("keepsFile(%d, %d, %d) = %v with a %d-byte cache, want %v", v.size, v.maxSeg, v.readahead, got, tc.cache, tc.whole)
			}
			stop, over := watchBudget(m)
			for pass := range 2 {
				if got := readAll(t, v, 4096); !bytes.Equal(got, want) {
					t.Fatalf("pass %d: wrong bytes", pass)
				}
			}
			waitBackground(t, m)
			close(stop)
			if msg, ok := <-over; ok {
				t.Errorf("cache over its budget: %s", msg)
			}
			st := m.CacheStats()
			segs := v.Layout().Segments
			built := 1 // the header
			for _, s := range segs {
				if s.CompLen > 0 {
					built++
				}
			}
			if tc.whole && st.Entries != built {
				t.Errorf("%d segments cached after reading a file of %d that fits: %+v", st.Entries, built, st)
			}
			if !tc.whole && (st.Entries > len(segs)/4 || m.pool.Reused() == 0) {
				t.Errorf("%d of %d segments still cached, %d builds reused storage: %+v", st.Entries, len(segs), m.pool.Reused(), st)
			}
		})
	}
}

// watchBudget checks m's cache against its budget every millisecond until
// stop is closed; over then yields the stats of the first excess, if any.
func watchBudget(m *Manager) (stop chan struct{}, over chan string) {
	stop, over = make(chan struct{}), make(chan string, 1)
	go func() {
		defer close(over)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if st := m.CacheStats(); st.Bytes+st.Reserved+st.Free > st.MaxBytes {
				over <- fmt.Sprintf("%+v", st)
				return
			}
		}
	}()
	return stop, over
}

// TestStreamKeepsOthersSegments reads every segment of one file out of
// order, then streams another through a cache that holds either file but
// not both: the passed segments of the stream leave first, the other
// file's stay.
func TestStreamKeepsOthersSegments(t *testing.T) {
	fx := fixture(t, "synth")
	stream := newFakeSource(fx, "")
	ref, _ := newTestManager(t, Options{CacheSize: -1, Readahead: -1})
	rv := openT(t, ref, stream)
	size, seg := rv.Size(), rv.maxSeg
	other := newFakeSource(fx, copyFile(t, fx.path))
	// Room for the file, its window and the files' states (a few KiB).
	m, _ := newTestManager(t, Options{Threads: 2, CacheSize: size + size/16 + 6*(seg+seg/16) + 64<<10, Readahead: 2})
	m.reorder = 16 << 10
	vo, vs := openT(t, m, other), openT(t, m, stream)
	if states, _ := m.states.Stats(); !m.keepsFile(vs.size, vs.maxSeg, vs.readahead) {
		t.Fatalf("a %d-byte cache with %d bytes of file states cannot hold a file of %d bytes and its window", m.opts.CacheSize, states, size)
	}
	segs := vo.Layout().Segments
	p := make([]byte, 1)
	var read []int
	for _, i := range rand.New(rand.NewPCG(5, 6)).Perm(len(segs)) {
		if segs[i].CompLen == 0 {
			continue
		}
		if _, err := vo.ReadAt(p, segs[i].Offset); err != nil {
			t.Fatal(err)
		}
		read = append(read, i)
	}
	readAll(t, vs, 4096)
	waitBackground(t, m)
	if st := m.CacheStats(); st.Evictions == 0 {
		t.Fatalf("no evictions streaming a file into a cache full of another: %+v", st)
	}
	lost := 0
	for _, i := range read {
		if !m.cache.Contains(cache.Key{File: vo.id, Segment: i}) {
			lost++
		}
	}
	if lost > 0 {
		t.Errorf("%d of the %d segments of the file read out of order left the cache for the stream: %+v", lost, len(read), m.CacheStats())
	}
}

// copyFile copies the file at path into a new temporary directory and
// returns the copy's path.
func copyFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestMissesCountReads reads a file once without readahead, so that every
// segment is looked up by one read and built for it: the cache counts one
// miss per segment built (the build's own look again, for a segment
// cached meanwhile, is no second lookup), and a second pass only hits.
func TestMissesCountReads(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	m, _ := newTestManager(t, Options{CacheSize: 1 << 30, Readahead: -1})
	v := openT(t, m, src)
	readAll(t, v, 1<<20)
	waitBackground(t, m)
	st := m.CacheStats()
	if st.Adds == 0 || st.Misses != st.Adds {
		t.Errorf("first pass: %d misses for %d segments built; want one each", st.Misses, st.Adds)
	}
	readAll(t, v, 1<<20)
	waitBackground(t, m)
	if again := m.CacheStats(); again.Misses != st.Misses || again.Adds != st.Adds || again.Hits <= st.Hits {
		t.Errorf("second pass: misses %d -> %d, built %d -> %d, hits %d -> %d; want only hits",
			st.Misses, again.Misses, st.Adds, again.Adds, st.Hits, again.Hits)
	}
}
