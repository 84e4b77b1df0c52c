package service

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cramfs/cramfs/internal/clitest"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/hostile"
)

// The fault tests define what a mount does when the world changes under
// it. Every read through the mount either returns exactly the bytes of
// `cramfs convert --level 1` of the file version it opened, or fails with
// EIO; it never returns other bytes.

// readChunks reads fh from offset 0 in chunks of n bytes until the end
// or the first error, returning what was read and that error.
func readChunks(fh *os.File, from int64, n int) ([]byte, error) {
	var out []byte
	buf := make([]byte, n)
	for off := from; ; {
		got, err := fh.ReadAt(buf, off)
		out = append(out, buf[:got]...)
		off += int64(got)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
}

// readDirect reads a whole file bypassing the page cache.
func readDirect(p string) ([]byte, error) {
	fh, err := os.OpenFile(p, os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return readChunks(fh, 0, 64<<10)
}

// exactOrEIO checks the outcome rule: got is a prefix of want and, if
// shorter, err is EIO.
func exactOrEIO(t *testing.T, what string, got, want []byte, err error) string {
	t.Helper()
	if !bytes.HasPrefix(want, got) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Errorf("%s: bytes differ from the expected BAM at offset %d (mixed or wrong bytes)", what, i)
		return "wrong bytes"
	}
	switch {
	case err == nil && len(got) == len(want):
		return "exact"
	case errors.Is(err, syscall.EIO):
		return fmt.Sprintf("EIO after %d of %d bytes", len(got), len(want))
	default:
		t.Errorf("%s: %d of %d bytes, then %v (want the whole file or EIO)", what, len(got), len(want), err)
		return "unexpected error"
	}
}

// TestFaultReferenceChanges: the reference FASTA is removed, replaced or
// overwritten while mounted. The FASTA is mapped when the mount starts, so
// a removed or renamed-over file keeps serving the mapped bases; bases
// overwritten in place are caught by the slice MD5s (EIO).
func TestFaultReferenceChanges(t *testing.T) {
	corpus.RequireFUSE(t)
	crams := []string{"ce_1000.3.0-multislice", "ce_1000.3.1-archive", "ce_1000.2.1"}
	want := map[string][]byte{}
	for _, n := range crams {
		want[n] = convertAt(t, 1, testdata("cram", n+".cram"), []string{testdata("ref", "ce.fa")})
	}
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, fa string)
		exact  bool // reads must succeed (not only exact-or-EIO)
	}{
		{"removed", func(t *testing.T, fa string) {
			if err := os.Remove(fa); err != nil {
				t.Fatal(err)
			}
			os.Remove(fa + ".fai")
		}, true},
		{"replaced by rename", func(t *testing.T, fa string) {
			b, _ := os.ReadFile(fa)
			tmp := fa + ".new"
			if err := os.WriteFile(tmp, bytes.ReplaceAll(b, []byte("A"), []byte("C")), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, fa); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"overwritten in place", func(t *testing.T, fa string) {
			b, _ := os.ReadFile(fa)
			nl := bytes.IndexByte(b, '\n')
			f, err := os.OpenFile(fa, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// Same length, other bases: the mapping sees them at once.
			if _, err := f.WriteAt(bytes.ReplaceAll(b[nl+1:], []byte("A"), []byte("C")), int64(nl+1)); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			fa := filepath.Join(dir, "ce.fa")
			copyFile(t, testdata("ref", "ce.fa"), fa)
			copyFile(t, testdata("ref", "ce.fa.fai"), fa+".fai")
			src := t.TempDir()
			for _, n := range crams {
				copyFile(t, testdata("cram", n+".cram"), filepath.Join(src, n+".cram"))
			}
			// No block cache: every read rebuilds its segment from the CRAM.
			m := mountT(t, src, mountConfig{refs: []string{fa}, cacheSize: "0", level: "1"})
			first := crams[0]
			got, err := readDirect(filepath.Join(m.mnt, first+".bam"))
			if err != nil || !bytes.Equal(got, want[first]) {
				t.Fatalf("before the change: %d bytes, %v", len(got), err)
			}
			tc.change(t, fa)
			for _, n := range crams { // the first already open, the others opened now
				got, err := readDirect(filepath.Join(m.mnt, n+".bam"))
				outcome := exactOrEIO(t, n, got, want[n], err)
				if tc.exact && outcome != "exact" {
					t.Errorf("%s: %s, want the mapped reference to keep serving", n, outcome)
				}
				t.Logf("%s: %s", n, outcome)
			}
		})
	}
}

// TestFaultReferenceTruncated: the mapped FASTA is truncated in place
// while mounted (as `cp new.fa ce.fa` does first). Reads of bases past
// the new end fail with EIO; the mount does not die of SIGBUS. The mount
// runs in a child process, which a regression would kill.
func TestFaultReferenceTruncated(t *testing.T) {
	corpus.RequireFUSE(t)
	// A padding contig first, so the bases the reads need lie pages past
	// the new end of the file.
	ce, err := os.ReadFile(testdata("ref", "ce.fa"))
	if err != nil {
		t.Fatal(err)
	}
	pad := ">pad\n" + strings.Repeat(strings.Repeat("N", 60)+"\n", 2000)
	fa := filepath.Join(t.TempDir(), "ce.fa")
	if err := os.WriteFile(fa, append([]byte(pad), ce...), 0o644); err != nil {
		t.Fatal(err)
	}
	src, mnt := t.TempDir(), t.TempDir()
	copyFile(t, testdata("cram", "ce_1000.3.0.cram"), filepath.Join(src, "x.cram"))
	copyFile(t, testdata("cram", "ce_1000.3.1-archive.cram"), filepath.Join(src, "y.cram"))
	want := convertAt(t, 1, testdata("cram", "ce_1000.3.0.cram"), []string{testdata("ref", "ce.fa")})
	p := startMountProc(t, buildCramfs(t), mnt, "mount", "-T", fa, "--cache-size", "0", "--cache-dir", t.TempDir(), "--level", "1", src, mnt)
	if got, err := readDirect(filepath.Join(mnt, "x.bam")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("before the truncation: %d bytes, %v", len(got), err)
	}
	if err := os.Truncate(fa, 100); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"x.bam", "y.bam"} { // y is opened only now
		_, err := readDirect(filepath.Join(mnt, n))
		if !errors.Is(err, syscall.EIO) {
			t.Errorf("%s after the truncation: %v, want EIO", n, err)
		}
	}
	if err := unmountProc(t, p); err != nil {
		t.Error(err)
	}
}

