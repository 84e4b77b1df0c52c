package layout

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Dir is a cache directory of layout index files, one per key (Key),
// read and written under the trust model of docs/trust.md ("Cache
// directory and trust"): a directory and files owned by this user (or
// root) that no one else may write, or, Shared, by a group whose members
// may all write them. Its zero Path is no directory: every Load finds
// nothing and every Save fails.
type Dir struct {
	Path   string
	Shared bool
}

// fileName is the name of the index file of key in the directory.
func fileName(key string) string { return key + ".idx" }

// PathOf is the path of the index file of key, for messages.
func (d Dir) PathOf(key string) string { return filepath.Join(d.Path, fileName(key)) }

// Load reads and parses the index file of key, if the directory and the
// file may be trusted (else an error wrapping ErrUntrustedDir or
// ErrUntrusted); one that is not there is an fs.ErrNotExist error.
func (d Dir) Load(key string) (*File, error) { return load(d.Path, fileName(key), d.Shared) }

// Save stores f as the index file of key, atomically.
func (d Dir) Save(key string, f *File) error { return write(d.Path, fileName(key), f, d.Shared) }

// Remove removes the index file of key; one not there is not an error.
func (d Dir) Remove(key string) error {
	if err := os.Remove(d.PathOf(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// RemoveStaleTemps removes the temporary index files left by writers
// killed between create and rename, and returns how many it removed.
func (d Dir) RemoveStaleTemps(now time.Time) (int, error) {
	return removeStaleTemps(d.Path, d.Shared, now)
}

// ErrUntrusted and ErrUntrustedDir mark an index file or a cache
// directory that the trust model of the cache (docs/trust.md, "Cache
// directory and trust") refuses.
var (
	ErrUntrusted    = errors.New("index file not trusted")
	ErrUntrustedDir = errors.New("cache directory not trusted")
)

// checkTrusted reports why the cache directory or index file path, of
// status st, may not be trusted (the error wraps kind): it must be owned
// by this user or root and not be writable by group or others; with
// shared, any owner and group write are accepted, never write by others.
func checkTrusted(st *unix.Stat_t, shared bool, kind error, path string) error {
	euid := uint32(os.Geteuid())
	if !shared && st.Uid != euid && st.Uid != 0 {
		return fmt.Errorf("%w: %s is owned by uid %d, not by this user (uid %d) or root (a cache shared with other users needs --shared-cache)", kind, path, st.Uid, euid)
	}
	mask, who := uint32(0o022), "group or others"
	if shared {
		mask, who = 0o002, "others"
	}
	if st.Mode&mask != 0 {
		return fmt.Errorf("%w: %s is writable by %s (mode %04o)", kind, path, who, st.Mode&0o7777)
	}
	return nil
}

// openCacheDir opens the cache directory dir and checks that it may be
// trusted. The caller closes the descriptor.
func openCacheDir(dir string, shared bool) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &fs.PathError{Op: "fstat", Path: dir, Err: err}
	}
	if err := checkTrusted(&st, shared, ErrUntrustedDir, dir); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// load reads and parses the index file name in the cache directory
// dir, if the directory and the file may be trusted: the file is opened
// below the directory's descriptor without following a symbolic link, and
// checked with fstat on the descriptor read.
func load(dir, name string, shared bool) (*File, error) {
	dfd, err := openCacheDir(dir, shared)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	path := filepath.Join(dir, name)
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%w: index file %s is a symbolic link", ErrUntrusted, path)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	fh := os.NewFile(uintptr(fd), path)
	defer fh.Close()
	st := new(unix.Stat_t)
	if err := unix.Fstat(fd, st); err != nil {
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: index file %s is not a regular file (mode %o)", ErrUntrusted, path, st.Mode)
	}
	if err := checkTrusted(st, shared, ErrUntrusted, path); err != nil {
		return nil, err
	}
	if st.Size > maxIndexFile {
		return nil, fmt.Errorf("%w: index file %s of %d bytes", ErrInvalid, path, st.Size)
	}
	b, err := io.ReadAll(io.LimitReader(fh, maxIndexFile+1))
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// tempPrefix starts the names of index files being written; the writer's
// pid follows, so that a temporary file left by a killed writer is
// recognisable (see removeStaleTemps).
const tempPrefix = ".tmp-"

// staleTempAge is how old a temporary index file must be to be taken for
// the leftover of a killed writer: a writer writes one in a single write,
// syncs and renames it, in well under a second.
const staleTempAge = 10 * time.Minute

// write stores f as name in the cache directory dir atomically: a
// temporary file in the same directory, synced, then renamed over name.
// In a shared cache the file is readable by the directory's group.
func write(dir, name string, f *File, shared bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dfd, err := openCacheDir(dir, shared)
	if err != nil {
		return err
	}
	unix.Close(dfd)
	tmp, err := os.CreateTemp(dir, fmt.Sprintf("%s%s-%d-*", tempPrefix, name, os.Getpid()))
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	_, err = tmp.Write(Marshal(f))
	if err == nil && shared {
		err = tmp.Chmod(0o640)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmpName, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmpName)
	}
	return err
}

// removeStaleTemps removes from dir the temporary index files older than
// staleTempAge (left by writers killed between create and rename) and
// returns how many it removed. An untrusted directory is left alone.
func removeStaleTemps(dir string, shared bool, now time.Time) (int, error) {
	dfd, err := openCacheDir(dir, shared)
	if err != nil {
		return 0, err
	}
	unix.Close(dfd)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		fi, err := e.Info()
		if err != nil || now.Sub(fi.ModTime()) < staleTempAge {
			continue
		}
		if os.Remove(filepath.Join(dir, e.Name())) == nil {
			n++
		}
	}
	return n, nil
}
