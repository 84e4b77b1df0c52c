//go:build !linux

package cache

// adviseHuge does nothing: transparent huge pages are Linux's.
func adviseHuge([]byte, bool) {}