// TestFaultCacheDir: the layout cache directory cannot be created, or its
// filesystem is full. The mount still serves exact bytes, keeping layouts
// in memory, and warns once.
func TestFaultCacheDir(t *testing.T) {
	corpus.RequireFUSE(t)
	names := []string{"ce_1000.3.0", "ce_1000.3.1-archive", "ce_5b.2.1"}
	ref := []string{testdata("ref", "ce.fa")}
	want := map[string][]byte{}
	for _, n := range names {
		want[n] = convertAt(t, 1, testdata("cram", n+".cram"), ref)
	}
	check := func(t *testing.T, cacheDir string) {
		src := t.TempDir()
		for _, n := range names {
			copyFile(t, testdata("cram", n+".cram"), filepath.Join(src, n+".cram"))
		}
		m := mountT(t, src, mountConfig{refs: ref, cacheSize: "64K", level: "1", cacheDir: cacheDir})
		for _, n := range names {
			got, err := readDirect(filepath.Join(m.mnt, n+".bam"))
			if err != nil || !bytes.Equal(got, want[n]) {
				t.Errorf("%s: %d bytes (want %d), %v", n, len(got), len(want[n]), err)
			}
		}
		m.unmount(t)
		logs := m.log.String()
		if n := strings.Count(logs, "level=WARN"); n != 1 {
			t.Errorf("%d warnings, want 1:\n%s", n, logs)
		}
	}
	t.Run("unwritable", func(t *testing.T) {
		// A path below a regular file: no directory can be made there,
		// even by root.
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		check(t, filepath.Join(file, "cache"))
	})
	t.Run("full", func(t *testing.T) {
		dir := t.TempDir()
		if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=64k"); err != nil {
			t.Skipf("cannot mount a small tmpfs to fill (%v)", err)
		}
		defer syscall.Unmount(dir, syscall.MNT_DETACH)
		f, err := os.Create(filepath.Join(dir, "filler"))
		if err != nil {
			t.Fatal(err)
		}
		for {
			if _, err := f.Write(make([]byte, 4096)); err != nil {
				if !errors.Is(err, syscall.ENOSPC) {
					t.Fatalf("filling: %v", err)
				}
				break
			}
		}
		f.Close()
		check(t, dir)
	})
}

