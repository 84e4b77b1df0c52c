package reference

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/cramfs/cramfs/internal/smapstest"
)

// mappedRSS returns the resident bytes of the mapping that holds addr.
func mappedRSS(t *testing.T, addr uintptr) int64 {
	t.Helper()
	rss := smapstest.Mapping(t, addr)["Rss"]
	kb, err := strconv.ParseInt(strings.TrimSuffix(rss, " kB"), 10, 64)
	if err != nil {
		t.Fatalf("smaps Rss %q: %v", rss, err)
	}
	return kb << 10
}

// keptResident is the most of a mapping that may stay resident after a
// read: its keptRegions most recent regions, and a page at each end.
const keptResident = keptRegions*regionSize + 8<<10

// bigContig writes and opens a contig of 21 Mb (with its .fai), ten times
// keptResident, whose bases repeat ACGTTGCAAC.
// checkDropped fails t if more than keptResident bytes of c's mapping,
// which starts at addr, are still resident after it was read.
func checkDropped(t *testing.T, c *Contig, addr uintptr) {
	t.Helper()
	if rss := mappedRSS(t, addr); rss > keptResident {
		t.Fatalf("%d bytes of the %d-byte mapping still resident after reading it, want at most %d", rss, len(c.m.data), keptResident)
	}
}

func bigContig(t *testing.T) *Contig {
	t.Helper()
	var fa bytes.Buffer
	fa.WriteString(">big\n")
	line := bytes.Repeat([]byte("ACGTTGCAac"), 6)
	for range 350000 {
		fa.Write(line)
		fa.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "big.fa")
	if err := os.WriteFile(path, fa.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// With its .fai, opening it reads none of its pages.
	if err := os.WriteFile(path+".fai", []byte("big\t21000000\t5\t60\t61\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open([]string{path}, Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s.Contigs()[0]
}

// TestBasesLeaveNoResidentPages reads a 21 MB contig from end to end in
// windows, as the decoder does, and checks that the mapping's pages do
// not stay in the process's resident set: a whole reference read by a
// long mount would otherwise count in its memory.
func TestBasesLeaveNoResidentPages(t *testing.T) {
	c := bigContig(t)
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(c.m.data)))
	var buf []byte
	var err error
	for start := int64(0); start < c.Len(); start += 100000 {
		end := min(start+150000, c.Len()) // overlapping windows
		if buf, err = c.Bases(buf[:0], start, end); err != nil {
			t.Fatal(err)
		}
		for i, b := range buf {
			if want := "ACGTTGCAAC"[(start+int64(i))%10]; b != want {
				t.Fatalf("base %d is %q, want %q", start+int64(i), b, want)
			}
		}
	}
	checkDropped(t, c, addr)
}

// TestSmallBasesLeaveNoResidentPages reads a 21 MB contig from end to end
// in windows of a few thousand bases, as the decoder does for containers
// of deep data (a container of 10,000 reads at 150× spans about 10 kb):
// the pages the kernel maps around each fault (fault-around, large folios)
// must leave with the pages read, else they accumulate over the contig.
func TestSmallBasesLeaveNoResidentPages(t *testing.T) {
	c := bigContig(t)
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(c.m.data)))
	var buf []byte
	var err error
	for start := int64(0); start < c.Len(); start += 3000 {
		end := min(start+4500, c.Len()) // overlapping windows
		if buf, err = c.Bases(buf[:0], start, end); err != nil {
			t.Fatal(err)
		}
	}
	checkDropped(t, c, addr)
}

// TestSmallWindowsKeepTheirRegion reads windows of 150 bases, one after
// the other, within the first region of a contig, as the decoder does for
// a file of slices of one read: the region's pages stay mapped from one
// window to the next rather than being dropped after each and faulted in
// again by the next, and leave once keptRegions other regions were read.
func TestSmallWindowsKeepTheirRegion(t *testing.T) {
	c := bigContig(t)
	addr := uintptr(unsafe.Pointer(unsafe.SliceData(c.m.data)))
	var buf []byte
	var err error
	for start := int64(0); start < 500_000; start += 150 {
		if buf, err = c.Bases(buf[:0], start, start+150); err != nil {
			t.Fatal(err)
		}
	}
	if rss := mappedRSS(t, addr); rss < 64<<10 {
		t.Fatalf("%d bytes resident after reading 500 kb in windows of 150 bases; want the region's pages kept", rss)
	}
	for r := int64(1); r <= keptRegions; r++ {
		if buf, err = c.Bases(buf[:0], r*regionSize, r*regionSize+150); err != nil {
			t.Fatal(err)
		}
	}
	if rss := mappedRSS(t, addr); rss > keptResident {
		t.Fatalf("%d bytes resident after reading %d other regions, want at most %d", rss, keptRegions, keptResident)
	}
}
