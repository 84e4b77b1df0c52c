package service

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	cfs "github.com/cramfs/cramfs/fs"
	"github.com/cramfs/cramfs/internal/hostile"
)

// bigHeaderSAM is a SAM file with a header the size of GRCh38's full
// analysis set (3,366 @SQ lines with M5, AS and UR: about 500 KB) and a few
// reads on its first reference.
func bigHeaderSAM() string {
	var sb strings.Builder
	sb.WriteString("@HD\tVN:1.6\tSO:coordinate\n")
	for i := 1; i <= 3366; i++ {
		fmt.Fprintf(&sb, "@SQ\tSN:chrUn_KI27%05dv1_decoy\tLN:%d\tM5:%032x\tAS:GRCh38\tUR:file:///refs/GRCh38_full_analysis_set_plus_decoy_hla.fa\n", i, 100000+i*977, i)
	}
	for j := 1; j <= 8; j++ {
		fmt.Fprintf(&sb, "r%d\t0\tchrUn_KI2700001v1_decoy\t%d\t60\t10M\t*\t0\t0\tACGTACGTAC\tIIIIIIIIII\n", j, j*100)
	}
	return sb.String()
}

// bigHeaderCRAMs returns a source directory of n copies of one CRAM made
// of bigHeaderSAM, each with its own mtime and so its own file version.
func bigHeaderCRAMs(t *testing.T, n int) string {
	t.Helper()
	_, src, cram := cramFromSAM(t, "f0", bigHeaderSAM())
	b, err := os.ReadFile(cram)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(cram); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		p := filepath.Join(src, fmt.Sprintf("f%d.cram", i))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		mt := time.Unix(1700000000+int64(i), 0)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	return src
}

// heapInUse is the live heap after collections.
func heapInUse() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// fuseReaderBytes is what each go-fuse goroutine waiting for a request
// holds: a buffer of the largest request (MaxWrite, the mount's
// DefaultMaxRead, plus a header and alignment, in whole pages).
const fuseReaderBytes = cfs.DefaultMaxRead + 8<<10

// fuseReaders counts the goroutines waiting in go-fuse for a request.
// go-fuse starts one more whenever none waits, up to GOMAXPROCS (2 to 16)
// of them, and they stay: a burst of concurrent requests at any time
// leaves a buffer of fuseReaderBytes more in the heap, which is the
// mount's bounded cost, not what its files keep.
func fuseReaders() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "go-fuse/v2/fuse.(*fuseFD).readRequest(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// heapKept is the live heap that m's block cache and file states do not
// account for (they are bounded by their own budgets, checked apart), nor
// the buffers of go-fuse's waiting readers: the least of a few samples,
// since what a goroutine still running allocates (an asynchronous FUSE
// request, another test's leftovers, slow on a loaded machine) is not what
// the mount keeps.
func heapKept(m *mounted) int64 {
	least := int64(math.MaxInt64)
	for range 5 {
		cs := m.mgr.CacheStats()
		readers := int64(fuseReaders())
		least = min(least, heapInUse()-cs.Bytes-cs.Reserved-cs.Free-readers*fuseReaderBytes)
		time.Sleep(20 * time.Millisecond)
	}
	return least
}

