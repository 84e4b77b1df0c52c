package fs

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkSequentialRead reads a 64 MiB synthetic BAM through the mount
// with 1 MiB read calls, under several MaxRead/MaxReadAhead settings. The
// "cold" runs drop the file's page cache before each pass, so every byte
// crosses FUSE; "cached" runs show what FOPEN_KEEP_CACHE buys on re-reads.
func BenchmarkSequentialRead(b *testing.B) {
	const size = 64 << 20
	src := b.TempDir()
	writeFile(b, filepath.Join(src, "big.cram"), "benchmark")
	for _, tc := range []struct {
		name               string
		maxRead, readAhead int
		cached             bool
	}{
		{"read128k-ra128k-cold", 128 << 10, 128 << 10, false},
		{"read1m-ra128k-cold", 1 << 20, 128 << 10, false},
		{"read512k-ra512k-cold", 512 << 10, 512 << 10, false},
		{"read1m-ra1m-cold", 1 << 20, 1 << 20, false},
		{"read1m-ra4m-cold", 1 << 20, 4 << 20, false},
		{"read1m-ra8m-cold", 1 << 20, 8 << 20, false},
		{"read1m-ra16m-cold", 1 << 20, 16 << 20, false},
		{"default-cached", 0, 0, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			op := &countingOpener{Opener: &fakeOpener{sizeHint: size}}
			mnt := mountT(b, src, op, Options{MaxRead: tc.maxRead, MaxReadAhead: tc.readAhead})
			p := filepath.Join(mnt, "big.bam")
			buf := make([]byte, 1<<20)
			pass := func() int64 {
				f, err := os.Open(p)
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				if !tc.cached {
					if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
						b.Fatal(err)
					}
				}
				var total int64
				for {
					n, err := f.Read(buf)
					total += int64(n)
					if err == io.EOF {
						return total
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			if got := pass(); got != size { // warm the opener and check the size
				b.Fatalf("read %d bytes, want %d", got, size)
			}
			b.SetBytes(size)
			b.ReportAllocs()
			op.calls.Store(0)
			n := 0
			cpu0 := processCPU(b)
			for b.Loop() {
				pass()
				n++
			}
			// CPU time of the whole process (reader and server) per pass:
			// on a loaded machine, steadier than the wall time.
			b.ReportMetric(float64(processCPU(b)-cpu0)/float64(n), "cpu-ns/op")
			if c := op.calls.Load(); c > 0 {
				b.ReportMetric(float64(int64(n)*size)/float64(c), "B/req")
			}
		})
	}
}

// processCPU is the user and system CPU time the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// countingOpener counts the ReadAt calls reaching its BAMFiles, i.e. the
// FUSE read requests that missed the page cache.
type countingOpener struct {
	Opener
	calls atomic.Int64
}

func (o *countingOpener) OpenBAM(ctx context.Context, ref CRAMRef) (BAMFile, error) {
	f, err := o.Opener.OpenBAM(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &countingBAM{BAMFile: f, calls: &o.calls}, nil
}

type countingBAM struct {
	BAMFile
	calls *atomic.Int64
}

func (c *countingBAM) ReadAt(p []byte, off int64) (int, error) {
	c.calls.Add(1)
	return c.BAMFile.ReadAt(p, off)
}
