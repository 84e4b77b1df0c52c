package cram

import (
	"fmt"
	"os"
	"syscall"
)

// version identifies the version of a file a descriptor reads: a file
// replaced, truncated or rewritten in place differs in one of these.
type version struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds
}

func (v version) String() string {
	return fmt.Sprintf("device %d inode %d, %d bytes, mtime %d, ctime %d", v.dev, v.ino, v.size, v.mtime, v.ctime)
}

// sameBesidesCTime reports whether v and o are of the same file (device
// and inode) with the same size and mtime, whatever their ctimes.
func (v version) sameBesidesCTime(o version) bool {
	v.ctime = o.ctime
	return v == o
}

// versionOf is the version of the file fi (an fstat) describes.
func versionOf(fi os.FileInfo) version {
	v := version{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if s, ok := fi.Sys().(*syscall.Stat_t); ok {
		v.dev, v.ino = uint64(s.Dev), s.Ino
		v.ctime = s.Ctim.Sec*1e9 + s.Ctim.Nsec
	}
	return v
}