// TestMountManyBigHeadersStayBounded looks up and reads every BAM and BAI
// of a mount of 600 CRAMs with GRCh38-sized headers. What each file keeps
// once read is a small constant: its header, layout and index are dropped
// under the budget and read again on demand, and at most MaxOpenFiles
// CRAM descriptors are open at any time (counted in /proc/self/fd). Each
// file kept about 2 MB and its descriptor before. The heap is compared
// between the first half (which fills the block cache and the file
// states) and the second, so that what other tests of the process left
// behind does not count; the cache and the states count apart, against
// their bounds, and so do go-fuse's request buffers (heapKept): a new
// reader goroutine waiting for a request holds 1 MiB, 3.5 KB a file here,
// and on a machine of more cores a burst of requests starts up to 16 of
// them, which made a file seem to keep 10 KB. Measured: about 3 KB a file
// (the opener's entry of its version, which it keeps for 4,096 paths, and
// the two nodes).
func TestMountManyBigHeadersStayBounded(t *testing.T) {
	const n, maxOpen, cacheSize = 600, 32, 16 << 20
	src := bigHeaderCRAMs(t, n)
	m := mountT(t, src, mountConfig{cacheSize: fmt.Sprint(cacheSize), level: "1", maxOpenFiles: maxOpen})
	fdBefore := openFDs(t)
	var first [2][]byte
	var heapMid int64
	var readersMid int
	maxFD := 0
	for i := range n {
		if i == n/2 {
			heapMid, readersMid = heapKept(m), fuseReaders()
		}
		for k, ext := range []string{".bam", ".bam.bai"} {
			p := filepath.Join(m.mnt, fmt.Sprintf("f%d%s", i, ext))
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first[k] = b
			} else if !bytes.Equal(b, first[k]) {
				t.Fatalf("%s: %d bytes, not the %d of f0%s (the same CRAM)", p, len(b), len(first[k]), ext)
			}
		}
		maxFD = max(maxFD, openFDs(t)-fdBefore)
	}
	// Read again from the first: every state was dropped since.
	for i := range 3 {
		if b, err := os.ReadFile(filepath.Join(m.mnt, fmt.Sprintf("f%d.bam", i))); err != nil || !bytes.Equal(b, first[0]) {
			t.Fatalf("f%d.bam read again: %d bytes, %v", i, len(b), err)
		}
	}
	grown := heapKept(m) - heapMid
	bytesHeld, files := m.mgr.States().Stats()
	t.Logf("files %d-%d: heap grew by %d KiB (%d bytes a file; go-fuse readers %d, then %d, apart); states hold %d KiB and %d descriptors; at most %d more descriptors open",
		n/2, n, grown>>10, grown/(n/2), readersMid, fuseReaders(), bytesHeld>>10, files, maxFD)
	if maxFD > maxOpen+4 {
		t.Errorf("up to %d more descriptors open while reading, want at most %d CRAMs (+4)", maxFD, maxOpen)
	}
	if files > maxOpen {
		t.Errorf("file states hold %d descriptors, more than %d", files, maxOpen)
	}
	if cs := m.mgr.CacheStats(); cs.Bytes+cs.Reserved+cs.Free > cacheSize {
		t.Errorf("the cache holds %d bytes, reserves %d and keeps %d free, more than its %d", cs.Bytes, cs.Reserved, cs.Free, cacheSize)
	}
	if limit := int64(8 << 20); bytesHeld > limit {
		t.Errorf("file states hold %d bytes, more than their %d bound", bytesHeld, limit)
	}
	if perFile := grown / (n / 2); perFile > 4<<10 {
		t.Errorf("heap grew by %d bytes over %d more files once the cache and the states were full: %d bytes a file, want about 3,000", grown, n/2, perFile)
	}
}

