package engine

import (
	"bytes"
	"fmt"
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

// TestKeptSegmentsStayWithinBudget streams a file several times larger
// than the cache, twice: the segments kept, the builds and the free
// storage never exceed the budget, old segments make room for new ones,
// and the bytes are right.
func TestKeptSegmentsStayWithinBudget(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	ref, _ := newTestManager(t, Options{CacheSize: -1, Readahead: -1})
	want := readAll(t, openT(t, ref, src), 1<<20)
	budget := int64(len(want) / 4)
	m, _ := newTestManager(t, Options{Threads: 2, CacheSize: budget})
	m.reorder = 16 << 10
	v := openT(t, m, src)
	stop, over := make(chan struct{}), make(chan string, 1)
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
	if st.Evictions == 0 {
		t.Errorf("no evictions streaming a file 4 times the cache: %s", fmt.Sprintf("%+v", st))
	}
	if st.Bytes+st.Reserved+st.Free > st.MaxBytes {
		t.Errorf("cache over its budget at rest: %s", fmt.Sprintf("%+v", st))
	}
	if m.pool.Reused() == 0 {
		t.Error("no build reused the storage of an evicted segment")
	}
}

// TestStreamKeepsOthersSegments reads a few segments of one file out of
// order, then streams another through a cache it overflows: the passed
// segments of the stream leave first, the other file's stay.
func TestStreamKeepsOthersSegments(t *testing.T) {
	fx := fixture(t, "synth")
	stream := newFakeSource(fx, "")
	ref, _ := newTestManager(t, Options{CacheSize: -1, Readahead: -1})
	size := openT(t, ref, stream).Size()
	other := newFakeSource(fx, copyFile(t, fx.path))
	m, _ := newTestManager(t, Options{Threads: 2, CacheSize: size / 3})
	m.reorder = 16 << 10
	vo, vs := openT(t, m, other), openT(t, m, stream)
	segs := vo.Layout().Segments
	var kept []int
	p := make([]byte, 1)
	for i := len(segs) / 2; i < len(segs) && len(kept) < 3; i += len(segs) / 8 {
		if segs[i].CompLen == 0 {
			continue
		}
		if _, err := vo.ReadAt(p, segs[i].Offset); err != nil {
			t.Fatal(err)
		}
		kept = append(kept, i)
	}
	readAll(t, vs, 4096)
	waitBackground(t, m)
	if st := m.CacheStats(); st.Evictions == 0 {
		t.Fatalf("no evictions streaming a file 3 times the cache: %+v", st)
	}
	for _, i := range kept {
		if !m.cache.Contains(cache.Key{File: vo.id, Segment: i}) {
			t.Errorf("segment %d of the file read out of order left the cache for the stream", i)
		}
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
