package service

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/hostile"
)

// TestFaultCRAMMetadataChangeUnderOpenHandle: a BAM is opened and its
// first 64 KiB read, then the CRAM's metadata changes (chmod, a hard
// link added, the name removed, another file renamed over it), which
// moves its ctime but not its bytes. The open handle, which holds the
// CRAM's descriptor, must read the rest exactly: the first build of each
// later segment of the level-0 layout is checked against the bytes the
// scan measured, not against the file's ctime. A change of its bytes (a read renamed in a
// middle container, the same size, the records of the same lengths, the
// mtime set back) still fails the handle's reads of that container with
// EIO, after exact bytes.
func TestFaultCRAMMetadataChangeUnderOpenHandle(t *testing.T) {
	corpus.RequireFUSE(t)
	dir := t.TempDir()
	orig := multiContainerCRAM(t, filepath.Join(dir, "orig.cram"))
	want := convertAt(t, 0, filepath.Join(dir, "orig.cram"), nil)
	other := filepath.Join(dir, "other.cram")
	copyFile(t, testdata("cram", "ce_1000.3.0-noref.cram"), other)
	off := bytes.Index(orig, []byte("r1500"))
	if off < 128<<10 || off > len(orig)-128<<10 {
		t.Fatalf("read r1500 at %d of %d bytes: not in a middle container", off, len(orig))
	}
	changed, err := hostile.FlipAt(orig, off, 0x01, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, p string) error
		exact  bool // the handle reads every byte; else EIO after exact bytes
	}{
		{"chmod", func(t *testing.T, p string) error { return os.Chmod(p, 0o644) }, true},
		{"hard link", func(t *testing.T, p string) error { return os.Link(p, p+".bak") }, true},
		{"removed", func(t *testing.T, p string) error { return os.Remove(p) }, true},
		{"renamed over", func(t *testing.T, p string) error {
			copyFile(t, other, p+".new")
			return os.Rename(p+".new", p)
		}, true},
		{"rewritten in place", func(t *testing.T, p string) error {
			st, err := os.Stat(p)
			if err == nil {
				rewriteInPlace(t, p, changed, st.ModTime())
			}
			return err
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			p := filepath.Join(src, "x.cram")
			if err := os.WriteFile(p, orig, 0o644); err != nil {
				t.Fatal(err)
			}
			m := mountT(t, src, mountConfig{level: "0", readahead: "-1"})
			fh, err := os.OpenFile(filepath.Join(m.mnt, "x.bam"), os.O_RDONLY|syscall.O_DIRECT, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			head := make([]byte, 64<<10)
			if _, err := io.ReadFull(fh, head); err != nil || !bytes.Equal(head, want[:len(head)]) {
				t.Fatalf("first 64 KiB: %v", err)
			}
			before := ctimeOf(t, p)
			held, err := os.Open(p) // the version read, to see its ctime after
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			if err := tc.change(t, p); err != nil {
				t.Fatal(err)
			}
			if after := fctimeOf(t, held); after == before {
				t.Fatalf("%s left the ctime at %d: the test would prove nothing", tc.name, before)
			}
			rest, err := readChunks(fh, int64(len(head)), 64<<10)
			if !tc.exact {
				if outcome := exactOrEIO(t, "open handle", append(head, rest...), want, err); !strings.HasPrefix(outcome, "EIO") {
					t.Fatalf("open handle after %s: %s, want EIO", tc.name, outcome)
				}
				return
			}
			if err != nil || !bytes.Equal(rest, want[len(head):]) {
				i := 0
				for i < len(rest) && i+len(head) < len(want) && rest[i] == want[len(head)+i] {
					i++
				}
				t.Fatalf("open handle after %s: %d of %d bytes read, equal up to byte %d, then %v", tc.name, len(head)+len(rest), len(want), len(head)+i, err)
			}
		})
	}
}

// ctimeOf is the ctime of the file at p, in nanoseconds.
func ctimeOf(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ctim.Nano()
}

// fctimeOf is the ctime of the open file f, in nanoseconds.
func fctimeOf(t *testing.T, f *os.File) int64 {
	t.Helper()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ctim.Nano()
}
