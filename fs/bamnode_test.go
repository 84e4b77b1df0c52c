package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"weak"
)

// forgetfulOpener is a fakeOpener that remembers no BAMFile: each OpenBAM
// gives a new one (of the same bytes), which it follows with a weak
// pointer, so that a test sees which of them something still holds.
type forgetfulOpener struct {
	fakeOpener
	mu     sync.Mutex
	opened []weak.Pointer[fakeBAM]
	// grow, when set, makes each BAM given one byte longer than the one
	// before, and retag gives each another Tag: the same version scanned
	// again into another layout, of another size or the same.
	grow, retag bool
}

// taggedBAM is a fakeBAM with a Tag.
type taggedBAM struct {
	*fakeBAM
	tag string
}

func (b *taggedBAM) Tag() string { return b.tag }

func (o *forgetfulOpener) OpenBAM(ctx context.Context, ref CRAMRef) (BAMFile, error) {
	f, err := o.fakeOpener.OpenBAM(ctx, ref)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	fb := f.(*fakeBAM)
	data := fb.data
	if o.grow {
		data = append(bytes.Clone(data), make([]byte, len(o.opened))...)
	}
	b := &fakeBAM{data: data, index: fb.index}
	o.opened = append(o.opened, weak.Make(b))
	if o.retag {
		return &taggedBAM{fakeBAM: b, tag: fmt.Sprintf("layout%d", len(o.opened))}, nil
	}
	return b, nil
}

// live returns how many of the BAMFiles given are still referenced, after
// collections.
func (o *forgetfulOpener) live() int {
	runtime.GC()
	runtime.GC()
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, p := range o.opened {
		if p.Value() != nil {
			n++
		}
	}
	return n
}

// TestLookedUpNodeHoldsNoBAM looks up the BAMs and BAIs of a few CRAMs
// and checks that the nodes the kernel keeps for them hold none of their
// BAMFiles (a node held its BAMFile, with its layout and index, for as
// long as the kernel kept the name: every file ever looked up), while an
// open file holds the one it reads until it is closed.
func TestLookedUpNodeHoldsNoBAM(t *testing.T) {
	const n = 8
	src := t.TempDir()
	for i := range n {
		writeFile(t, filepath.Join(src, fmt.Sprintf("f%d.cram", i)), fmt.Sprintf("CRAM %d", i))
	}
	op := &forgetfulOpener{}
	mnt := mountT(t, src, op, Options{})
	for i := range n {
		for _, ext := range []string{".bam", ".bam.bai"} {
			if _, err := os.Stat(filepath.Join(mnt, fmt.Sprintf("f%d%s", i, ext))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := op.live(); got != 0 {
		t.Errorf("after %d lookups, %d BAMFiles are still held, want none", 2*n, got)
	}

	f, err := os.Open(filepath.Join(mnt, "f0.bam"))
	must(t, err)
	defer f.Close()
	if got := op.live(); got != 1 {
		t.Errorf("with f0.bam open, %d BAMFiles are held, want 1 (the open file's)", got)
	}
	got, err := io.ReadAll(f)
	must(t, err)
	if want := expectedBAM(t, filepath.Join(src, "f0.cram")); !bytes.Equal(got, want.data) {
		t.Errorf("f0.bam read while open: %d bytes, not the %d of the fake", len(got), len(want.data))
	}
	must(t, f.Close())
	// The kernel releases the handle after close returns.
	deadline := time.Now().Add(5 * time.Second)
	for op.live() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := op.live(); got != 0 {
		t.Errorf("f0.bam closed: %d BAMFiles still held, want none", got)
	}
}

// TestOpenRefusesBAMScannedAgain opens a BAM and a BAI whose version
// the Opener scans again, since the lookup, into a BAM of another size or
// of the same size and another Tag (a layout found wrong and dropped):
// the kernel has the old size and may have cached pages of the old
// bytes, so the open fails with EIO and a log line naming the file,
// rather than serve other bytes under that inode. Before, the node kept
// its BAMFile, so no open met another.
func TestOpenRefusesBAMScannedAgain(t *testing.T) {
	for _, tc := range []struct {
		name      string
		op        *forgetfulOpener
		file, log string
	}{
		{"size", &forgetfulOpener{grow: true}, "a.bam", "BAM of a.cram: %d bytes, %d when looked up"},
		{"tag", &forgetfulOpener{retag: true}, "a.bam", "BAM of a.cram: scanned again into layout layout2, layout1 when looked up"},
		{"tag of the index", &forgetfulOpener{retag: true}, "a.bam.bai", "index of a.cram: scanned again into layout layout2, layout1 when looked up"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			writeFile(t, filepath.Join(src, "a.cram"), "CRAM a")
			var logs syncBuffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			mnt := mountT(t, src, tc.op, Options{Logger: logger})
			fi, err := os.Stat(filepath.Join(mnt, tc.file))
			must(t, err)
			if _, err := os.ReadFile(filepath.Join(mnt, tc.file)); !errors.Is(err, syscall.EIO) {
				t.Fatalf("reading %s of %d bytes, scanned again since: %v, want EIO", tc.file, fi.Size(), err)
			}
			want := tc.log
			if strings.Contains(want, "%d") {
				want = fmt.Sprintf(want, fi.Size()+1, fi.Size())
			}
			if l := logs.String(); !strings.Contains(l, "file="+tc.file) || !strings.Contains(l, want) {
				t.Errorf("log does not name the file and why (%q):\n%s", want, l)
			}
		})
	}
}
