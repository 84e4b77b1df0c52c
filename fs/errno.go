package fs

import (
	"context"
	"errors"
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

// fail maps err to an errno and logs one line naming the operation and
// the file (its path inside the mount). Missing names are routine and
// logged at debug level only.
func (m *mountFS) fail(op, file string, err error) syscall.Errno {
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
