package cache

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of an x86-64 and arm64 transparent huge page;
// pageSize the base page size Prefault assumes (a larger one only makes
// it populate fewer pages).
const (
	hugePage = 2 << 20
	pageSize = 4 << 10
)

// adviseHuge marks the whole huge pages inside s's capacity as wanting
// transparent huge pages (on) or not (off), so that the kernel backs
// segment storage, which is written whole as soon as it is made, with
// one fault per 2 MiB instead of 512. The system's policy still decides:
// with transparent huge pages "never" the advice does nothing. The advice
// is taken back (off) when the storage leaves the pool for the collector,
// so that heap memory reused later for small objects, and touched
// sparsely, is not backed by huge pages it would not fill. Errors are
// ignored: the advice only changes how pages are backed.
func adviseHuge(s []byte, on bool) {
	if cap(s) == 0 {
		return
	}
	all := s[:cap(s)]
	p := uintptr(unsafe.Pointer(&all[0]))
	lo := (p+hugePage-1)&^(hugePage-1) - p // offsets of the first and past the last whole huge page
	hi := (p+uintptr(len(all)))&^(hugePage-1) - p
	if hi <= lo || hi > uintptr(len(all)) { // none inside (hi wrapped below p)
		return
	}
	advice := unix.MADV_HUGEPAGE
	if !on {
		advice = unix.MADV_NOHUGEPAGE
	}
	_ = unix.Madvise(all[lo:hi], advice)
}

// Prefault backs the pages of the first n bytes of s's capacity now, in
// one madvise(MADV_POPULATE_WRITE), rather than fault them in one by one
// as they are written: for storage about to be filled with exactly n
// bytes (a segment whose size the layout gives). Each fault is a trap
// into the kernel; populating a range takes one. Only the pages wholly
// inside the n bytes are populated, none of the capacity beyond, which
// may never be written. Pages already present cost a page-table walk.
// Errors (a kernel before 5.14) are ignored: the pages then fault in as
// before.
func Prefault(s []byte, n int) {
	if cap(s) == 0 || n <= 0 {
		return
	}
	all := s[:cap(s)]
	n = min(n, len(all))
	p := uintptr(unsafe.Pointer(&all[0]))
	lo := (p+pageSize-1)&^(pageSize-1) - p
	hi := (p+uintptr(n))&^(pageSize-1) - p
	// hi wraps below zero (above n) when the n bytes lie inside one page.
	if hi <= lo || hi > uintptr(n) {
		return
	}
	_ = unix.Madvise(all[lo:hi], unix.MADV_POPULATE_WRITE)
}
