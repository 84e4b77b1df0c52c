package fs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"syscall"
)

// toErrno maps an error to the errno a FUSE request answers with:
//
//   - cancelled request (context.Canceled) → EINTR; deadline → ETIMEDOUT
//   - a syscall.Errno anywhere in the chain → that errno
//   - fs.ErrNotExist (missing or hidden names) → ENOENT
//   - fs.ErrPermission → EACCES; os.ErrClosed → EBADF
//   - anything else, notably decode and corruption errors → EIO
func toErrno(err error) syscall.Errno {
	var en syscall.Errno
	switch {
	case err == nil:
		return 0
	case errors.Is(err, context.Canceled):
		return syscall.EINTR
	case errors.Is(err, context.DeadlineExceeded):
		return syscall.ETIMEDOUT
	case errors.As(err, &en) && en != 0:
		return en
	case errors.Is(err, os.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, os.ErrPermission):
		return syscall.EACCES
	case errors.Is(err, os.ErrClosed):
		return syscall.EBADF
	}
	return syscall.EIO
}

// newMountFS is the state of a mount of the tree root (real path
// srcReal).
func newMountFS(root *os.Root, srcReal string, op Opener, log *slog.Logger) *mountFS {
	m := &mountFS{root: root, srcReal: srcReal, op: op, log: log}
	m.shadows.seen.max, m.notes.max = MaxShadowed, maxNotes
	// ".." escapes any root, and is refused without a system call.
	if _, err := root.Lstat(".."); err != nil {
		m.escapes = errors.Unwrap(err)
	}
	return m
}

// fail maps err to an errno and logs one line naming the operation and
// the file (its path inside the mount). Missing names are routine and
// logged at debug level only.
func (m *mountFS) fail(op, file string, err error) syscall.Errno {
	if m.escapes != nil && errors.Is(err, m.escapes) {
		// A name that now leads outside the source is not shown.
		err = fmt.Errorf("%w: %w", errHidden, err)
	}
	errno := toErrno(err)
	level := slog.LevelWarn
	switch errno {
	case syscall.ENOENT, syscall.ESTALE:
		level = slog.LevelDebug
	case syscall.EINTR, syscall.EROFS:
		level = slog.LevelInfo
	}
	m.log.Log(context.Background(), level, "cramfs: request failed",
		"op", op, "file", file, "errno", errno.Error(), "err", err)
	return errno
}
