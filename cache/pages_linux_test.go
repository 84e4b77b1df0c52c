package cache

import (
	"slices"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/cramfs/cramfs/internal/smapstest"
)

// vmFlags returns the VmFlags of the mapping that holds address a.
func vmFlags(t *testing.T, a uintptr) []string {
	t.Helper()
	return strings.Fields(smapstest.Mapping(t, a)["VmFlags"])
}

// hugeStart is the first huge-page boundary inside s's capacity.
func hugeStart(s []byte) uintptr {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s[:cap(s)])))
	return (p + hugePage - 1) &^ (hugePage - 1)
}

// TestStorageAdvisedHuge: fresh segment storage (Alloc, Get) is advised
// for transparent huge pages ("hg" in its mapping's VmFlags), and the
// advice is taken back ("nh") when the pool lets the storage go.
func TestStorageAdvisedHuge(t *testing.T) {
	const n = 5 << 20 // holds at least one whole huge page wherever it lands
	c, err := New[Key](3 * n)
	if err != nil {
		t.Fatal(err)
	}
	a := c.Alloc(n)
	if flags := vmFlags(t, hugeStart(a.B)); !slices.Contains(flags, "hg") {
		t.Errorf("Alloc(%d): storage's VmFlags %v, want hg", n, flags)
	}
	g := c.Pool().Get(n)
	if flags := vmFlags(t, hugeStart(g.B)); !slices.Contains(flags, "hg") {
		t.Errorf("Pool.Get(%d): storage's VmFlags %v, want hg", n, flags)
	}

	// Released, g's storage is kept for reuse, and keeps its advice.
	gs := g.B
	g.Release()
	if free, _ := c.Pool().Free(); free != 1 {
		t.Fatalf("after Release: %d free buffers, want 1", free)
	}
	if flags := vmFlags(t, hugeStart(gs)); !slices.Contains(flags, "hg") {
		t.Errorf("storage kept in the pool: VmFlags %v, want hg", flags)
	}
	// Shed, it goes to the collector without the advice.
	if !c.Pool().shed() {
		t.Fatal("shed: nothing to drop")
	}
	flags := vmFlags(t, hugeStart(gs))
	if slices.Contains(flags, "hg") || !slices.Contains(flags, "nh") {
		t.Errorf("storage dropped from the pool: VmFlags %v, want nh and not hg", flags)
	}
	c.Unreserve(int64(cap(a.B)))
	a.Release()
}

// resident counts the pages of b that mincore says are in memory.
func resident(t *testing.T, b []byte) int {
	t.Helper()
	vec := make([]byte, (len(b)+pageSize-1)/pageSize)
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}

// TestPrefault: Prefault(s, n) makes the whole pages of s's first n bytes
// resident, and none beyond them.
func TestPrefault(t *testing.T) {
	const size, n = 8 << 20, 3<<20 + 100
	s := make([]byte, 0, size)
	all := s[:size]
	p := uintptr(unsafe.Pointer(&all[0]))
	lo := int((p+pageSize-1)&^(pageSize-1) - p)
	hi := int((p+n)&^(pageSize-1) - p)
	end := int((p+size)&^(pageSize-1) - p)
	if got := resident(t, all[lo:end]); got != 0 {
		t.Skipf("fresh 8 MiB already has %d pages resident: nothing to show", got)
	}
	Prefault(s, n)
	if got, want := resident(t, all[lo:hi]), (hi-lo)/pageSize; got != want {
		t.Errorf("after Prefault(s, %d): %d of the %d whole pages inside resident", n, got, want)
	}
	// Beyond n: untouched (a huge page would hold them, but s is not advised).
	if got := resident(t, all[hi+pageSize:end]); got != 0 {
		t.Errorf("after Prefault(s, %d): %d pages beyond it resident, want 0", n, got)
	}
	Prefault(nil, 10)
	Prefault(s, 0)
}
