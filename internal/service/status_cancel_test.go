package service

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	cfs "github.com/cramfs/cramfs/fs"
)

// TestStatusKilledReadersAreNotFailures: readers killed mid-read (SIGKILL
// of a `dd` blocked in a read; the kernel interrupts its FUSE request,
// which cancels the request's context) do not mark the file as failing,
// a reader reading meanwhile gets exact bytes, nothing is logged as EIO,
// and the file read in full afterwards shows as ok.
func TestStatusKilledReadersAreNotFailures(t *testing.T) {
	requireMount(t)
	if _, err := exec.LookPath("dd"); err != nil {
		t.Fatalf("dd: %v", err)
	}
	cram := corpusFile("hts-specs/test/cram/3.0/passed/level-1.cram")
	if cram == "" {
		t.Fatal("corpus file level-1.cram missing")
	}
	bin := buildCramfs(t)
	src, cache := t.TempDir(), t.TempDir()
	copyFile(t, cram, filepath.Join(src, "x.cram"))
	want := convertAt(t, 0, cram, nil)
	// Segments larger than the cache are built again for every read, by
	// one worker: concurrent readers wait for it, and are killed waiting.
	p := startMount(t, bin, src, "--cache-dir", cache, "--cache-size", "64K", "-@", "1")
	bam := filepath.Join(p.Mnt, "x.bam")

	survivor := make(chan error, 1)
	go func() {
		got, err := readDirect(bam)
		if err == nil && !bytes.Equal(got, want) {
			err = fmt.Errorf("%d bytes, not the %d convert gives", len(got), len(want))
		}
		survivor <- err
	}()
	const cancelledLine = `err="context canceled"`
	for round := 0; round < 10 && !strings.Contains(p.Stderr.String(), cancelledLine); round++ {
		killReadersMidRead(t, bam, 6)
	}
	if !strings.Contains(p.Stderr.String(), cancelledLine) {
		t.Fatalf("no read was cancelled by the kills; the test proves nothing. Mount log:\n%s", p.Stderr.String())
	}
	if err := <-survivor; err != nil {
		t.Errorf("a reader reading while others were killed: %v", err)
	}

	got, err := readDirect(bam)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("full read after the kills: %d bytes, %v; want the %d bytes convert gives", len(got), err, len(want))
	}
	st := statusJSON(t, cache, p.Mnt)
	if len(st.Files) != 1 || st.Files[0].Error != "" {
		t.Errorf("status files %+v, want x.cram without a failure", st.Files)
	}
	if rc, stderr, out := runCmd(t, "status", "--cache-dir", cache, p.Mnt); rc != 0 || strings.Contains(string(out), "failing") {
		t.Errorf("cramfs status: exit %d, stderr %q, stdout:\n%s", rc, stderr, out)
	}
	if log := p.Stderr.String(); strings.Contains(log, syscall.EIO.Error()) || strings.Contains(log, "level=WARN") || strings.Contains(log, "level=ERROR") {
		t.Errorf("a cancelled read logged as a failure:\n%s", log)
	}
}

// killReadersMidRead starts n `dd` readers of bam (direct I/O, so every
// read reaches the mount) at different offsets, lets them read a while,
// and kills them with SIGKILL.
func killReadersMidRead(t *testing.T, bam string, n int) {
	t.Helper()
	var cmds []*exec.Cmd
	for i := range n {
		cmd := exec.Command("dd", "if="+bam, "of=/dev/null", "bs=64k", fmt.Sprintf("skip=%d", 10*i), "iflag=direct", "status=none")
		cmd.Stderr = io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	time.Sleep(300 * time.Millisecond)
	for _, cmd := range cmds {
		cmd.Process.Signal(syscall.SIGKILL)
	}
	for _, cmd := range cmds {
		cmd.Wait() // killed, or done before the kill
	}
}

// TestFileFailureHoldsUntilItsBytesRead: a failed read marks the file as
// failing until a read delivers the byte it could not, whatever other
// reads succeed meanwhile; a cancelled read neither fails it nor counts;
// a failure to open holds until an open succeeds, not a read.
func TestFileFailureHoldsUntilItsBytesRead(t *testing.T) {
	n := newFileReports(slog.New(slog.DiscardHandler), "/src")
	k := fileKey{rel: "x.cram"}
	n.mu.Lock()
	st := n.state(k)
	n.mu.Unlock()
	b := &noticedBAM{reports: n, st: st}
	failure := func() string { return n.snapshot()[0].Error }

	b.served(0, 0, 0, context.Canceled)
	b.served(0, 0, 0, fmt.Errorf("x.cram: %w", context.DeadlineExceeded))
	if failure() != "" || st.reads.Load() != 0 {
		t.Fatalf("cancelled reads: failure %q, %d reads counted; want none", failure(), st.reads.Load())
	}
	broken := errors.New("container at byte 1000: CRC mismatch")
	b.served(4096, 100, 4196, broken)
	for _, r := range [][2]int64{{0, 4096}, {4197, 8192}, {4096, 100}} {
		b.served(r[0], int(r[1]), 0, nil)
		if failure() != broken.Error() {
			t.Fatalf("after a good read of %d bytes at %d: failure %q, want %q", r[1], r[0], failure(), broken)
		}
	}
	if f := n.snapshot()[0]; f.ErrorOffset == nil || *f.ErrorOffset != 4196 || f.ErrorTime.IsZero() {
		t.Errorf("failure at %v (%v), want byte 4196 and a time", f.ErrorOffset, f.ErrorTime)
	}
	b.served(4096, 0, 4096, context.Canceled)
	b.served(0, 8192, 0, io.EOF)
	if failure() != "" {
		t.Fatalf("a good read of the failed byte left failure %q", failure())
	}

	n.failed(k, fmt.Errorf("lookup: %w", context.Canceled))
	if failure() != "" {
		t.Fatalf("a cancelled open recorded %q", failure())
	}
	n.failed(k, broken)
	b.served(0, 8192, 0, nil)
	if f := n.snapshot()[0]; f.Error != broken.Error() || f.ErrorOffset != nil {
		t.Fatalf("failed open after a good read: %+v, want the open's failure", f)
	}
}

// TestFileStatesBounded: the states a mount keeps for cramfs status are
// at most maxEntries, the least recently used paths forgotten, whatever
// the number of files opened.
func TestFileStatesBounded(t *testing.T) {
	n := newFileReports(slog.New(slog.DiscardHandler), "/src")
	for i := range maxEntries + 100 {
		n.failed(fileKey{rel: fmt.Sprintf("f%05d.cram", i), Version: cfs.Version{Ino: uint64(i)}}, errors.New("broken"))
	}
	got := n.snapshot()
	if len(got) != maxEntries {
		t.Fatalf("%d file states kept, want %d", len(got), maxEntries)
	}
	if got[0].Path != "/src/f00100.cram" {
		t.Errorf("oldest kept %s, want /src/f00100.cram (the first 100 forgotten)", got[0].Path)
	}
}
