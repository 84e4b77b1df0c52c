package service

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// sunPathMax is the longest path a unix socket address holds: sun_path
// less the NUL that ends it.
var sunPathMax = len(unix.RawSockaddrUnix{}.Path) - 1

// socketDir is an open directory of status sockets. Its sockets are bound
// and dialled through the directory's descriptor, as
// /proc/self/fd/N/NAME: a short path that the kernel resolves to the
// directory opened, however long its own path (a deep --cache-dir, a deep
// TMPDIR) and however it is renamed or replaced meanwhile. Without /proc,
// the directory's path is used, when it fits in a socket address.
type socketDir struct {
	f    *os.File // the directory, opened O_PATH
	path string   // its path, for messages
	via  string   // the prefix of its sockets' addresses: /proc/self/fd/N, or path
}

// openSocketDir opens the directory dir; with nofollow, a link there is
// refused rather than followed.
func openSocketDir(dir string, nofollow bool) (*socketDir, error) {
	flags := unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC
	if nofollow {
		flags |= unix.O_NOFOLLOW
	}
	fd, err := unix.Open(dir, flags, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	d := &socketDir{f: os.NewFile(uintptr(fd), dir), path: dir, via: dir}
	proc := "/proc/self/fd/" + strconv.Itoa(fd)
	if pfi, err := os.Stat(proc); err == nil {
		if fi, err := d.f.Stat(); err == nil && os.SameFile(pfi, fi) {
			d.via = proc
		}
	}
	return d, nil
}

// openPrivateDir creates dir (mode 0700) if needed and opens it, checking
// on the descriptor opened that it is a directory, not a link, owned by
// this user, that nobody else may enter.
func openPrivateDir(dir string) (*socketDir, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	d, err := openSocketDir(dir, true)
	if err != nil {
		return nil, fmt.Errorf("%w (want a directory, not a link)", err)
	}
	fi, err := d.f.Stat()
	if err == nil {
		st, ok := fi.Sys().(*syscall.Stat_t)
		switch {
		case !ok || int(st.Uid) != os.Geteuid():
			err = fmt.Errorf("%s is not owned by user %d", dir, os.Geteuid())
		case fi.Mode().Perm()&0o077 != 0:
			err = fmt.Errorf("%s has mode %v, want 0700", dir, fi.Mode().Perm())
		}
	}
	if err != nil {
		d.Close()
		return nil, err
	}
	return d, nil
}

// addr returns the address by which to bind or dial the socket name in d,
// or, when it is too long for a socket address and /proc/self/fd cannot
// shorten it, an error naming the path and its length.
func (d *socketDir) addr(name string) (string, error) {
	a := d.via + "/" + name
	if len(a) > sunPathMax {
		p := filepath.Join(d.path, name)
		return "", fmt.Errorf("status socket %s is %d bytes long, more than the %d a unix socket address holds, and /proc/self/fd, which would shorten it, is not available: set XDG_RUNTIME_DIR or use a shorter --cache-dir", p, len(p), sunPathMax)
	}
	return a, nil
}

// Close closes the directory; addresses made by addr then lead elsewhere.
func (d *socketDir) Close() error { return d.f.Close() }
