package service

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cramfs/cramfs/engine"
	"github.com/cramfs/cramfs/engine/source"
)

// heldSource is a Source of empty containers whose containers after the
// first wait for release: its scan stays in progress, one container done.
type heldSource struct{ release chan struct{} }

func (heldSource) Name() string { return "/data/held.cram" }
func (heldSource) Header() ([]byte, error) {
	return []byte("BAM\x01\x00\x00\x00\x00\x00\x00\x00\x00"), nil
}
func (heldSource) Identity() (source.Identity, error) { return source.Identity{}, source.ErrNoIdentity }
func (heldSource) Variant() string                    { return "" }
func (heldSource) NumContainers() int                 { return 4 }
func (heldSource) ContainerOffset(i int) int64        { return int64(100 * i) }
func (s heldSource) AppendContainer(ctx context.Context, i int, dst []byte) ([]byte, error) {
	if i == 0 {
		return dst, nil
	}
	select {
	case <-s.release:
		return dst, nil
	case <-ctx.Done():
		return dst, ctx.Err()
	}
}

// TestStatusShowsScans: `cramfs status` lists the layout scans in
// progress with their containers done and the file's total, and no more
// once they ended.
func TestStatusShowsScans(t *testing.T) {
	cache, mnt := t.TempDir(), t.TempDir()
	log := slog.New(slog.DiscardHandler)
	mgr := engine.NewManager(engine.Options{Threads: 2, CacheDir: cache}, log)
	defer mgr.Close()
	ss, err := newStatusServer(statusSocket(cache, mnt), mountStatus{Mnt: mnt}, newFileReports(slog.New(slog.DiscardHandler), t.TempDir()), mgr, log, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	src := heldSource{release: make(chan struct{})}
	opened := make(chan error, 1)
	go func() { _, err := mgr.Open(context.Background(), src); opened <- err }()
	want := scanStatus{Path: src.Name(), Done: 1, Total: 4}
	deadline := time.Now().Add(20 * time.Second)
	for {
		st := statusJSON(t, cache, mnt)
		if len(st.Scans) == 1 && st.Scans[0] == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status scans %+v, want [%+v]", st.Scans, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	rc, stderr, out := runCmd(t, "status", "--cache-dir", cache, mnt)
	if line := fmt.Sprintf("scanning %s: 1 of 4 containers", src.Name()); rc != 0 || !strings.Contains(string(out), line) {
		t.Errorf("cramfs status: exit %d, stderr %q, stdout without %q:\n%s", rc, stderr, line, out)
	}
	close(src.release)
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	if st := statusJSON(t, cache, mnt); len(st.Scans) != 0 {
		t.Fatalf("status scans after the scan: %+v", st.Scans)
	}
}
