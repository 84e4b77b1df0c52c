package fs

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"syscall"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// POSIX ACLs: the mount asks the kernel to check them (EnableAcl) and
// serves, as the ACL of each node, the source object's: a directory's or
// pass-through file's own, the CRAM's for its BAM and index. The kernel
// asks for it (getxattr) when it checks a permission the mode bits do not
// decide, and keeps it until the node's attributes expire (AttrTimeout),
// so a changed ACL applies within about that long. Write permission is
// taken out of every entry, as out of the mode bits: the mount is
// read-only.

// The extended attributes of the ACLs (Linux's posix_acl_xattr format).
const (
	xattrACLAccess  = "system.posix_acl_access"
	xattrACLDefault = "system.posix_acl_default"
)

// aclSource is the source object whose ACL a node serves.
type aclSource struct {
	rel   string // relative to the source root, without links
	mpath string // the node's path in the mount, for logs
	// dir: any directory at rel (what the directory node lists); else the
	// regular file of device dev and inode ino, which the node serves.
	dir      bool
	dev, ino uint64
}

// getACL answers getxattr(attr) of a node serving the ACLs of src: the
// ACL copied into dest, or its size when dest is empty (ERANGE when it
// does not fit), ENODATA for every other attribute and when there is
// none. The object is opened through the root with O_PATH (which opens
// nothing for reading, never blocks, and needs no permission on the
// object), checked on the descriptor, and its attribute read through
// /proc/self/fd, the only way to read one from an O_PATH descriptor.
func (m *mountFS) getACL(src aclSource, attr string, dest []byte) (uint32, syscall.Errno) {
	if attr != xattrACLAccess && attr != xattrACLDefault || m.shown.set() {
		return 0, syscall.ENODATA
	}
	f, proc, err := m.openACL(src)
	if err != nil {
		return 0, m.fail("getxattr", src.mpath, err)
	}
	defer f.Close()
	n, err := unix.Getxattr(proc, attr, dest)
	switch {
	case errors.Is(err, unix.ENODATA), errors.Is(err, unix.EOPNOTSUPP):
		return 0, syscall.ENODATA
	case errors.Is(err, unix.ERANGE):
		if n, err = unix.Getxattr(proc, attr, nil); err == nil {
			return uint32(n), syscall.ERANGE
		}
	case errors.Is(err, unix.ENOENT):
		err = noProc(src, err)
	}
	if err != nil {
		return 0, m.fail("getxattr", src.mpath, err)
	}
	if len(dest) == 0 {
		return uint32(n), 0
	}
	if err := dropWrite(dest[:n]); err != nil {
		return 0, m.fail("getxattr", src.mpath, fmt.Errorf("%s of %s: %w", attr, src.rel, err))
	}
	return uint32(n), 0
}

