//go:build !linux

package cache

// adviseHuge does nothing: transparent huge pages are Linux's.
func adviseHuge([]byte, bool) {}

// Prefault does nothing: the pages fault in as they are written.
func Prefault([]byte, int) {}
