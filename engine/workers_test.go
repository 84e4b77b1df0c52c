package engine

import (
	"context"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cramfs/cramfs/engine/source"
)

// startLog records, in order, the container builds that start, of every
// file of a test: with one worker they start one at a time.
type startLog struct {
	mu     sync.Mutex
	starts []string
}

func (l *startLog) add(name string) {
	l.mu.Lock()
	l.starts = append(l.starts, name)
	l.mu.Unlock()
}

// loggedSource is a scanningSource whose builds are logged and, once hold
// is set, wait for release.
type loggedSource struct {
	*scanningSource
	log     *startLog
	tag     string
	hold    atomic.Bool
	release chan struct{}
}

func (s *loggedSource) AppendContainer(ctx context.Context, i int, dst []byte) ([]byte, error) {
	s.log.add(s.tag)
	if s.hold.Load() {
		select {
		case <-s.release:
		case <-ctx.Done():
			return dst, ctx.Err()
		}
	}
	return s.fakeSource.AppendContainer(ctx, i, dst)
}

func (s *loggedSource) ScanLayout(ctx context.Context, i int, each func(source.RecordLayout) error) (int64, source.Sum, error) {
	return measureBuilt(ctx, s, i, each)
}

// waitingForWorkers counts the goroutines waiting in Manager.acquire.
func waitingForWorkers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return strings.Count(string(buf), "engine.(*Manager).acquire(")
}

// awaitWaiting waits until n goroutines wait for a worker (bounded).
func awaitWaiting(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for waitingForWorkers() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines wait for a worker, want %d", waitingForWorkers(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestScanSharesWorkersFairly: with one worker, held by a read of file C
// while six more reads of C wait (a reader streaming C with readahead
// queues as many), the first open of file B (a scan of its containers)
// gets the worker in turn with C's reads, not after all of them.
func TestScanSharesWorkersFairly(t *testing.T) {
	log := &startLog{}
	m, _ := newTestManager(t, Options{Threads: 1, CacheSize: -1, Readahead: -1, Level: Stored})
	c := &loggedSource{scanningSource: &scanningSource{newFakeSource(fixture(t, "synth"), "")}, log: log, tag: "C", release: make(chan struct{})}
	vc := openT(t, m, c)
	segs := vc.Layout().Segments
	log.starts = nil // C's scan
	c.hold.Store(true)
	const reads = 7
	var wg sync.WaitGroup
	for k, n := 0, 0; n < reads; k++ {
		if segs[k].CompLen == 0 {
			continue
		}
		n++
		off := segs[k].Offset
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := vc.ReadAt(make([]byte, 1), off); err != nil {
				t.Error(err)
			}
		}()
		for n == 1 && len(log.snapshot()) == 0 { // the first holds the worker
			time.Sleep(time.Millisecond)
		}
	}
	awaitWaiting(t, reads-1)

	b := &loggedSource{scanningSource: &scanningSource{newFakeSource(fixture(t, "small"), "")}, log: log, tag: "B"}
	nB := b.NumContainers()
	opened := make(chan error, 1)
	go func() {
		_, err := m.Open(context.Background(), b)
		opened <- err
	}()
	awaitWaiting(t, reads)
	close(c.release)
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	starts := log.snapshot()
	t.Logf("order %s", strings.Join(starts, ""))
	if n := strings.Count(strings.Join(starts, ""), "B"); n != nB {
		t.Fatalf("%d builds of B logged, want %d", n, nB)
	}
	// The read holding the worker aside, B's first build comes after at
	// most one of C's, in turn.
	if before := strings.Index(strings.Join(starts[1:], ""), "B"); before > 1 {
		t.Errorf("%d builds of C started before B's first (order %s): the scan waited behind every read of another file", before, strings.Join(starts, ""))
	}
}

func (l *startLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.starts...)
}