// openACL opens the object of src through the root with O_PATH and
// checks it on the descriptor; it returns the descriptor and its
// /proc/self/fd path, by which its attributes are read.
func (m *mountFS) openACL(src aclSource) (*os.File, string, error) {
	f, err := m.root.OpenFile(src.rel, unix.O_PATH|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, "", err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, "", err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || src.dir && !isDir(st) || !src.dir && (!isReg(st) || uint64(st.Dev) != src.dev || st.Ino != src.ino) {
		f.Close()
		return nil, "", fmt.Errorf("source %s was replaced: %w", src.rel, syscall.ESTALE)
	}
	return f, "/proc/self/fd/" + strconv.Itoa(int(f.Fd())), nil
}

// noProc is the error of an attribute read through /proc/self/fd that
// found no such file: the object is held open, so /proc is not mounted.
// The ACL is refused rather than left unchecked.
func noProc(src aclSource, err error) error {
	return fmt.Errorf("reading the ACL of %s needs /proc/self/fd: %v: %w", src.rel, err, syscall.EIO)
}

// listACL answers listxattr of a node serving the ACLs of src: the names
// of the ACLs it has (NUL-terminated), into dest, or their size when dest
// is empty; extra names come first.
func (m *mountFS) listACL(src aclSource, extra []string, dest []byte) (uint32, syscall.Errno) {
	var names []byte
	for _, x := range extra {
		names = append(append(names, x...), 0)
	}
	if m.shown.set() {
		return copyNames(names, dest)
	}
	f, proc, err := m.openACL(src)
	if err != nil {
		return 0, m.fail("listxattr", src.mpath, err)
	}
	defer f.Close()
	for _, attr := range []string{xattrACLAccess, xattrACLDefault} {
		n, err := unix.Getxattr(proc, attr, nil)
		switch {
		case err == nil && n > 0:
			names = append(append(names, attr...), 0)
		case errors.Is(err, unix.ENOENT):
			return 0, m.fail("listxattr", src.mpath, noProc(src, err))
		}
	}
	return copyNames(names, dest)
}

// copyNames answers a listxattr with names (NUL-terminated): their size
// for an empty dest, ERANGE when they do not fit.
func copyNames(names, dest []byte) (uint32, syscall.Errno) {
	switch {
	case len(dest) == 0:
		return uint32(len(names)), 0
	case len(dest) < len(names):
		return uint32(len(names)), syscall.ERANGE
	}
	return uint32(copy(dest, names)), 0
}

// dropWrite clears the write permission of every entry of the ACL acl
// (posix_acl_xattr: a little-endian version 2, then entries of a 16-bit
// tag, 16-bit permissions and 32-bit id).
func dropWrite(acl []byte) error {
	const version, aclWrite = 2, 0o2
	if len(acl) < 4 || (len(acl)-4)%8 != 0 || binary.LittleEndian.Uint32(acl) != version {
		return fmt.Errorf("want a version %d ACL of 4+8n bytes, found %d bytes starting %x: %w",
			version, len(acl), acl[:min(len(acl), 4)], syscall.EIO)
	}
	for i := 4; i < len(acl); i += 8 {
		perm := binary.LittleEndian.Uint16(acl[i+2:])
		binary.LittleEndian.PutUint16(acl[i+2:], perm&^aclWrite)
	}
	return nil
}

var (
	_ fusefs.NodeGetxattrer  = (*dirNode)(nil)
	_ fusefs.NodeListxattrer = (*dirNode)(nil)
	_ fusefs.NodeListxattrer = (*rootDir)(nil)
	_ fusefs.NodeGetxattrer  = (*fileNode)(nil)
	_ fusefs.NodeListxattrer = (*fileNode)(nil)
	_ fusefs.NodeGetxattrer  = (*bamNode)(nil)
	_ fusefs.NodeListxattrer = (*bamNode)(nil)
)

func (d *dirNode) aclSource() aclSource { return aclSource{rel: d.rel, mpath: d.mpath, dir: true} }

func (n *fileNode) aclSource() aclSource {
	return aclSource{rel: n.rel, mpath: n.mpath, dev: n.id.Dev, ino: n.id.Ino}
}

func (n *bamNode) aclSource() aclSource {
	return aclSource{rel: n.rel, mpath: n.mpath, dev: uint64(n.st.Dev), ino: n.st.Ino}
}

// Getxattr implements fs.NodeGetxattrer: the directory's ACLs.
func (d *dirNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return d.m.getACL(d.aclSource(), attr, dest)
}

// Listxattr implements fs.NodeListxattrer: the directory's ACLs.
func (d *dirNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return d.m.listACL(d.aclSource(), nil, dest)
}

// Listxattr implements fs.NodeListxattrer: the root's attributes
// (Options.RootXattrs) and its ACLs.
func (r *rootDir) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return r.m.listACL(r.aclSource(), slices.Sorted(maps.Keys(r.xattrs)), dest)
}

// Getxattr implements fs.NodeGetxattrer: the file's ACL.
func (n *fileNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return n.m.getACL(n.aclSource(), attr, dest)
}

// Listxattr implements fs.NodeListxattrer: the file's ACL.
func (n *fileNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return n.m.listACL(n.aclSource(), nil, dest)
}

// Getxattr implements fs.NodeGetxattrer: the CRAM's ACL.
func (n *bamNode) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	return n.m.getACL(n.aclSource(), attr, dest)
}

// Listxattr implements fs.NodeListxattrer: the CRAM's ACL.
func (n *bamNode) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	return n.m.listACL(n.aclSource(), nil, dest)
}
