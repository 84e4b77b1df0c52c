package service

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cramfs/cramfs/internal/corpus"
)

// openFDs counts the open file descriptors of the process.
func openFDs(tb testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatalf("listing /proc/self/fd: %v", err)
	}
	return len(ents)
}

// fdList lists the open file descriptors and their targets.
func fdList() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var sb strings.Builder
	for _, e := range ents {
		target, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		fmt.Fprintf(&sb, "  %s -> %s\n", e.Name(), target)
	}
	return sb.String()
}

// statusKB reads a kB field (VmRSS, VmHWM) of /proc/self/status.
func statusKB(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return -1
}

// settle waits up to d for cond, polling.
func settle(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		runtime.GC()
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLoadConcurrentReaders runs 16 readers doing full scans and random
// reads over several mounted files, with a block cache far smaller than
// the working set, for a bounded time: every byte must equal `cramfs
// convert --level 1`, and goroutines, file descriptors and memory must
// come back to where they were once the mount is gone.
func TestLoadConcurrentReaders(t *testing.T) {
	corpus.RequireFUSE(t)
	duration := 10 * time.Second
	if testing.Short() {
		duration = 2 * time.Second
	}
	if v, err := time.ParseDuration(os.Getenv("CRAMFS_LOAD_DURATION")); err == nil {
		duration = v
	}
	refs := []string{testdata("ref", "ce.fa"), testdata("ref", "xx.fa")}
	names := []string{"ce_1000.3.0", "ce_1000.3.0-multislice", "ce_1000.3.1-archive", "ce_1000.2.1", "ce_1000.3.1-fast", "xx_tlen.3.0", "ce_unmap2.3.1-small"}
	src := t.TempDir()
	want := map[string][]byte{}
	total := 0
	for _, n := range names {
		b, err := os.ReadFile(testdata("cram", n+".cram"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(src, n+".cram"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		want[n] = convertAt(t, 1, testdata("cram", n+".cram"), refs)
		total += len(want[n])
	}
	const cacheSize = 24 << 10
	if total < 4*cacheSize {
		t.Fatalf("working set %d bytes does not exceed the %d-byte cache enough", total, cacheSize)
	}

	runtime.GC()
	gBefore, fdBefore := runtime.NumGoroutine(), openFDs(t)
	rssBefore := statusKB("VmRSS")

	mnt := t.TempDir()
	m := mountT(t, src, mountConfig{refs: refs, cacheSize: strconv.Itoa(cacheSize), level: "1", mnt: mnt})

	var peakRSS atomic.Int64
	stopSampler := make(chan struct{})
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if v := statusKB("VmRSS"); v > peakRSS.Load() {
				peakRSS.Store(v)
			}
			select {
			case <-stopSampler:
				return
			case <-tick.C:
			}
		}
	}()

	const readers = 16
	var scans, reads, bytesRead atomic.Int64
	errs := make(chan error, readers)
	deadline := time.Now().Add(duration)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 99))
			buf := make([]byte, 256<<10)
			for time.Now().Before(deadline) {
				n := names[rng.IntN(len(names))]
				exp := want[n]
				p := filepath.Join(mnt, n+".bam")
				if i%4 == 0 {
					// A full sequential scan through the page cache.
					b, err := os.ReadFile(p)
					if err != nil {
						errs <- fmt.Errorf("reader %d: scan %s: %w", i, n, err)
						return
					}
					if !bytes.Equal(b, exp) {
						errs <- fmt.Errorf("reader %d: scan of %s: %d bytes differ from convert's %d", i, n, len(b), len(exp))
						return
					}
					scans.Add(1)
					bytesRead.Add(int64(len(b)))
					continue
				}
				// Random reads straight to the server (O_DIRECT).
				fh, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECT, 0)
				if err != nil {
					errs <- fmt.Errorf("reader %d: open %s: %w", i, n, err)
					return
				}
				for range 8 {
					off := rng.Int64N(int64(len(exp)))
					ln := 1 + rng.IntN(len(buf))
					got, err := fh.ReadAt(buf[:ln], off)
					if err != nil && err != io.EOF {
						fh.Close()
						errs <- fmt.Errorf("reader %d: %s ReadAt(%d, %d): %w", i, n, ln, off, err)
						return
					}
					end := min(off+int64(ln), int64(len(exp)))
					if int64(got) != end-off || !bytes.Equal(buf[:got], exp[off:end]) {
						fh.Close()
						errs <- fmt.Errorf("reader %d: %s ReadAt(%d, %d): %d bytes, not convert's", i, n, ln, off, got)
						return
					}
					reads.Add(1)
					bytesRead.Add(int64(got))
				}
				fh.Close()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	close(stopSampler)
	<-samplerDone
	st := m.mgr.CacheStats()
	m.unmount(t)

	settledG := settle(5*time.Second, func() bool { return runtime.NumGoroutine() <= gBefore })
	// The opener closed its CRAMs at unmount: any descriptor left is a leak.
	held := m.heldCRAMs()
	settledFD := settle(2*time.Second, func() bool { return openFDs(t) <= fdBefore })
	gAfter, fdAfter := runtime.NumGoroutine(), openFDs(t)
	peak := peakRSS.Load()
	t.Logf("%v, %d readers: %d full scans, %d random reads, %d MiB read; cache %+v", duration, readers, scans.Load(), reads.Load(), bytesRead.Load()>>20, st)
	t.Logf("goroutines %d -> %d, fds %d -> %d, RSS %d MiB before, peak %d MiB (VmHWM %d MiB)", gBefore, gAfter, fdBefore, fdAfter, rssBefore>>10, peak>>10, statusKB("VmHWM")>>10)
	if !settledG {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines grew from %d to %d after unmount:\n%s", gBefore, gAfter, buf[:runtime.Stack(buf, true)])
	}
	if !settledFD {
		t.Errorf("open file descriptors grew from %d to %d after unmount (%d CRAMs held by the opener):\n%s", fdBefore, fdAfter, held, fdList())
	}
	if st.Bytes > st.MaxBytes {
		t.Errorf("cache holds %d bytes, over its %d bound", st.Bytes, st.MaxBytes)
	}
	if st.Evictions+st.Rejected == 0 {
		t.Errorf("no cache eviction: the working set did not exceed the cache")
	}
	if rssBefore > 0 && peak-rssBefore > 512<<10 {
		t.Errorf("RSS grew by %d MiB under load", (peak-rssBefore)>>10)
	}
	if scans.Load() == 0 || reads.Load() == 0 {
		t.Errorf("no work done: %d scans, %d reads", scans.Load(), reads.Load())
	}
}
