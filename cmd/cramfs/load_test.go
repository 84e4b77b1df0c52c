package main

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
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

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine"
	cfs "github.com/cramfs/cramfs/fs"
	"github.com/cramfs/cramfs/internal/corpus"
)

// relRequireFUSE skips (or fails under CI) without /dev/fuse and
// fusermount3.
func relRequireFUSE(tb testing.TB) {
	tb.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		corpus.Missing(tb, "/dev/fuse: %v", err)
	}
	if _, err := os.Stat("/usr/bin/fusermount3"); err != nil {
		if _, err := os.Stat("/bin/fusermount3"); err != nil {
			corpus.Missing(tb, "fusermount3: %v", err)
		}
	}
}

// relFD counts the open file descriptors of the process.
func relFD(tb testing.TB) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		tb.Fatalf("listing /proc/self/fd: %v", err)
	}
	return len(ents)
}

// relFDList lists the open file descriptors and their targets.
func relFDList() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var sb strings.Builder
	for _, e := range ents {
		target, _ := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		fmt.Fprintf(&sb, "  %s -> %s\n", e.Name(), target)
	}
	return sb.String()
}

// heldCRAMs counts the CRAM files the opener holds open.
func (m *relMount) heldCRAMs() int {
	m.op.mu.Lock()
	defer m.op.mu.Unlock()
	n := 0
	for _, e := range m.op.entries {
		if e.src != nil && e.err == nil {
			n++
		}
	}
	return n
}

// relStatusKB reads a kB field (VmRSS, VmHWM) of /proc/self/status.
func relStatusKB(field string) int64 {
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

// relSettle waits up to d for cond, polling.
func relSettle(d time.Duration, cond func() bool) bool {
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

// relMount is an in-process mount of src through the engine, as
// `cramfs mount` sets it up.
type relMount struct {
	mnt   string
	srv   *cfs.Server
	mgr   *engine.Manager
	store *reference.Store
	op    *opener
	log   *relLog
	done  bool
}

// relLog collects log output of the mount.
type relLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *relLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *relLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func relMountAt(t *testing.T, src, mnt string, refs []string, eopt engine.Options) *relMount {
	t.Helper()
	relRequireFUSE(t)
	store, err := reference.Open(refs, reference.Options{})
	if err != nil {
		t.Fatal(err)
	}
	lg := &relLog{}
	log := slog.New(slog.NewTextHandler(lg, &slog.HandlerOptions{Level: slog.LevelInfo}))
	mgr := engine.NewManager(eopt, log)
	op := newOpener(mgr, store, engine.CRAMOptions{Reference: store}, log)
	srv, err := cfs.Mount(src, mnt, op, cfs.Options{Logger: log})
	if err != nil {
		mgr.Close()
		store.Close()
		t.Fatalf("mount: %v", err)
	}
	m := &relMount{mnt: mnt, srv: srv, mgr: mgr, store: store, op: op, log: lg}
	t.Cleanup(func() { m.unmount(t) })
	return m
}

// unmount unmounts (once) and releases the engine.
func (m *relMount) unmount(t *testing.T) {
	if m.done {
		return
	}
	m.done = true
	if err := m.srv.Unmount(); err != nil {
		t.Errorf("unmount %s: %v", m.mnt, err)
		_ = cfs.Unmount(m.mnt)
	}
	m.op.Close()
	m.mgr.Close()
	m.store.Close()
}

// relConvert returns `cramfs convert --level 1` of cram.
func relConvert(t *testing.T, cram string, refs []string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.bam")
	args := []string{"convert", "--level", "1", "-o", out}
	for _, r := range refs {
		args = append(args, "-T", r)
	}
	var stdout, stderr bytes.Buffer
	if rc := run(append(args, cram), &stdout, &stderr); rc != 0 {
		t.Fatalf("convert %s: exit %d: %s", cram, rc, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestLoadConcurrentReaders runs 16 readers doing full scans and random
// reads over several mounted files, with a block cache far smaller than
// the working set, for a bounded time: every byte must equal `cramfs
// convert --level 1`, and goroutines, file descriptors and memory must
// come back to where they were once the mount is gone.
func TestLoadConcurrentReaders(t *testing.T) {
	relRequireFUSE(t)
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
		want[n] = relConvert(t, testdata("cram", n+".cram"), refs)
		total += len(want[n])
	}
	const cacheSize = 24 << 10
	if total < 4*cacheSize {
		t.Fatalf("working set %d bytes does not exceed the %d-byte cache enough", total, cacheSize)
	}

	runtime.GC()
	gBefore, fdBefore := runtime.NumGoroutine(), relFD(t)
	rssBefore := relStatusKB("VmRSS")

	mnt := t.TempDir()
	m := relMountAt(t, src, mnt, refs, engine.Options{Threads: 2, CacheSize: cacheSize, Level: 1, CacheDir: t.TempDir()})

	var peakRSS atomic.Int64
	stopSampler := make(chan struct{})
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			if v := relStatusKB("VmRSS"); v > peakRSS.Load() {
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

	settledG := relSettle(5*time.Second, func() bool { return runtime.NumGoroutine() <= gBefore })
	// The opener closed its CRAMs at unmount: any descriptor left is a leak.
	held := m.heldCRAMs()
	settledFD := relSettle(2*time.Second, func() bool { return relFD(t) <= fdBefore })
	gAfter, fdAfter := runtime.NumGoroutine(), relFD(t)
	peak := peakRSS.Load()
	t.Logf("%v, %d readers: %d full scans, %d random reads, %d MiB read; cache %+v", duration, readers, scans.Load(), reads.Load(), bytesRead.Load()>>20, st)
	t.Logf("goroutines %d -> %d, fds %d -> %d, RSS %d MiB before, peak %d MiB (VmHWM %d MiB)", gBefore, gAfter, fdBefore, fdAfter, rssBefore>>10, peak>>10, relStatusKB("VmHWM")>>10)
	if !settledG {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines grew from %d to %d after unmount:\n%s", gBefore, gAfter, buf[:runtime.Stack(buf, true)])
	}
	if !settledFD {
		t.Errorf("open file descriptors grew from %d to %d after unmount (%d CRAMs held by the opener):\n%s", fdBefore, fdAfter, held, relFDList())
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
