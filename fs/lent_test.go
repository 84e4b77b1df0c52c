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

// poisonBAM lends copies of its bytes through View, cut into pieces at
// every multiple of piece as a virtual BAM's are at segment ends, and
// overwrites each copy when it is released, as a recycled segment buffer
// is overwritten by the next build: bytes sent after their release show
// up as the poison.
type poisonBAM struct {
	fakeBAM
	mu       sync.Mutex
	lent     int
	released int
}

const piece = 300 << 10

func (p *poisonBAM) View(_ context.Context, off int64, n int) ([][]byte, func(), error) {
	b := bytes.Clone(p.data[off : off+int64(n)])
	var parts [][]byte
	for rest, at := b, off; len(rest) > 0; {
		k := min(len(rest), int(piece-at%piece))
		parts = append(parts, rest[:k])
		rest, at = rest[k:], at+int64(k)
	}
	p.mu.Lock()
	p.lent++
	p.mu.Unlock()
	return parts, func() {
		for i := range b {
			b[i] = 0xEE
		}
		p.mu.Lock()
		p.released++
		p.mu.Unlock()
	}, nil
}

type poisonOpener struct{ f *poisonBAM }

func (o poisonOpener) OpenBAM(context.Context, CRAMRef) (BAMFile, error) { return o.f, nil }

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

// TestLentResultBytes checks the one-piece form of a lent reply, which
// go-fuse uses when it does not write the pieces with writev.
func TestLentResultBytes(t *testing.T) {
	released := 0
	for _, parts := range [][][]byte{{[]byte("abc")}, {[]byte("ab"), []byte("c"), []byte("def")}} {
		r := &lentResult{parts: parts, size: len(bytes.Join(parts, nil)), release: func() { released++ }}
		got, st := r.Bytes(make([]byte, 0, 16))
		if !st.Ok() || string(got) != string(bytes.Join(parts, nil)) || r.Size() != len(got) {
			t.Errorf("Bytes of %q = %q, %v (size %d)", parts, got, st, r.Size())
		}
		if s, _ := r.Slices(); len(s) != len(parts) {
			t.Errorf("Slices of %q = %q", parts, s)
		}
		r.Done()
	}
	if released != 2 {
		t.Errorf("released %d times, want 2", released)
	}
}
