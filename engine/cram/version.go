package cram

import (
	"fmt"
	"os"
	"syscall"
)

// sameBesidesCTime reports whether a and b, fstats, are of the same file
// (device and inode) with the same size and mtime, whatever their
// ctimes: a file replaced, truncated or rewritten in place differs in one
// of these, a chmod or a link added or removed in none.
func sameBesidesCTime(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// describe names the version of the file fi (an fstat) for messages.
func describe(fi os.FileInfo) string {
	s := fmt.Sprintf("%d bytes, mtime %d", fi.Size(), fi.ModTime().UnixNano())
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		s = fmt.Sprintf("device %d inode %d, %s, ctime %d", st.Dev, st.Ino, s, st.Ctim.Nano())
	}
	return s
}
