package cram

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/engine"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/cramtest"
)

// TestDecoderPoolAcrossFiles decodes the containers of several testdata
// CRAMs in turn through one pool holding a single decoder, so that every
// container is decoded by a decoder that last served another file (other
// codecs, another reference, names generated from another file name), and
// checks each against the same file decoded with a pool of its own.
func TestDecoderPoolAcrossFiles(t *testing.T) {
	dir := filepath.Join(corpus.Root(), "testdata")
	store := cramtest.Reference(t)
	names := []string{"ce_1000.3.1-archive.cram", "ce_1000.3.0-lossynames.cram", "ce_1000.3.0-multislice.cram", "ce_1000.2.1.cram", "ce_1000.3.1-small.cram", "ce_1000.3.0-noref.cram"}
	shared := NewDecoderPool(1)
	var own, pooled []*CRAM
	for _, n := range names {
		for _, list := range []*[]*CRAM{&own, &pooled} {
			opt := Options{Reference: store}
			if list == &pooled {
				opt.Decoders = shared
			}
			c, err := Open(filepath.Join(dir, "cram", n), Path(filepath.Join(dir, "cram", n)), opt)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			*list = append(*list, c)
		}
	}
	ctx := context.Background()
	for i := 0; ; i++ {
		any := false
		for f := range names {
			if i >= own[f].NumContainers() {
				continue
			}
			any = true
			want, err := own[f].AppendContainer(ctx, i, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pooled[f].AppendContainer(ctx, i, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s container %d: a decoder reused from another file gives %d bytes that differ from a fresh decoder's %d", names[f], i, len(got), len(want))
			}
		}
		if !any {
			break
		}
	}
}

// TestCountDecoders checks that a pool counted against a manager's cache
// reserves its decoders' footprint there, up to half of the cache, follows
// the footprint as decoders grow and are dropped, and reports each change.
func TestCountDecoders(t *testing.T) {
	dir := filepath.Join(corpus.Root(), "testdata")
	store := cramtest.Reference(t)
	for _, cacheSize := range []int64{64 << 20, 64 << 10} {
		m := engine.NewManager(engine.Options{CacheSize: cacheSize, Threads: 1, CacheDir: t.TempDir()}, nil)
		defer m.Close()
		pool := NewDecoderPool(1)
		changes := 0
		pool.OnChange(func() { changes++ })
		m.CountDecoders(pool)
		c, err := Open(filepath.Join(dir, "cram", "ce_1000.3.1-archive.cram"), Path(filepath.Join(dir, "cram", "ce_1000.3.1-archive.cram")), Options{Reference: store, Decoders: pool})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		check := func(when string) int64 {
			t.Helper()
			total, counted := pool.Footprint()
			if want := min(total, cacheSize/2); counted != want {
				t.Fatalf("cache %d, %s: %d of %d decoder bytes counted, want %d", cacheSize, when, counted, total, want)
			}
			if r := m.CacheStats().Reserved; r != counted {
				t.Fatalf("cache %d, %s: cache has %d bytes reserved, the pool counted %d", cacheSize, when, r, counted)
			}
			return total
		}
		if _, err := c.AppendContainer(context.Background(), 0, nil); err != nil {
			t.Fatal(err)
		}
		one := check("one decoder")
		if one == 0 || changes == 0 {
			t.Fatalf("cache %d: footprint %d after a container, %d change reports", cacheSize, one, changes)
		}
		// Two decoders lent at once: the pool keeps one, drops the other.
		st, err := c.acquire()
		if err != nil {
			t.Fatal(err)
		}
		a, b := pool.get(st.f, st.dopt), pool.get(st.f, st.dopt)
		c.release(st)
		if err := b.d.ContainerFunc(0, func(int, *decode.Record) error { return nil }); err != nil {
			t.Fatal(err)
		}
		fpB := b.d.Footprint()
		pool.put(b)
		if total := check("two decoders"); total != one+fpB {
			t.Fatalf("cache %d: footprint %d with two decoders of %d and %d bytes", cacheSize, total, one, fpB)
		}
		pool.put(a) // the free list is full: dropped
		if total := check("one of two decoders dropped"); total != fpB {
			t.Fatalf("cache %d: footprint %d after dropping a decoder, want %d", cacheSize, total, fpB)
		}
		checkPool(t, pool)
		checkCRAM(t, c, true)
	}
}
