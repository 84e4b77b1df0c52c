package engine

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/cramfs/cramfs/cache"
)

// TestWaiterOutlivesCancelledLeaders: a reader waiting for a segment
// build whose leader's context ends (an interrupted read) waits for, or
// leads, the next build, however many leaders in a row end so: their
// cancellation is not the segment's failure. The leaders are builds in
// flight registered by hand, each ended as a cancelled leader's build
// ends, its successor registered under the same lock so that the reader
// finds it.
func TestWaiterOutlivesCancelledLeaders(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	m, _ := newTestManager(t, Options{Readahead: -1})
	v := openT(t, m, src)
	want := src.expected(t, 1)
	seg := v.Layout().Segments[4]
	key := cache.Key{File: v.id, Segment: 4}
	if m.cache.Contains(key) {
		t.Fatal("segment 4 is cached after the scan: the read would wait for no build")
	}
	b := &building{done: make(chan struct{})}
	m.mu.Lock()
	m.building[key] = b
	m.mu.Unlock()
	p := make([]byte, 100)
	read := make(chan error, 1)
	go func() {
		_, err := v.ReadAt(p, seg.Offset+5)
		read <- err
	}()
	const leaders = 6
	for k := range leaders {
		waitForWaiter(t, m, b, read, k)
		next := &building{done: make(chan struct{})}
		m.mu.Lock()
		b.err = context.Canceled
		if k < leaders-1 {
			m.building[key] = next
		} else {
			delete(m.building, key) // the reader leads the next build
		}
		close(b.done)
		m.mu.Unlock()
		b = next
	}
	if err := <-read; err != nil {
		t.Fatalf("the waiting reader failed: %v", err)
	}
	if !bytes.Equal(p, want[seg.Offset+5:seg.Offset+105]) {
		t.Fatal("wrong bytes")
	}
	m.checkInvariants(t, v)
}

// waitForWaiter waits until the read is waiting for the build b, the k-th
// leader's, and fails if the read ended first.
func waitForWaiter(t *testing.T, m *Manager, b *building, read chan error, k int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		m.mu.Lock()
		n := b.waiters
		m.mu.Unlock()
		if n == 1 {
			return
		}
		select {
		case err := <-read:
			t.Fatalf("the read ended before it waited for leader %d: %v", k+1, err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the read did not wait for leader %d", k+1)
		}
		time.Sleep(time.Millisecond)
	}
}