// TestFaultLayoutIndexDamaged: the persisted layout indexes are damaged
// between two mounts. The next mount rejects them, rebuilds the layout and
// serves exact bytes, and rewrites the index.
func TestFaultLayoutIndexDamaged(t *testing.T) {
	corpus.RequireFUSE(t)
	names := []string{"ce_1000.3.0-multislice", "ce_1000.3.1-archive"}
	ref := []string{testdata("ref", "ce.fa")}
	want := map[string][]byte{}
	src := t.TempDir()
	for _, n := range names {
		want[n] = convertAt(t, 1, testdata("cram", n+".cram"), ref)
		copyFile(t, testdata("cram", n+".cram"), filepath.Join(src, n+".cram"))
	}
	cacheDir := t.TempDir()
	readAll := func(t *testing.T) {
		m := mountT(t, src, mountConfig{refs: ref, cacheSize: "64K", level: "1", cacheDir: cacheDir})
		for _, n := range names {
			got, err := readDirect(filepath.Join(m.mnt, n+".bam"))
			if err != nil || !bytes.Equal(got, want[n]) {
				t.Errorf("%s: %d bytes (want %d), %v", n, len(got), len(want[n]), err)
			}
			if _, err := os.ReadFile(filepath.Join(m.mnt, n+".bam.bai")); err != nil {
				t.Errorf("%s.bai: %v", n, err)
			}
		}
		m.unmount(t)
	}
	indexFiles := func() map[string][]byte {
		out := map[string][]byte{}
		filepath.WalkDir(cacheDir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				b, _ := os.ReadFile(p)
				out[p] = b
			}
			return nil
		})
		return out
	}
	readAll(t)
	orig := indexFiles()
	if len(orig) == 0 {
		t.Fatalf("no layout index was written to %s", cacheDir)
	}
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"byte flipped", func(b []byte) []byte { b = bytes.Clone(b); b[len(b)/2] ^= 0x40; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)/2] }},
		{"empty", func([]byte) []byte { return nil }},
		{"garbage", func(b []byte) []byte { return bytes.Repeat([]byte{0xa5}, len(b)) }},
		{"huge counts", func(b []byte) []byte {
			b = bytes.Clone(b)
			for i := 16; i+8 <= len(b) && i < 64; i += 8 {
				copy(b[i:], []byte{0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0x7f})
			}
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for p, b := range orig {
				if err := os.WriteFile(p, tc.damage(b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			readAll(t)
			// The rebuilt layout is persisted again, as it was.
			for p, b := range indexFiles() {
				if o, ok := orig[p]; ok && !bytes.Equal(o, b) {
					t.Errorf("%s was not rewritten as it was first written", filepath.Base(p))
				}
			}
		})
	}
}

// TestFaultCRAMChangesUnderOpenHandle: the CRAM behind an open BAM handle
// is replaced, truncated, overwritten or deleted. The open handle serves
// the bytes of the version it opened, or EIO; never a mix. New opens see
// the new version.
func TestFaultCRAMChangesUnderOpenHandle(t *testing.T) {
	corpus.RequireFUSE(t)
	ref := []string{testdata("ref", "ce.fa")}
	oldName, newName := "ce_1000.3.0-multislice", "ce_unmap2.3.0"
	oldCRAM, err := os.ReadFile(testdata("cram", oldName+".cram"))
	if err != nil {
		t.Fatal(err)
	}
	wantOld := convertAt(t, 1, testdata("cram", oldName+".cram"), ref)
	wantNew := convertAt(t, 1, testdata("cram", newName+".cram"), ref)
	// A flip deep in the records of the last data container, CRCs fixed:
	// the file still decodes, to other records.
	flipped, err := hostile.FlipAt(oldCRAM, len(oldCRAM)-600, 0x01, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		change    func(t *testing.T, p string)
		exact     bool   // the open handle must keep serving every byte
		wantAfter []byte // what a new open must serve, nil: not checked
	}{
		{"replaced by rename", func(t *testing.T, p string) {
			copyFile(t, testdata("cram", newName+".cram"), p+".tmp")
			if err := os.Rename(p+".tmp", p); err != nil {
				t.Fatal(err)
			}
		}, true, wantNew},
		{"deleted", func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}, true, nil},
		{"truncated in place", func(t *testing.T, p string) {
			if err := os.Truncate(p, int64(len(oldCRAM)/2)); err != nil {
				t.Fatal(err)
			}
		}, false, nil},
		{"overwritten in place", func(t *testing.T, p string) {
			f, err := os.OpenFile(p, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt(flipped, 0); err != nil {
				t.Fatal(err)
			}
		}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := t.TempDir()
			p := filepath.Join(src, "x.cram")
			if err := os.WriteFile(p, oldCRAM, 0o644); err != nil {
				t.Fatal(err)
			}
			m := mountT(t, src, mountConfig{refs: ref, cacheSize: "0", level: "1", readahead: "-1"})
			bam := filepath.Join(m.mnt, "x.bam")
			fh, err := os.OpenFile(bam, os.O_RDONLY|syscall.O_DIRECT, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			head := make([]byte, 4096)
			if _, err := io.ReadFull(fh, head); err != nil || !bytes.Equal(head, wantOld[:4096]) {
				t.Fatalf("first read: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
			tc.change(t, p)
			rest, err := readChunks(fh, 0, 16<<10)
			outcome := exactOrEIO(t, "open handle", rest, wantOld, err)
			t.Logf("open handle: %s", outcome)
			if tc.exact && outcome != "exact" {
				t.Errorf("open handle: %s, want the old bytes", outcome)
			}
			if tc.wantAfter != nil {
				// New opens see the new version once the attribute
				// timeout has passed.
				var got []byte
				deadline := time.Now().Add(5 * time.Second)
				for time.Now().Before(deadline) {
					if got, err = readDirect(bam); err == nil && bytes.Equal(got, tc.wantAfter) {
						break
					}
					time.Sleep(200 * time.Millisecond)
				}
				if !bytes.Equal(got, tc.wantAfter) {
					t.Errorf("a new open serves %d bytes (%v), not the new version's %d", len(got), err, len(tc.wantAfter))
				}
			}
		})
	}
}

// TestFaultSIGKILLRestart: the mount process is killed with SIGKILL and
// the mount restarted on the same mount point. The restart fails with a
// message naming `cramfs unmount`; after that unmount it succeeds.
func TestFaultSIGKILLRestart(t *testing.T) {
	corpus.RequireFUSE(t)
	ref := testdata("ref", "ce.fa")
	src, mnt, cacheDir := t.TempDir(), t.TempDir(), t.TempDir()
	copyFile(t, testdata("cram", "ce_1000.3.0.cram"), filepath.Join(src, "x.cram"))
	want := convertAt(t, 1, testdata("cram", "ce_1000.3.0.cram"), []string{ref})
	args := []string{"mount", "-T", ref, "--cache-dir", cacheDir, "--level", "1", src, mnt}
	bin := buildCramfs(t)
	p := startMountProc(t, bin, mnt, args...)
	if got, err := readDirect(filepath.Join(mnt, "x.bam")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("first mount: %d bytes, %v", len(got), err)
	}
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.Done

	type result struct {
		rc  int
		msg string
	}
	done := make(chan result, 1)
	go func() {
		rc, msg, _, err := clitest.Exec(bin, args...)
		if err != nil {
			rc, msg = -1, err.Error()
		}
		done <- result{rc, msg}
	}()
	select {
	case r := <-done:
		rc, msg := r.rc, r.msg
		if rc == 0 || !strings.Contains(msg, "cramfs unmount "+mnt) {
			t.Fatalf("mount over the dead mount: exit %d, message %q; want a failure naming `cramfs unmount %s`", rc, msg, mnt)
		}
		t.Logf("restart on the dead mount: exit %d: %s", rc, strings.TrimSpace(msg))
	case <-time.After(10 * time.Second):
		t.Fatal("mount over the dead mount hangs")
	}
	if rc, stderr, _ := runCmd(t, "unmount", mnt); rc != 0 {
		t.Fatalf("cramfs unmount: exit %d: %s", rc, stderr)
	}

	p = startMountProc(t, bin, mnt, args...)
	if got, err := readDirect(filepath.Join(mnt, "x.bam")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("restarted mount: %d bytes, %v", len(got), err)
	}
	if err := unmountProc(t, p); err != nil {
		t.Error(err)
	}
}
