package fs

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// poisonBAM lends copies of its bytes through View and overwrites each copy
// when it is released, as a recycled segment buffer is overwritten by the
// next build: bytes sent after their release show up as the poison.
type poisonBAM struct {
	fakeBAM
	mu       sync.Mutex
	lent     int
	released int
}

func (p *poisonBAM) View(_ context.Context, off int64, n int) ([]byte, func(), error) {
	b := bytes.Clone(p.data[off : off+int64(n)])
	p.mu.Lock()
	p.lent++
	p.mu.Unlock()
	return b, func() {
		for i := range b {
			b[i] = 0xEE
		}
		p.mu.Lock()
		p.released++
		p.mu.Unlock()
	}, nil
}

type poisonOpener struct{ f *poisonBAM }

func (o poisonOpener) OpenBAM(context.Context, string) (BAMFile, error) { return o.f, nil }

// TestLentBytesReleasedAfterReply reads a Viewer's BAM through the mount,
// bypassing the page cache, and checks that every byte is the BAM's: a
// release before go-fuse wrote the reply would send the poison.
func TestLentBytesReleasedAfterReply(t *testing.T) {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "x.cram"), "CRAM")
	f := &poisonBAM{fakeBAM: *fakeFor([]byte("lent"), 3<<20)}
	mnt := mountT(t, src, poisonOpener{f}, Options{})
	fh, err := os.OpenFile(filepath.Join(mnt, "x.bam"), os.O_RDONLY|0o40000, 0) // O_DIRECT
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	got := make([]byte, len(f.data))
	for off := 0; off < len(got); off += 1 << 20 {
		if _, err := fh.ReadAt(got[off:min(off+1<<20, len(got))], int64(off)); err != nil {
			t.Fatal(err)
		}
	}
	if i := firstDiff(got, f.data); i >= 0 {
		t.Fatalf("byte %d is %#x, the BAM has %#x: lent bytes were released before the reply was sent", i, got[i], f.data[i])
	}
	// The last release may come just after the reader has its bytes.
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		lent, released := f.lent, f.released
		f.mu.Unlock()
		if lent > 0 && released == lent {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d views lent, %d released", lent, released)
		}
		time.Sleep(time.Millisecond)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}
