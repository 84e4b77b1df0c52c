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
// asks for one worker at a time. Builds started in the background claim
// their place in their party's order before their goroutine runs (claim).
type workerPool struct {
	// Mutable, guarded by mu.
	//
	// INVARIANT: 0 <= free <= the workers made (newWorkerPool's n)
	// INVARIANT: each party of ring is there once, queued, with waiters
	// INVARIANT: free > 0 => no party of ring has a first waiter that is
	//            eligible: a worker set free is handed out at once
	// INVARIANT: claimed is the sum of the parties' len(claims)
	// INVARIANT (at rest): free is all the workers and ring is empty
	mu   sync.Mutex
	free int      // workers not handed out
	ring []*party // the parties with waiters, the next to serve first
	// claimed counts the claims of every party (their claims' lengths).
	claimed int
}

// party is one claimant of workers; its zero value is ready to use.
type party struct {
	// Mutable, guarded by the workerPool's mu.
	//
	// INVARIANT: queued <=> len(waiters) > 0 <=> p is in the ring
	// INVARIANT: waiters by non-decreasing order, claims ascending
	waiters []waiter // by order, then arrival
	queued  bool     // in the ring
	// claims are the orders announced by claim whose acquire has not come
	// yet, ascending: no waiter of a higher order gets a worker first.
	claims []int
}

// eligible reports whether a waiter of order may get a worker: no claim
// of a lower order is outstanding.
func (p *party) eligible(order int) bool { return len(p.claims) == 0 || order <= p.claims[0] }

// dropClaim removes one claim of order, if there is one, and reports
// whether there was.
func (p *party) dropClaim(order int) bool {
	i, ok := slices.BinarySearch(p.claims, order)
	if ok {
		p.claims = slices.Delete(p.claims, i, i+1)
	}
	return ok
}

// dropClaim removes one claim of order of p, if there is one, under w.mu.
func (w *workerPool) dropClaim(p *party, order int) {
	if p.dropClaim(order) {
		w.claimed--
	}
}

// waiter is one acquire waiting for a worker.
type waiter struct {
	ch    chan struct{} // closed when handed a worker
	order int           // served lowest first within its party
}

func newWorkerPool(n int) *workerPool { return &workerPool{free: n} }

// claim announces that p will acquire a worker for order, from a
// goroutine that may not have run yet: until that acquire (or unclaim),
// p's waiters of higher orders get no worker, so that builds start in the
// order they were claimed in rather than the order their goroutines run
// in.
func (w *workerPool) claim(p *party, order int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	i, _ := slices.BinarySearch(p.claims, order)
	p.claims = slices.Insert(p.claims, i, order)
	w.claimed++
}

// unclaim withdraws a claim of order for p whose acquire will not come;
// it does nothing if that acquire came.
func (w *workerPool) unclaim(p *party, order int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.dropClaim(p, order)
	w.dispatch()
}

// acquire waits for a worker for p, or for ctx to end; among p's waiters,
// the lowest order is served first. It takes the place of a claim of
// order for p, if there is one.
func (w *workerPool) acquire(ctx context.Context, p *party, order int) error {
	w.mu.Lock()
	w.dropClaim(p, order)
	if w.free > 0 && p.eligible(order) {
		w.free--
		w.dispatch() // waiters the claim held back
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
	w.dispatch() // a free worker that the claim held back may now be ours
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

// tryAcquire takes a worker without waiting, for work that would
// otherwise be done without it (a build's helper), and reports whether it
// got one: only when one is free and no party waits for a worker or has
// claimed one, so that it never takes a worker a build or a scan waits
// for or is about to ask for. release gives it back.
func (w *workerPool) tryAcquire() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.free == 0 || len(w.ring) > 0 || w.claimed > 0 {
		return false
	}
	w.free--
	return true
}

// idleWorkers lends a build the pool's idle workers (source.Helpers).
type idleWorkers struct{ w *workerPool }

// TryAcquire implements source.Helpers.
func (h idleWorkers) TryAcquire() bool { return h.w.tryAcquire() }

// Release implements source.Helpers.
func (h idleWorkers) Release() { h.w.release() }

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
// turn that no claim holds back, which then goes to the end of the ring
// if it has more.
func (w *workerPool) release() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.free++
	w.dispatch()
}

// dispatch hands the free workers to the waiters that may have them, under
// w.mu.
func (w *workerPool) dispatch() {
	for w.free > 0 && w.grant() {
		w.free--
	}
}

// grant hands a worker to the first waiter of the first party in the ring
// that no claim holds back, and reports whether there was one; under w.mu.
func (w *workerPool) grant() bool {
	for k, p := range w.ring {
		if !p.eligible(p.waiters[0].order) {
			continue
		}
		w.ring = slices.Delete(w.ring, k, k+1)
		ch := p.waiters[0].ch
		p.waiters = slices.Delete(p.waiters, 0, 1)
		if len(p.waiters) > 0 {
			w.ring = append(w.ring, p)
		} else {
			p.queued = false
		}
		close(ch)
		return true
	}
	return false
}
