package engine

import (
	"context"
	"testing"
)

// TestWorkerPoolTryAcquire: tryAcquire takes a worker only when one is
// free and no party waits for one or has claimed one, never waits, and
// the worker it took, released, goes to a waiter that came meanwhile.
func TestWorkerPoolTryAcquire(t *testing.T) {
	w := newWorkerPool(2)
	var p, other party
	if err := w.acquire(context.Background(), &p, 0); err != nil {
		t.Fatal(err)
	}
	if !w.tryAcquire() {
		t.Fatal("a free worker nobody waits for was refused")
	}
	if w.tryAcquire() {
		t.Fatal("a worker was lent with none free")
	}
	// A build comes while the lent worker is out: it waits, and gets the
	// worker when the borrower gives it back.
	got := make(chan error, 1)
	go func() { got <- w.acquire(context.Background(), &other, 3) }()
	awaitQueued(t, w, 1)
	w.release() // the borrowed worker
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	w.release() // other's
	// A waiter held back by a claim beside a free worker: not taken.
	w.claim(&p, 1)
	if w.tryAcquire() {
		t.Fatal("a worker was lent while a build had claimed one")
	}
	third := make(chan error, 1)
	go func() { third <- w.acquire(context.Background(), &p, 2) }()
	awaitQueued(t, w, 1)
	if w.tryAcquire() {
		t.Fatal("a worker was lent while a build waited for one")
	}
	w.unclaim(&p, 1)
	if err := <-third; err != nil {
		t.Fatal(err)
	}
	w.release()
	w.release()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.free != 2 || len(w.ring) != 0 || w.claimed != 0 {
		t.Fatalf("after every release: %d free, %d parties queued, %d claims", w.free, len(w.ring), w.claimed)
	}
}
