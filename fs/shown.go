package fs

import (
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// shown is what a mount shows instead of the source's owners and modes
// (Options.UID, GID, Umask): every field nil shows the source's.
type shown struct {
	uid, gid, umask *uint32
}

// set reports whether anything of the source's owners and modes is
// replaced: the source's ACLs then no longer describe what is shown, and
// are not served (the kernel checks the modes shown).
func (s shown) set() bool { return s.uid != nil || s.gid != nil || s.umask != nil }

// apply replaces in a what s says: the owner, the group, and the
// permission bits (0555 for a directory, 0444 for anything else, minus
// the umask; a link's are left as they are, the kernel ignores them).
func (s shown) apply(a *fuse.Attr) {
	if s.uid != nil {
		a.Uid = *s.uid
	}
	if s.gid != nil {
		a.Gid = *s.gid
	}
	if s.umask == nil || a.Mode&syscall.S_IFMT == syscall.S_IFLNK {
		return
	}
	perm := uint32(0o444)
	if a.Mode&syscall.S_IFMT == syscall.S_IFDIR {
		perm = 0o555
	}
	a.Mode = a.Mode&syscall.S_IFMT | perm&^*s.umask
}
