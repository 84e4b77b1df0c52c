package engine

import (
	"context"
	"io"
	"math/rand/v2"
	"testing"
)

// benchVBAM opens the synth fixture with a layout index already persisted
// in dir, so that only segment builds are measured.
func benchVBAM(b *testing.B, dir string, opts Options) (*Manager, *VirtualBAM) {
	b.Helper()
	opts.CacheDir = dir
	m := NewManager(opts, nil)
	v, err := m.Open(context.Background(), newFakeSource(fixture(b, "synth"), ""))
	if err != nil {
		b.Fatal(err)
	}
	return m, v
}

func readSeq(b *testing.B, v *VirtualBAM, p []byte) {
	for off := int64(0); ; {
		n, err := v.ReadAt(p, off)
		off += int64(n)
		if err == io.EOF {
			return
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSequentialCold reads the whole virtual BAM in 128 KiB reads
// with an empty cache: every segment is decoded and compressed once
// (readahead on, as for a streaming reader).
func BenchmarkSequentialCold(b *testing.B) {
	dir := b.TempDir()
	m, v := benchVBAM(b, dir, Options{})
	m.Close()
	p := make([]byte, 128<<10)
	b.SetBytes(v.Size())
	b.ReportAllocs()
	for b.Loop() {
		m, v := benchVBAM(b, dir, Options{})
		readSeq(b, v, p)
		m.Close()
	}
}

// BenchmarkSequentialWarm reads the whole virtual BAM from a cache that
// holds all of it.
func BenchmarkSequentialWarm(b *testing.B) {
	m, v := benchVBAM(b, b.TempDir(), Options{})
	defer m.Close()
	p := make([]byte, 128<<10)
	readSeq(b, v, p)
	b.SetBytes(v.Size())
	b.ReportAllocs()
	for b.Loop() {
		readSeq(b, v, p)
	}
}

func benchRandom(b *testing.B, opts Options, warm bool) {
	m, v := benchVBAM(b, b.TempDir(), opts)
	defer m.Close()
	p := make([]byte, 64<<10)
	if warm {
		readSeq(b, v, p)
	}
	r := rand.New(rand.NewPCG(1, 2))
	b.SetBytes(int64(len(p)))
	b.ReportAllocs()
	for b.Loop() {
		off := r.Int64N(v.Size() - int64(len(p)))
		if _, err := v.ReadAt(p, off); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRandom64KCold does 64 KiB reads at random offsets without a
// cache: each read builds the segments it touches.
func BenchmarkRandom64KCold(b *testing.B) {
	benchRandom(b, Options{CacheSize: -1, Readahead: -1}, false)
}

// BenchmarkRandom64KWarm does 64 KiB reads at random offsets, all cached.
func BenchmarkRandom64KWarm(b *testing.B) { benchRandom(b, Options{}, true) }
