package service

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMountRereadAfterPageCacheDropped reads a mounted BAM several times the
// reorder window (so that the reader passes segments) twice, the kernel's
// page cache of it dropped in between: the second read is served from the
// mount's cache, every segment found there and none built again.
func TestMountRereadAfterPageCacheDropped(t *testing.T) {
	requireMount(t)
	src := t.TempDir()
	streamCRAM(t, filepath.Join(src, "x.cram"), 120000)
	m := mountT(t, src, mountConfig{cacheSize: "256M"})
	bam := filepath.Join(m.mnt, "x.bam")
	first, err := os.ReadFile(bam)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) < 16<<20 {
		t.Fatalf("BAM of %d bytes: too small to leave segments behind a reader", len(first))
	}
	before := m.mgr.CacheStats()
	dropPageCache(t, bam)
	again, err := os.ReadFile(bam)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, first) {
		t.Fatal("the second read gave other bytes")
	}
	after := m.mgr.CacheStats()
	t.Logf("first read: %+v; second: %+v", before, after)
	if after.Hits == before.Hits {
		t.Fatalf("the second read found nothing in the cache (no read reached the mount?): %+v", after)
	}
	if after.Adds != before.Adds || after.Misses != before.Misses {
		t.Errorf("the second read built %d segments (%d misses); want all from the cache", after.Adds-before.Adds, after.Misses-before.Misses)
	}
}

// streamCRAM writes at path a CRAM without reference of n sorted reads of
// 100 bases, in containers of 10,000 reads.
func streamCRAM(t *testing.T, path string, n int) {
	t.Helper()
	r := rand.New(rand.NewPCG(3, 2))
	var sam strings.Builder
	fmt.Fprintf(&sam, "@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:c1\tLN:%d\n", 100*n)
	s, q := make([]byte, 100), make([]byte, 100)
	for i := range n {
		for j := range s {
			s[j], q[j] = "ACGT"[r.IntN(4)], byte(33+r.IntN(41))
		}
		fmt.Fprintf(&sam, "r%d\t0\tc1\t%d\t60\t100M\t*\t0\t0\t%s\t%s\n", i, 1+i*50, s, q)
	}
	samPath := path + ".sam"
	if err := os.WriteFile(samPath, []byte(sam.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(samPath)
	mustSamtools(t, "view", "-C", "--no-PG", "--output-fmt-option", "no_ref=1", "-o", path, samPath)
}

// dropPageCache has the kernel forget the pages of path it holds.
func dropPageCache(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatalf("fadvise %s DONTNEED: %v", path, err)
	}
}

// TestStatusTextShowsCacheUse: the status for people shows the cache's
// hits and misses, the segments built and the evictions, which tell
// whether re-reads came from the cache, and the storage it keeps free for
// the next builds, which counts against its budget like the segments.
func TestStatusTextShowsCacheUse(t *testing.T) {
	var b strings.Builder
	st := mountStatus{Src: "/src", Mnt: "/mnt", Cache: cacheStatus{Hits: 1439, Misses: 735, Adds: 201, Evictions: 3, Entries: 201, Bytes: 729 << 20, Free: 14 << 20, MaxBytes: 3 << 30}}
	writeStatus(&b, st)
	want := "cache: 729.0 MiB of 3.0 GiB in 201 segments (0 B reserved, 14.0 MiB free for reuse); 1439 hits, 735 misses, 201 built, 3 evictions\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("status text:\n%s\nwant the line %q", b.String(), want)
	}
}

// TestStatusTextShowsOpenFiles: the status for people shows the CRAM
// descriptors and the state of open files held, each against its bound.
func TestStatusTextShowsOpenFiles(t *testing.T) {
	var b strings.Builder
	st := mountStatus{Src: "/src", Mnt: "/mnt", States: stateStatus{Bytes: 3 << 20, MaxBytes: 32 << 20, Descriptors: 12, MaxOpen: 512}}
	writeStatus(&b, st)
	want := "open files: 12 of 512 CRAM descriptors, 3.0 MiB of 32.0 MiB of state\n"
	if !strings.Contains(b.String(), want) {
		t.Errorf("status text:\n%s\nwant the line %q", b.String(), want)
	}
}
