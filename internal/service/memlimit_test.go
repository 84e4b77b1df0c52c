package service

import (
	"context"
	"runtime/debug"
	"syscall"
	"testing"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/engine/layout"
)

// TestMemoryLimitFollowsDecoders checks the mount's Go memory limit: the
// cache budget plus the headroom, raised by the decoder memory the cache
// could not take (a cache of 256 KiB takes at most 128 KiB of it) and by
// the builds in flight when they exceed the cache.
func TestMemoryLimitFollowsDecoders(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	old := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(old) })

	const cacheSize = 256 << 10
	m := engine.NewManager(engine.Options{CacheSize: cacheSize, Threads: 2, CacheDir: t.TempDir()}, nil)
	defer m.Close()
	pool := cram.NewDecoderPool(2)
	m.CountDecoders(pool)
	lim := newMemoryLimit(cacheSize, 2, pool)
	if got, want := debug.SetMemoryLimit(-1), int64(cacheSize+limitHeadroom+2*workerHeadroom); got != want {
		t.Fatalf("limit before any decoding %d, want %d", got, want)
	}

	store, err := reference.Open([]string{testdata("ref", "ce.fa")}, reference.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c, err := cram.Open(testdata("cram", "ce_1000.3.0.cram"), cram.Path(testdata("cram", "ce_1000.3.0.cram")), cram.Options{Reference: store, Decoders: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.AppendContainer(context.Background(), 0, nil); err != nil {
		t.Fatal(err)
	}
	total, counted := pool.Footprint()
	if counted != cacheSize/2 || total <= counted {
		t.Fatalf("decoders hold %d bytes, %d counted in a %d-byte cache", total, counted, cacheSize)
	}
	if got, want := debug.SetMemoryLimit(-1), int64(cacheSize+limitHeadroom+2*workerHeadroom)+total-counted; got != want {
		t.Fatalf("limit %d with %d decoder bytes outside the cache, want %d", got, total-counted, want)
	}

	// Two workers each building a 4 MiB container need more than the cache.
	lim.noteLayout(layout.Layout{Segments: []layout.Segment{{RawLen: 4 << 20}}})
	if got, want := debug.SetMemoryLimit(-1), int64(2*4<<20+limitHeadroom+2*workerHeadroom)+total-counted; got != want {
		t.Fatalf("limit %d after a file with 4 MiB containers, want %d", got, want)
	}
}

// TestServiceLimitsContainers checks that a service (mount and index)
// opens CRAMs with the container limit of its cache size and threads, so
// that a container needing more memory is refused rather than decoded
// beyond the budget.
func TestServiceLimitsContainers(t *testing.T) {
	svc, err := Open(Options{CacheSize: 4 << 30, Threads: 2, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	copt, mgr := svc.copt, svc.mgr
	if want := int64(1 << 30); copt.MaxContainerMemory != want || mgr.Options().ContainerMemory() != want {
		t.Fatalf("--cache-size 4G -@ 2: containers limited to %d bytes (manager: %d), want %d", copt.MaxContainerMemory, mgr.Options().ContainerMemory(), want)
	}
}

// TestOpenFilesBoundRaisesSoftLimit lowers the soft limit on descriptors
// (the hard one is left alone: it cannot be raised back): the mount's
// start raises it back to the hard limit, and lets the engine keep half
// of it, at most engine.DefaultMaxOpenFiles, CRAMs open.
func TestOpenFilesBoundRaisesSoftLimit(t *testing.T) {
	var orig syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &orig); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &orig) })
	if orig.Max < 128 {
		t.Skipf("hard limit %d on descriptors", orig.Max)
	}
	lim := syscall.Rlimit{Cur: 64, Max: orig.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	n := openFilesBound(nil)
	var got syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &got); err != nil {
		t.Fatal(err)
	}
	if got.Cur != orig.Max {
		t.Errorf("soft limit %d after the mount's start, want the hard limit %d", got.Cur, orig.Max)
	}
	if want := int(min(orig.Max/2, engine.DefaultMaxOpenFiles)); n != want {
		t.Errorf("hard limit %d: %d CRAMs may stay open, want %d", orig.Max, n, want)
	}
}