// TestMountLookedUpNamesStayBounded looks up (stats) more small CRAMs
// than the opener remembers: past that, what each name looked up keeps
// while the kernel keeps it (until memory pressure makes it send FORGET)
// is its node, a small constant: the BAM's size and the CRAM's stat, not
// the BAM. A node held its BAM before, with the CRAM's parsed header and
// container table, for every name ever looked up. Measured here: about
// 500 bytes a name (the node with its go-fuse inode, go-fuse's tables,
// the name), 1,730 before.
func TestMountLookedUpNamesStayBounded(t *testing.T) {
	const first, n = maxEntries + 500, maxEntries + 2500
	_, dir, cram := cramFromSAM(t, "one", smallSAM)
	b, err := os.ReadFile(cram)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "many")
	if err := os.Mkdir(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if err := os.WriteFile(filepath.Join(src, fmt.Sprintf("f%d.cram", i)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	m := mountT(t, src, mountConfig{})
	var heapFirst int64
	for i := range n {
		if i == first {
			heapFirst = heapKept(m)
		}
		p := filepath.Join(m.mnt, fmt.Sprintf("f%d.bam", i))
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Fatalf("stat %s: %v", p, err)
		}
	}
	grown := heapKept(m) - heapFirst
	perName := grown / (n - first)
	t.Logf("names %d-%d: heap grew by %d KiB, %d bytes a name", first, n, grown>>10, perName)
	if perName > 1<<10 {
		t.Errorf("heap grew by %d bytes over %d more names looked up, %d bytes a name: want the node only (about 500)", grown, n-first, perName)
	}
}

// smallSAM is a SAM file of a few reads on one reference.
const smallSAM = "@HD\tVN:1.6\tSO:coordinate\n@SQ\tSN:chr1\tLN:100000\n" +
	"r1\t0\tchr1\t100\t60\t10M\t*\t0\t0\tACGTACGTAC\tIIIIIIIIII\n" +
	"r2\t0\tchr1\t200\t60\t10M\t*\t0\t0\tACGTACGTAC\tIIIIIIIIII\n"

// TestMountMoreCRAMsThanDescriptors runs the mount binary with a limit of
// 256 open descriptors (soft and hard, so raising the soft one gains
// nothing) over 300 CRAMs, and looks up, lists and reads every BAM: the
// mount keeps at most half its limit of CRAMs open (counted in its
// /proc/PID/fd), closing the least recently used and opening them again.
// Before, the 250th CRAM opened failed its lookup with EMFILE. The CRAMs'
// descriptors are counted apart from the others (the process's own, about
// 12, and an index file or two being read or written), which a loaded
// machine keeps open longer.
func TestMountMoreCRAMsThanDescriptors(t *testing.T) {
	requireMount(t)
	const n, limit = 300, 256
	bin := buildCramfs(t)
	wrapper := filepath.Join(t.TempDir(), "cramfs-limited")
	script := fmt.Sprintf("#!/bin/sh\nulimit -n %d || exit 97\nexec %q \"$@\"\n", limit, bin)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cram := testdata("cram", "ce_1000.3.0.cram")
	src := t.TempDir()
	mt := time.Unix(1700000000, 0) // one version for all: one scan
	for i := range n {
		p := filepath.Join(src, fmt.Sprintf("f%d.cram", i))
		copyFile(t, cram, p)
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	mnt := t.TempDir()
	p := startMountAt(t, wrapper, src, mnt, "--cache-dir", t.TempDir())
	want := convertAt(t, DefaultLevel, cram, []string{testdata("ref", "ce.fa")})
	fdDir := fmt.Sprintf("/proc/%d/fd", p.Cmd.Process.Pid)
	maxCRAMs, maxOther := 0, 0
	for i := range n {
		name := filepath.Join(mnt, fmt.Sprintf("f%d.bam", i))
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%s: %v\nmount log:\n%s", name, err, p.Stderr.String())
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: %d bytes, not the %d of cramfs convert", name, len(got), len(want))
		}
		crams, other := countFDs(fdDir, src)
		maxCRAMs, maxOther = max(maxCRAMs, crams), max(maxOther, other)
	}
	ents, err := os.ReadDir(mnt)
	if err != nil {
		t.Fatal(err)
	}
	bams := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".bam") {
			bams++
		}
	}
	if bams != n {
		t.Errorf("the listing names %d BAMs, want %d", bams, n)
	}
	t.Logf("at most %d CRAMs and %d other descriptors open in the mount (limit %d)", maxCRAMs, maxOther, limit)
	// One CRAM more while a lookup opens it before the least recently
	// used is closed.
	if maxCRAMs > limit/2+1 {
		t.Errorf("the mount had %d CRAMs open; it may keep %d", maxCRAMs, limit/2)
	}
	if maxOther > 32 {
		t.Errorf("the mount had %d descriptors open besides the CRAMs, want a few constant ones", maxOther)
	}
	if err := cfs.Unmount(mnt); err != nil {
		t.Fatal(err)
	}
	if rc := p.Wait(t); rc != 0 {
		t.Errorf("mount exited %d:\n%s", rc, p.Stderr.String())
	}
}

// countFDs counts the descriptors listed in fdDir (a /proc/PID/fd) that
// are CRAM files under src, and the others.
func countFDs(fdDir, src string) (crams, other int) {
	ents, err := os.ReadDir(fdDir)
	if err != nil {
		return 0, 0
	}
	for _, e := range ents {
		target, err := os.Readlink(filepath.Join(fdDir, e.Name()))
		if err == nil && strings.HasPrefix(target, src+"/") && strings.HasSuffix(target, ".cram") {
			crams++
		} else if err == nil {
			other++
		}
	}
	return crams, other
}

// TestMountRefusesContainerOverBudget mounts, with --cache-size 16M, a
// CRAM whose block declares 1 GiB of decoded data (decoding it took
// 2.7 GiB before): its stat fails with EIO, the log names the block and
// the --cache-size that would allow it, and the other file is served.
func TestMountRefusesContainerOverBudget(t *testing.T) {
	requireMount(t)
	orig, err := os.ReadFile(testdata("cram", "ce_1000.3.0.cram"))
	if err != nil {
		t.Fatal(err)
	}
	big, _, err := hostile.DeclareRawSize(orig, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	for name, b := range map[string][]byte{"big.cram": big, "ok.cram": orig} {
		if err := os.WriteFile(filepath.Join(src, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mnt := t.TempDir()
	p := startMountAt(t, buildCramfs(t), src, mnt, "--cache-size", "16M", "--cache-dir", t.TempDir())
	_, err = os.Stat(filepath.Join(mnt, "big.bam"))
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("stat of the CRAM over the budget: %v, want EIO", err)
	}
	if _, err := os.ReadFile(filepath.Join(mnt, "ok.bam")); err != nil {
		t.Errorf("the other CRAM: %v", err)
	}
	if err := cfs.Unmount(mnt); err != nil {
		t.Fatal(err)
	}
	p.Wait(t)
	log := p.Stderr.String()
	for _, want := range []string{"holds 1073741824 bytes decoded", "--cache-size 4097M would allow this one"} {
		if !strings.Contains(log, want) {
			t.Errorf("mount log lacks %q:\n%s", want, log)
		}
	}
}
