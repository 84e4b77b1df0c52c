package service

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine"
	"github.com/cramfs/cramfs/engine/cram"
	cfs "github.com/cramfs/cramfs/fs"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/hostile"
)

// multiContainerCRAM writes, with samtools, a CRAM of 3,000 reads in
// containers of 500, its blocks stored raw (level 0, no reference), and
// returns its bytes: read names are plain text in the file.
func multiContainerCRAM(t *testing.T, path string) []byte {
	t.Helper()
	if _, err := samtools("--version"); err != nil {
		requireMount(t) // skips, or fails under CI
	}
	r := rand.New(rand.NewPCG(7, 1))
	var sam strings.Builder
	sam.WriteString("@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:c1\tLN:1000000\n")
	pos := 1
	for i := range 3000 {
		pos += r.IntN(100)
		s, q := make([]byte, 100), make([]byte, 100)
		for j := range s {
			s[j], q[j] = "ACGT"[r.IntN(4)], byte(33+r.IntN(41))
		}
		fmt.Fprintf(&sam, "r%d\t0\tc1\t%d\t60\t100M\t*\t0\t0\t%s\t%s\n", i, pos, s, q)
	}
	samPath := path + ".sam"
	if err := os.WriteFile(samPath, []byte(sam.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := samtools("view", "-C", "--no-PG", "--output-fmt-option", "no_ref=1",
		"--output-fmt-option", "seqs_per_slice=500", "--output-fmt-option", "level=0", "-o", path, samPath); err != nil {
		t.Fatalf("samtools view -C: %v\n%s", err, out)
	}
	os.Remove(samPath)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestFaultCRAMRewrittenInPlaceSameSizeAndMtime: between two mounts on
// the same cache, a middle container of the CRAM is rewritten in place
// (one read renamed, CRCs fixed: the file has the same size and its first
// and last 64 KiB are unchanged) and its mtime restored. The kernel's
// ctime tells the new version: the second mount scans it again and
// serves exactly `cramfs convert` of the new file, where it used to fail
// every read of that container with EIO.
func TestFaultCRAMRewrittenInPlaceSameSizeAndMtime(t *testing.T) {
	corpus.RequireFUSE(t)
	src, cacheDir := t.TempDir(), t.TempDir()
	p := filepath.Join(src, "x.cram")
	changed := middleContainerChange(t, p)
	wantOld := convertAt(t, 1, p, nil)
	cfg := mountConfig{cacheSize: "0", level: "1", cacheDir: cacheDir}
	m := mountT(t, src, cfg)
	if got, err := readDirect(filepath.Join(m.mnt, "x.bam")); err != nil || !bytes.Equal(got, wantOld) {
		t.Fatalf("first mount: %d bytes, %v", len(got), err)
	}
	m.unmount(t)

	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	rewriteInPlace(t, p, changed, st.ModTime())
	if st2, err := os.Stat(p); err != nil || st2.Size() != st.Size() || !st2.ModTime().Equal(st.ModTime()) {
		t.Fatalf("the rewrite changed size or mtime (%v)", err)
	}
	wantNew := convertAt(t, 1, p, nil)
	if bytes.Equal(wantNew, wantOld) {
		t.Fatal("the rewrite did not change the BAM")
	}
	m = mountT(t, src, cfg)
	got, err := readDirect(filepath.Join(m.mnt, "x.bam"))
	if err != nil || !bytes.Equal(got, wantNew) {
		t.Fatalf("second mount: %d bytes (new version %d), %v", len(got), len(wantNew), err)
	}
}

// theIndex returns the path and bytes of the one layout index in dir,
// checking that it is of format 6 (see engine.readIndex), which the tests
// below edit.
func theIndex(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	ents, err := filepath.Glob(filepath.Join(dir, "*.idx"))
	if err != nil || len(ents) != 1 {
		t.Fatalf("want one index in %s, have %v (%v)", dir, ents, err)
	}
	b, err := os.ReadFile(ents[0])
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != 6 {
		t.Fatalf("index format %d; this test knows format 6", v)
	}
	return ents[0], b
}

// segRecord is the length of a segment record in an index of format 6:
// lengths, digest, the digest's kind, the content sum's kind and the sum.
const segRecord = 8 + 8 + 4 + 1 + 1 + 4

// segmentsAt returns the offset of the first container segment record of
// an index of format 6, and how many there are.
func segmentsAt(b []byte) (off, n int) {
	le := binary.LittleEndian
	off = 16 + int(le.Uint32(b[12:])) + 5*8 + 2*32 + 4 + segRecord // past the header segment
	return off + 8, int(le.Uint64(b[off:]))
}

// rewriteIndex writes b to path with its checksum recomputed.
func rewriteIndex(t *testing.T, path string, b []byte) {
	t.Helper()
	binary.LittleEndian.PutUint32(b[len(b)-4:], crc32.Checksum(b[:len(b)-4], crc32.MakeTable(crc32.Castagnoli)))
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// corruptSegmentDigest flips a bit of the digest of the first segment
// with records in the one layout index in dir: the index stays valid and
// trusted, its layout wrong.
func corruptSegmentDigest(t *testing.T, dir string) {
	t.Helper()
	path, b := theIndex(t, dir)
	off, n := segmentsAt(b)
	for i := 0; i < n; i, off = i+1, off+segRecord {
		if binary.LittleEndian.Uint64(b[off:]) != 0 {
			b[off+16] ^= 1
			rewriteIndex(t, path, b)
			return
		}
	}
	t.Fatal("no segment with records")
}

// forgeBAI replaces the BAI in the one layout index in dir by one that
// indexes no record at all, the checksum recomputed, and returns the
// index's path.
func forgeBAI(t *testing.T, dir string) string {
	t.Helper()
	path, b := theIndex(t, dir)
	off, n := segmentsAt(b)
	off += segRecord * n
	le := binary.LittleEndian
	if b[off] != 1 {
		t.Fatalf("index flag %d: the index holds no BAI", b[off])
	}
	bai := b[off+9 : len(b)-4]
	nRef := int(le.Uint32(bai[4:]))
	forged := append([]byte("BAI\x01"), bai[4:8]...)
	forged = append(forged, make([]byte, 8*nRef)...) // no bins, no intervals
	out := append(le.AppendUint64(append([]byte(nil), b[:off+1]...), uint64(len(forged))), forged...)
	rewriteIndex(t, path, append(out, 0, 0, 0, 0))
	return path
}

// TestMountRefusesForeignIndex: a layout index whose BAI was replaced by
// one that indexes nothing (checksum recomputed), owned by another user,
// is refused by the next mount on the same cache: region queries through
// it still find every read (they found none when the index was trusted
// blindly), and the refusal is logged with the file and why.
func TestMountRefusesForeignIndex(t *testing.T) {
	requireMount(t)
	ref := testdata("ref", "ce.fa")
	src, cacheDir := t.TempDir(), t.TempDir()
	copyFile(t, testdata("cram", "ce_1000.3.0.cram"), filepath.Join(src, "x.cram"))
	cfg := mountConfig{refs: []string{ref}, cacheSize: "0", level: "1", cacheDir: cacheDir}
	count := func(m *mounted) string {
		out, err := samtools("view", "-c", filepath.Join(m.mnt, "x.bam"), "CHROMOSOME_I:1-1000000")
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(out))
	}
	m := mountT(t, src, cfg)
	want := count(m)
	m.unmount(t)
	if want == "0" {
		t.Fatal("the region holds no read")
	}
	path := forgeBAI(t, cacheDir)
	if err := os.Chown(path, 4242, -1); err != nil {
		t.Skipf("cannot give the index to another user (%v): needs root", err)
	}
	m = mountT(t, src, cfg)
	got := count(m)
	t.Logf("CHROMOSOME_I:1-1000000: %s reads through the genuine index, %s after the forgery", want, got)
	if got != want {
		t.Errorf("region query through a foreign index: %s reads, want %s", got, want)
	}
	m.unmount(t)
	if logs := m.log.String(); !strings.Contains(logs, "refused") || !strings.Contains(logs, "owned by uid 4242") || !strings.Contains(logs, filepath.Base(path)) {
		t.Errorf("refusal not logged with the file and why:\n%s", logs)
	}
}

// TestOpenerReopensBAMWhoseLayoutWasDropped: a mount loads a layout whose
// segment digest is wrong. The read of that segment fails (EIO through
// the mount), the layout is dropped, and the next open of the same,
// unchanged file, without a remount, gets a new BAM that serves every
// byte of `cramfs convert`.
func TestOpenerReopensBAMWhoseLayoutWasDropped(t *testing.T) {
	ref := testdata("ref", "ce.fa")
	p := filepath.Join(t.TempDir(), "x.cram")
	copyFile(t, testdata("cram", "ce_1000.3.0-multislice.cram"), p)
	want := convertAt(t, 1, p, []string{ref})
	cacheDir := t.TempDir()
	store, err := reference.Open([]string{ref}, reference.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	newOp := func() *opener {
		mgr := engine.NewManager(engine.Options{Threads: 2, CacheSize: -1, Level: 1, CacheDir: cacheDir, Readahead: -1}, nil)
		t.Cleanup(mgr.Close)
		op := newOpener(mgr, store, cram.Options{Reference: store}, slog.New(slog.DiscardHandler))
		t.Cleanup(op.Close)
		return op
	}
	ctx := context.Background()
	if _, err := newOp().OpenBAM(ctx, refIn(t, p)); err != nil {
		t.Fatal(err)
	}
	corruptSegmentDigest(t, cacheDir)

	op := newOp()
	first, err := op.OpenBAM(ctx, refIn(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.ReadAt(make([]byte, first.Size()), 0); err == nil {
		t.Fatal("the wrong layout served a whole file")
	}
	again, err := op.OpenBAM(ctx, refIn(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if again == first {
		t.Fatal("the opener gave the BAM whose layout was dropped again")
	}
	// A node looked up with the first refuses to open the second (whose
	// bytes its inode may hold mixed with the first's) by their tags.
	if t1, t2 := first.(cfs.Tagger).Tag(), again.(cfs.Tagger).Tag(); t1 == t2 {
		t.Errorf("the BAM scanned again has the dropped one's tag %s", t1)
	}
	got := make([]byte, again.Size())
	if _, err := again.ReadAt(got, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("reopened BAM: %d bytes (want %d), %v", len(got), len(want), err)
	}
}

// TestMountRefusesBAMScannedAgainUnderOldNode mounts a CRAM whose layout
// has a wrong segment digest: the read of that segment fails, the layout
// is dropped, and an open through the node looked up before (the kernel
// keeps it, and its size and pages) fails with EIO, logged with why,
// rather than serve the new scan's bytes under the old inode.
func TestMountRefusesBAMScannedAgainUnderOldNode(t *testing.T) {
	ref := testdata("ref", "ce.fa")
	src := t.TempDir()
	p := filepath.Join(src, "x.cram")
	copyFile(t, testdata("cram", "ce_1000.3.0-multislice.cram"), p)
	cacheDir := t.TempDir()
	cfg := mountConfig{refs: []string{ref}, level: "1", cacheDir: cacheDir, timeout: time.Hour}
	m := mountT(t, src, cfg)
	if _, err := os.Stat(filepath.Join(m.mnt, "x.bam")); err != nil {
		t.Fatal(err)
	}
	m.unmount(t)
	corruptSegmentDigest(t, cacheDir)

	m = mountT(t, src, cfg)
	bam := filepath.Join(m.mnt, "x.bam")
	if _, err := os.ReadFile(bam); !errors.Is(err, syscall.EIO) {
		t.Fatalf("read with a wrong segment digest: %v, want EIO", err)
	}
	if _, err := os.ReadFile(bam); !errors.Is(err, syscall.EIO) {
		t.Fatalf("open through the node of the dropped layout: %v, want EIO", err)
	}
	if l := m.log.String(); !strings.Contains(l, "BAM of x.cram: scanned again into layout") {
		t.Errorf("the refused open is not logged with why:\n%s", l)
	}
}

// TestIndexSharedCacheFlag: `cramfs index` refuses a group-writable
// cache directory unless --shared-cache is given (it still succeeds,
// keeping layouts in memory, and says why once); with the flag it writes
// index files the directory's group can read.
func TestIndexSharedCacheFlag(t *testing.T) {
	cram := testdata("cram", "ce_1000.3.0.cram")
	ref := testdata("ref", "ce.fa")
	dir := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(dir, 0o775); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o775|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	rc, stderr, _ := runCmd(t, "index", "-T", ref, "--cache-dir", dir, cram)
	if rc != 0 {
		t.Fatalf("index into a group-writable cache: exit %d: %s", rc, stderr)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 || strings.Count(stderr, "not trusted") != 1 {
		t.Fatalf("without --shared-cache: %d files written, stderr:\n%s", len(ents), stderr)
	}
	rc, stderr, _ = runCmd(t, "index", "--shared-cache", "-T", ref, "--cache-dir", dir, cram)
	if rc != 0 {
		t.Fatalf("index --shared-cache: exit %d: %s", rc, stderr)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("with --shared-cache: %d files written, stderr:\n%s", len(ents), stderr)
	}
	if fi, err := ents[0].Info(); err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("shared index file mode %v (%v), want 0640", fi.Mode(), err)
	}
}

// refIn is the fs.CRAMRef of the CRAM at path, with its directory as the
// source root.
func refIn(t *testing.T, path string) cfs.CRAMRef {
	t.Helper()
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return cramRef(t, root, filepath.Base(path))
}

// TestMountSeesInPlaceRewriteWithoutRemount: the CRAM of a running mount
// is rewritten in place with its size and mtime kept. Its ctime changes,
// which the node identity holds, so once the kernel looks the name up
// again (a 100 ms entry timeout here) x.bam is a new node serving the new
// version; before, the old node stayed, and its reads of the changed
// container failed with EIO until a remount.
func TestMountSeesInPlaceRewriteWithoutRemount(t *testing.T) {
	corpus.RequireFUSE(t)
	src := t.TempDir()
	p := filepath.Join(src, "x.cram")
	changed := middleContainerChange(t, p)
	wantOld := convertAt(t, 1, p, nil)
	m := mountT(t, src, mountConfig{cacheSize: "0", level: "1", timeout: 100 * time.Millisecond})
	bam := filepath.Join(m.mnt, "x.bam")
	if got, err := readDirect(bam); err != nil || !bytes.Equal(got, wantOld) {
		t.Fatalf("before the rewrite: %d bytes, %v", len(got), err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	rewriteInPlace(t, p, changed, st.ModTime())
	wantNew := convertAt(t, 1, p, nil)
	var got []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		got, err = readDirect(bam)
		if err == nil && !bytes.Equal(got, wantOld) && !bytes.Equal(got, wantNew) {
			t.Fatalf("a read gave %d bytes that are neither version", len(got))
		}
		if err == nil && bytes.Equal(got, wantNew) {
			return
		}
	}
	t.Fatalf("x.bam still not the new version 10 s after the rewrite: %d bytes, %v", len(got), err)
}

// middleContainerChange writes a CRAM of several containers at p and
// returns its bytes with read r1500, in a middle container, renamed
// s1500 (its CRCs fixed).
func middleContainerChange(t *testing.T, p string) []byte {
	t.Helper()
	orig := multiContainerCRAM(t, p)
	off := bytes.Index(orig, []byte("r1500"))
	if off < 128<<10 || off > len(orig)-128<<10 {
		t.Fatalf("read r1500 at %d of %d bytes: not in a middle container", off, len(orig))
	}
	changed, err := hostile.FlipAt(orig, off, 0x01, true)
	if err != nil {
		t.Fatal(err)
	}
	return changed
}

// rewriteInPlace overwrites the file p with b (of the same size) and sets
// its mtime back to mtime: only its ctime tells the change.
func rewriteInPlace(t *testing.T, p string, b []byte, mtime time.Time) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}
