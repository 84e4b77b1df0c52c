package engine

import (
	"context"
	"slices"
	"sync"
)

// workerPool hands out the Manager's workers (Options.Threads) to the
// parties that ask for them: each layout scan is a party, and so are the
// segment builds of each VirtualBAM (its readers and its readahead). A
// worker set free goes to the parties waiting in turn (round robin), each
// party's waiters lowest order first (a file's segments in the order a
// reader needs them, whatever order their builds' goroutines came in;
// equal orders as they came), rather than to the longest waiter: a file streamed with readahead queues many builds at once, and
// would otherwise hold back the first access of another file, whose scan
// asks for one worker at a time.
type workerPool struct {
	mu   sync.Mutex
	free int      // workers not handed out; guarded by mu
	ring []*party // the parties with waiters, the next to serve first; guarded by mu
}

// party is one claimant of workers; its zero value is ready to use.
type party struct {
	// Mutable, guarded by the workerPool's mu.
	waiters []waiter // by order, then arrival
	queued  bool     // in the ring
}

// waiter is one acquire waiting for a worker.
type waiter struct {
	ch    chan struct{} // closed when handed a worker
	order int           // served lowest first within its party
}

func newWorkerPool(n int) *workerPool { return &workerPool{free: n} }

// acquire waits for a worker for p, or for ctx to end; among p's waiters,
// the lowest order is served first.
func (w *workerPool) acquire(ctx context.Context, p *party, order int) error {
	w.mu.Lock()
	if w.free > 0 {
		w.free--
		w.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	at := len(p.waiters)
	for at > 0 && p.waiters[at-1].order > order {
		at--
	}
	p.waiters = slices.Insert(p.waiters, at, waiter{ch: ch, order: order})
	if !p.queued {
		p.queued = true
		w.ring = append(w.ring, p)
	}
	w.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
	}
	w.mu.Lock()
	select {
	case <-ch:
		// Handed a worker meanwhile: pass it on.
		w.mu.Unlock()
		w.release()
	default:
		w.forget(p, ch)
		w.mu.Unlock()
	}
	return ctx.Err()
}

// forget removes the waiter ch of p, under w.mu.
func (w *workerPool) forget(p *party, ch chan struct{}) {
	for i, wt := range p.waiters {
		if wt.ch == ch {
			p.waiters = slices.Delete(p.waiters, i, i+1)
			break
		}
	}
	if len(p.waiters) > 0 {
		return
	}
	p.queued = false
	for i, q := range w.ring {
		if q == p {
			w.ring = append(w.ring[:i], w.ring[i+1:]...)
			break
		}
	}
}

// release gives a worker back: to the first waiter of the next party in
// turn, which then goes to the end of the ring if it has more.
func (w *workerPool) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.ring) == 0 {
		w.free++
		return
	}
	p := w.ring[0]
	w.ring = w.ring[1:]
	ch := p.waiters[0].ch
	p.waiters = slices.Delete(p.waiters, 0, 1)
	if len(p.waiters) > 0 {
		w.ring = append(w.ring, p)
	} else {
		p.queued = false
	}
	close(ch)
}
