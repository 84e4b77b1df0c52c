package engine

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/layout"
)

// The benchmarks below measure how the scan and the segment builds share
// out over workers, for bench/archive/SCALING.md: run them with -cpuprofile,
// -mutexprofile and -blockprofile (go test then records every contention
// and every blocking event) to see what runs on one goroutine or waits on
// one lock. They use the benchmark dataset (see benchDataCRAM).

// scalingThreads are the worker counts measured: this machine has two
// cores; bench/archive/SCALING.md projects the rest.
var scalingThreads = []int{1, 2}

// BenchmarkBenchDataScan scans a CRAM of the benchmark dataset with an
// empty cache directory: every container decoded and compressed by the
// workers (Options.Digests: the full scan, not the level-0 measuring one,
// see BenchmarkBenchDataFirstAccess), the layout and the BAI built by the
// in-order consumer.
func BenchmarkBenchDataScan(b *testing.B) {
	for _, t := range scalingThreads {
		b.Run(fmt.Sprintf("threads=%d", t), func(b *testing.B) {
			src := benchDataCRAM(b)
			for b.Loop() {
				dir, err := os.MkdirTemp(b.TempDir(), "scan")
				if err != nil {
					b.Fatal(err)
				}
				m := NewManager(Options{Level: Stored, Threads: t, CacheSize: 256 << 20, CacheDir: dir, Digests: true}, nil)
				v, err := m.Open(context.Background(), src)
				if err != nil {
					b.Fatal(err)
				}
				b.SetBytes(v.Size())
				m.Close()
			}
		})
	}
}

// BenchmarkBenchDataParallelRead reads the whole virtual BAM with a cold
// cache and as many readers as workers, reader r reading segments r,
// r+threads, ... in 128 KiB pieces (the kernel's FUSE read size), without
// readahead: every segment is built by the reader that first asks, so the
// builds, the cache and the Manager's lock are shared as by concurrent
// readers of a mount.
func BenchmarkBenchDataParallelRead(b *testing.B) {
	for _, t := range scalingThreads {
		b.Run(fmt.Sprintf("threads=%d", t), func(b *testing.B) {
			dir := b.TempDir()
			opts := Options{Level: Stored, Threads: t, CacheSize: 256 << 20, Readahead: -1}
			m, v := benchDataVBAM(b, dir, opts)
			m.Close()
			b.SetBytes(v.Size())
			for b.Loop() {
				m, v := benchDataVBAM(b, dir, opts)
				segs := v.Layout().Segments
				var wg sync.WaitGroup
				errs := make([]error, t)
				for r := range t {
					wg.Add(1)
					go func() {
						defer wg.Done()
						errs[r] = readSegments(v, segs, r, t)
					}()
				}
				wg.Wait()
				for _, err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}
				m.Close()
			}
		})
	}
}

// readSegments reads segments first, first+step, ... of v in 128 KiB
// pieces.
func readSegments(v *VirtualBAM, segs []layout.Segment, first, step int) error {
	p := make([]byte, 128<<10)
	for i := first; i < len(segs); i += step {
		for off := segs[i].Offset; off < segs[i].End(); {
			n := int(min(int64(len(p)), segs[i].End()-off))
			if _, err := v.ReadAt(p[:n], off); err != nil {
				return fmt.Errorf("segment %d at %d: %w", i, off, err)
			}
			off += int64(n)
		}
	}
	return nil
}

// BenchmarkBenchDataScanIndex measures the index work of a scan apart from
// the decoding, on every container of a CRAM of the benchmark dataset
// built once beforehand: "each" is the consumer adding every record in
// container order (addEach: what it did before the fragments), "fragments"
// the workers' part (scanRun.fragment, run in parallel) and "merge" what
// is left for the consumer (Merge of each fragment in order), whose index
// must equal the one built record by record. b.SetBytes is the virtual
// BAM's size, to compare with BenchmarkBenchDataScan.
func BenchmarkBenchDataScanIndex(b *testing.B) {
	src := benchDataCRAM(b)
	m := NewManager(Options{Level: Stored, Threads: 1, CacheSize: 256 << 20, CacheDir: b.TempDir()}, nil)
	defer m.Close()
	hdrRaw, err := headerOf(src)
	if err != nil {
		b.Fatal(err)
	}
	c, err := m.getComp()
	if err != nil {
		b.Fatal(err)
	}
	var segs []layout.Segment
	var built []*builtSegment
	_, hdrSeg, err := compressHeader(c, src, nil, hdrRaw)
	if err != nil {
		b.Fatal(err)
	}
	off := hdrSeg.CompLen
	for i := range src.NumContainers() {
		bs, _, err := scanContainer(context.Background(), src, c, m.pool, 0, i, nil)
		if err != nil {
			b.Fatal(err)
		}
		s := bs.seg
		s.Offset = off
		off += s.CompLen
		segs, built = append(segs, s), append(built, bs)
	}
	newRun := func() *scanRun {
		r := &scanRun{m: m, src: src}
		r.newIndex(hdrRaw)
		return r
	}
	var byRecord, merged []byte // the last index of "each" and of "merge"
	finish := func(r *scanRun) []byte {
		if r.bld == nil {
			b.Fatal("no index")
		}
		out, err := r.bld.Finish(uint64(off) << 16)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	size := off + int64(len(bgzf.EOF))
	b.Run("each", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			r := newRun()
			for i, bs := range built {
				if err := r.addEach(i, segs[i], bs); err != nil {
					b.Fatal(err)
				}
			}
			byRecord = finish(r)
		}
	})
	r := newRun()
	b.Run("fragments", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			for _, bs := range built {
				if bs.frag = r.fragment(bs); bs.frag == nil && len(bs.recs) > 0 {
					b.Fatal("no fragment")
				}
			}
		}
	})
	b.Run("merge", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			r := newRun()
			for i, bs := range built {
				if err := r.addRecords(i, segs[i], bs); err != nil {
					b.Fatal(err)
				}
			}
			merged = finish(r)
		}
	})
	if byRecord != nil && merged != nil && !bytes.Equal(merged, byRecord) {
		b.Fatalf("the index merged from fragments (%d bytes) differs from the one built record by record (%d bytes)", len(merged), len(byRecord))
	}
}