// TestTwoScansShareWorkers: with one worker, held by the scan of a big
// file A, the scan of file B takes turns with A's rather than waiting for
// it to end.
func TestTwoScansShareWorkers(t *testing.T) {
	log := &startLog{}
	m, _ := newTestManager(t, Options{Threads: 1, Level: Stored})
	a := &loggedSource{scanningSource: &scanningSource{newFakeSource(fixture(t, "synth"), "")}, log: log, tag: "A", release: make(chan struct{})}
	a.hold.Store(true)
	b := &loggedSource{scanningSource: &scanningSource{newFakeSource(fixture(t, "small"), "")}, log: log, tag: "B"}
	errs := make(chan error, 2)
	go func() { _, err := m.Open(context.Background(), a); errs <- err }()
	awaitWaiting(t, 1) // A's first build holds the worker, its next waits
	go func() { _, err := m.Open(context.Background(), b); errs <- err }()
	awaitWaiting(t, 2)
	close(a.release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	starts := strings.Join(log.snapshot(), "")
	if before := strings.Index(starts[1:], "B"); before > 1 || strings.Count(starts, "B") != b.NumContainers() {
		t.Errorf("order %s: B's scan did not take turns with A's", starts)
	}
}

// TestWorkerPoolCancel: a waiter whose context ends leaves its party's
// queue, the next worker goes to the waiter after it, and no worker is
// lost.
func TestWorkerPoolCancel(t *testing.T) {
	w := newWorkerPool(1)
	var a, b party
	if err := w.acquire(context.Background(), &a, 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := make(chan error)
	go func() { gaveUp <- w.acquire(ctx, &a, 0) }()
	awaitQueued(t, w, 1)
	got := make(chan error)
	go func() { got <- w.acquire(context.Background(), &b, 0) }()
	awaitQueued(t, w, 2)
	cancel()
	if err := <-gaveUp; err == nil {
		t.Fatal("a cancelled waiter got a worker")
	}
	w.release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	w.release()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.free != 1 || len(w.ring) != 0 || a.queued || b.queued {
		t.Fatalf("after every release: %d free, %d parties queued", w.free, len(w.ring))
	}
}

// TestWorkerPoolServesLowestOrderFirst: a party's waiters get workers
// lowest order first (a file's segments as a reader needs them), whatever
// order they came in; equal orders as they came.
func TestWorkerPoolServesLowestOrderFirst(t *testing.T) {
	w := newWorkerPool(1)
	var p party
	if err := w.acquire(context.Background(), &p, 0); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 5)
	arrivals := []struct {
		name  string
		order int
	}{{"seg3", 3}, {"seg1", 1}, {"seg2a", 2}, {"seg5", 5}, {"seg2b", 2}}
	for k, a := range arrivals {
		go func() {
			if err := w.acquire(context.Background(), &p, a.order); err != nil {
				t.Error(err)
			}
			got <- a.name
		}()
		awaitQueued(t, w, k+1)
	}
	var order []string
	for range arrivals {
		w.release()
		order = append(order, <-got)
	}
	w.release()
	if want := []string{"seg1", "seg2a", "seg2b", "seg3", "seg5"}; !slices.Equal(order, want) {
		t.Errorf("workers handed out in the order %v, want %v", order, want)
	}
}

// awaitQueued waits until the parties queued in w hold n waiters (bounded).
func awaitQueued(t *testing.T, w *workerPool, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		w.mu.Lock()
		k := 0
		for _, p := range w.ring {
			k += len(p.waiters)
		}
		w.mu.Unlock()
		if k == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters queued, want %d", k, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// heldFrom is a scanningSource whose containers from the first held on
// wait for release.
type heldFrom struct {
	*scanningSource
	first   int
	release chan struct{}
}

func (s *heldFrom) AppendContainer(ctx context.Context, i int, dst []byte) ([]byte, error) {
	if i >= s.first {
		select {
		case <-s.release:
		case <-ctx.Done():
			return dst, ctx.Err()
		}
	}
	return s.fakeSource.AppendContainer(ctx, i, dst)
}

func (s *heldFrom) ScanLayout(ctx context.Context, i int, each func(source.RecordLayout) error) (int64, source.Sum, error) {
	return measureBuilt(ctx, s, i, each)
}

// TestScansReportProgress: Manager.Scans lists the scan in progress with
// the containers scanned and the file's total, and forgets it once done.
func TestScansReportProgress(t *testing.T) {
	m, _ := newTestManager(t, Options{Threads: 2, Level: Stored})
	src := &heldFrom{scanningSource: &scanningSource{newFakeSource(fixture(t, "small"), "")}, first: 3, release: make(chan struct{})}
	opened := make(chan error, 1)
	go func() { _, err := m.Open(context.Background(), src); opened <- err }()
	want := ScanProgress{File: src.Name(), Done: 3, Total: src.NumContainers()}
	deadline := time.Now().Add(20 * time.Second)
	for {
		got := m.Scans()
		if len(got) == 1 && got[0] == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Scans() = %+v, want [%+v]", got, want)
		}
		time.Sleep(time.Millisecond)
	}
	close(src.release)
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	if got := m.Scans(); len(got) != 0 {
		t.Fatalf("Scans() after the scan = %+v", got)
	}
}

// builtLog is a scanningSource that logs the container of every build.
type builtLog struct {
	*scanningSource
	log startLog
}

func (s *builtLog) AppendContainer(ctx context.Context, i int, dst []byte) ([]byte, error) {
	s.log.add(strconv.Itoa(i))
	return s.fakeSource.AppendContainer(ctx, i, dst)
}

func (s *builtLog) ScanLayout(ctx context.Context, i int, each func(source.RecordLayout) error) (int64, source.Sum, error) {
	return measureBuilt(ctx, s, i, each)
}

// TestReadaheadStartsInSegmentOrder: the segments a sequential read asks
// to be built ahead get workers lowest first, even when a worker is free
// and the goroutine of a later segment runs first (with one P, the
// newest goroutine runs first).
func TestReadaheadStartsInSegmentOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const ahead = 6
	m, _ := newTestManager(t, Options{Threads: 1, Readahead: ahead, Level: Stored})
	src := &builtLog{scanningSource: &scanningSource{newFakeSource(fixture(t, "synth"), "")}}
	v := openT(t, m, src)
	segs := v.Layout().Segments
	src.log.mu.Lock()
	src.log.starts = nil // the scan's
	src.log.mu.Unlock()
	// Not at offset 0, which also builds the tail ahead; the second read
	// continues the first and starts the readahead.
	off := segs[0].Offset
	for k := range 2 {
		if _, err := v.ReadAt(make([]byte, 1), off+int64(k)); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"0"}
	for i, todo := 0, ahead; i < len(segs) && todo > 0; i++ {
		if segs[i].CompLen == 0 {
			continue
		}
		todo--
		if i > 0 {
			want = append(want, strconv.Itoa(i))
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(src.log.snapshot()) < len(want) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := src.log.snapshot(); !slices.Equal(got, want) {
		t.Errorf("segments built in the order %v, want %v", got, want)
	}
}

// TestWorkerPoolClaims: a claim holds back its party's waiters of higher
// orders, even with a worker free, until its acquire comes or it is
// withdrawn; other parties' waiters are not held back.
func TestWorkerPoolClaims(t *testing.T) {
	w := newWorkerPool(1)
	var p, other party
	w.claim(&p, 1)
	w.claim(&p, 2)
	third := make(chan error, 1)
	go func() { third <- w.acquire(context.Background(), &p, 3) }()
	awaitQueued(t, w, 1)
	freeAndQueued := func() (int, int) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.free, len(p.waiters)
	}
	if free, queued := freeAndQueued(); free != 1 || queued != 1 {
		t.Fatalf("%d workers free, %d of p's waiting; want the claims to keep order 3 waiting beside the free worker", free, queued)
	}
	// Another party is not held back.
	if err := w.acquire(context.Background(), &other, 7); err != nil {
		t.Fatal(err)
	}
	w.release()
	w.unclaim(&p, 2) // withdrawn; 1 still holds 3 back
	if free, queued := freeAndQueued(); free != 1 || queued != 1 {
		t.Fatalf("after withdrawing claim 2: %d workers free, %d of p's waiting; want 1 and 1", free, queued)
	}
	// The claim's acquire takes the free worker ahead of order 3.
	if err := w.acquire(context.Background(), &p, 1); err != nil {
		t.Fatal(err)
	}
	w.release()
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	w.release()
	w.unclaim(&p, 5) // never claimed: nothing to do
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.free != 1 || len(w.ring) != 0 || len(p.claims) != 0 || p.queued {
		t.Fatalf("after every release: %d free, %d parties queued, claims %v", w.free, len(w.ring), p.claims)
	}
}
