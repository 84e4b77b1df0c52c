package decode_test

import (
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/internal/corpus"
)

// TestFootprintIsWhatTheDecoderKeeps decodes testdata CRAMs of several
// layouts with a fresh decoder and compares its Footprint with the heap it
// keeps alive once done (measured after collections): a buffer left out of
// the count (the bases alone are a third of it here) fails the lower bound.
func TestFootprintIsWhatTheDecoderKeeps(t *testing.T) {
	for _, n := range []string{"ce_1000.3.1-archive.cram", "ce_1000.3.0.cram", "ce_1000.3.0-multislice.cram", "ce_1000.2.1.cram"} {
		t.Run(n, func(t *testing.T) {
			f, _ := openFile(t, filepath.Join(corpus.Root(), "testdata", "cram", n))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&before)
			d := f.NewDecoder(fakeOpt)
			for i := range f.Containers {
				if err := d.ContainerFunc(i, func(int, *decode.Record) error { return nil }); err != nil {
					t.Fatal(err)
				}
			}
			runtime.GC()
			runtime.GC()
			runtime.ReadMemStats(&after)
			kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
			fp := d.Footprint()
			runtime.KeepAlive(d)
			if fp < kept*8/10 || fp > kept*21/20 {
				t.Fatalf("footprint %d bytes; the decoder keeps %d bytes of heap alive", fp, kept)
			}
		})
	}
}

// TestFootprintStaysPut decodes every testdata CRAM twice with one
// decoder: the second pass over the same containers reuses the buffers the
// first one grew, so the footprint does not change.
func TestFootprintStaysPut(t *testing.T) {
	eachTestdataCRAM(t, func(t *testing.T, f *decode.File) {
		d := f.NewDecoder(fakeOpt)
		pass := func() error {
			for i := range f.Containers {
				if err := d.ContainerFunc(i, func(int, *decode.Record) error { return nil }); err != nil {
					return err
				}
			}
			return nil
		}
		if err := pass(); err != nil {
			if strings.HasPrefix(filepath.Base(f.Name), "corrupt.") {
				return // damaged on purpose
			}
			t.Fatal(err)
		}
		first := d.Footprint()
		if err := pass(); err != nil {
			t.Fatal(err)
		}
		if second := d.Footprint(); second != first {
			t.Fatalf("footprint %d bytes after the first pass, %d after the second: buffers were not reused", first, second)
		}
	})
}

// TestLyingCountsDoNotSizeBuffers gives a container header absurd record
// and base counts: the decoder still decodes the container, and sizes its
// buffers by the data, not by the claims.
func TestLyingCountsDoNotSizeBuffers(t *testing.T) {
	p := filepath.Join(corpus.Root(), "testdata", "cram", "ce_1000.3.1-archive.cram")
	f, _ := openFile(t, p)
	honest := f.NewDecoder(fakeOpt)
	if _, err := honest.Container(0); err != nil {
		t.Fatal(err)
	}
	h := &f.Containers[0]
	h.NumRecords, h.Bases = 1<<30, 1<<40
	d := f.NewDecoder(fakeOpt)
	if _, err := d.Container(0); err != nil {
		t.Fatalf("a container whose header overstates its counts: %v", err)
	}
	// The claims size the first allocation up to bounds proportional to
	// the container's length (here a few KiB).
	bound := honest.Footprint() + 200*int64(h.Length) + 2<<20
	if got := d.Footprint(); got > bound {
		t.Fatalf("footprint %d bytes after a header claiming %d records and %d bases; honest %d, bound %d", got, h.NumRecords, h.Bases, honest.Footprint(), bound)
	}
}
