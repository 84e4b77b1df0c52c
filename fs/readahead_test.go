package fs

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// gatedOpener holds the read requests of its BAMs from offset from on
// until want of them are in flight at once (or until a deadline, which
// bounds the test if the kernel never sends that many), recording the
// most seen at once. The reads before from pass freely, so that the
// kernel's read-ahead window of a sequential reader grows to its full
// size.
type gatedOpener struct {
	Opener
	from     int64
	want     int
	deadline time.Time

	mu       sync.Mutex
	cond     *sync.Cond // signalled when inFlight grows; guarded by mu
	inFlight int        // guarded by mu
	most     int        // guarded by mu
}

func newGatedOpener(op Opener, from int64, want int, deadline time.Time) *gatedOpener {
	g := &gatedOpener{Opener: op, from: from, want: want, deadline: deadline}
	g.cond = sync.NewCond(&g.mu)
	return g
}

func (g *gatedOpener) OpenBAM(ctx context.Context, ref CRAMRef) (BAMFile, error) {
	f, err := g.Opener.OpenBAM(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &gatedBAM{BAMFile: f, g: g}, nil
}

type gatedBAM struct {
	BAMFile
	g *gatedOpener
}

func (b *gatedBAM) ReadAt(p []byte, off int64) (int, error) {
	g := b.g
	if off < g.from {
		return b.BAMFile.ReadAt(p, off)
	}
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	g.cond.Broadcast()
	if g.inFlight < g.want {
		stop := time.AfterFunc(time.Until(g.deadline), g.cond.Broadcast)
		for g.inFlight < g.want && g.most < g.want && time.Now().Before(g.deadline) {
			g.cond.Wait()
		}
		stop.Stop()
	}
	g.inFlight--
	g.mu.Unlock()
	return b.BAMFile.ReadAt(p, off)
}

// readAheadKB is the mount's kernel read-ahead window, from
// /sys/class/bdi/MAJ:MIN/read_ahead_kb.
func readAheadKB(t *testing.T, mnt string) int {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(mnt, &st); err != nil {
		t.Fatal(err)
	}
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	b, err := os.ReadFile(fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", major, minor))
	if err != nil {
		t.Fatal(err)
	}
	kb, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return kb
}

// TestReadAheadBeyondMaxRead: a read-ahead window larger than MaxRead is
// kept (the mount's read_ahead_kb), and the kernel splits it into
// requests of MaxRead that a sequential reader has in flight at once,
// each served on its own goroutine: all of a window's requests.
func TestReadAheadBeyondMaxRead(t *testing.T) {
	const (
		size      = 32 << 20
		readAhead = 4 * DefaultMaxRead
		want      = readAhead / DefaultMaxRead
	)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "big.cram"), "read-ahead")
	g := newGatedOpener(&fakeOpener{sizeHint: size}, 16<<20, want, time.Now().Add(20*time.Second))
	mnt := mountT(t, src, g, Options{MaxReadAhead: readAhead})
	if got := readAheadKB(t, mnt); got != readAhead>>10 {
		t.Errorf("read_ahead_kb %d, want %d", got, readAhead>>10)
	}
	f, err := os.Open(filepath.Join(mnt, "big.bam"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, DefaultMaxRead)
	for off := 0; off < size; off += len(buf) {
		if _, err := io.ReadFull(f, buf); err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
	}
	g.mu.Lock()
	most := g.most
	g.mu.Unlock()
	if most < want {
		t.Fatalf("at most %d read requests in flight, want %d (a %d KiB window of %d KiB requests)", most, want, readAhead>>10, DefaultMaxRead>>10)
	}
	t.Logf("%d read requests in flight", most)
}

// reachOpener records the furthest byte of its BAMs that a read request
// has asked for.
type reachOpener struct {
	Opener

	mu    sync.Mutex
	reach int64 // guarded by mu
}

func (o *reachOpener) OpenBAM(ctx context.Context, ref CRAMRef) (BAMFile, error) {
	f, err := o.Opener.OpenBAM(ctx, ref)
	if err != nil {
		return nil, err
	}
	return &reachBAM{BAMFile: f, o: o}, nil
}

func (o *reachOpener) furthest() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.reach
}

type reachBAM struct {
	BAMFile
	o *reachOpener
}

func (b *reachBAM) ReadAt(p []byte, off int64) (int, error) {
	b.o.mu.Lock()
	b.o.reach = max(b.o.reach, off+int64(len(p)))
	b.o.mu.Unlock()
	return b.BAMFile.ReadAt(p, off)
}

// TestRegionReadReach: after a region query of a few MiB (htslib seeks to
// the region's first chunk and reads 32 KiB at a time until past its end),
// the default mount has the kernel ask for at most 2 MiB beyond the last
// byte read. A byte asked for past a region's end has its segment built
// for nothing when it lies in the next one, as it does at the end of most
// regions.
func TestRegionReadReach(t *testing.T) {
	const (
		size  = 64 << 20
		start = 16 << 20
		n     = 6 << 20 // a few segments of deep data
		chunk = 32 << 10
	)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "big.cram"), "reach")
	o := &reachOpener{Opener: &fakeOpener{sizeHint: size}}
	mnt := mountT(t, src, o, Options{})
	f, err := os.Open(filepath.Join(mnt, "big.bam"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, chunk)
	if _, err := f.ReadAt(buf[:1], 0); err != nil {
		t.Fatal(err)
	}
	for off := int64(start); off < start+n; off += chunk {
		if _, err := f.ReadAt(buf, off); err != nil {
			t.Fatalf("read at %d: %v", off, err)
		}
	}
	// The kernel's last read-ahead requests may still be on their way.
	time.Sleep(100 * time.Millisecond)
	if past := o.furthest() - (start + n); past > 2<<20 {
		t.Errorf("the kernel asked for %d KiB past the region's end, want at most %d", past>>10, 2<<10)
	}
}
