package source

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Identity pins one version of a file as read through its open
// descriptor: what fstat reports (device, inode, size, mtime and ctime;
// the kernel sets ctime on every change and no user can set it back, so
// an in-place rewrite with a restored mtime is still a new version) and
// SHA-256 digests of its first and last 64 KiB.
type Identity struct {
	Dev   uint64 // the engine sets it to 0 in a shared cache (engine.Options.SharedCache)
	Ino   uint64
	Size  int64
	MTime int64 // nanoseconds since the Unix epoch
	CTime int64 // nanoseconds since the Unix epoch
	Head  [32]byte
	Tail  [32]byte
}

// identityWindow is how much of each end of the file is hashed.
const identityWindow = 64 << 10

// identityBufs is a free list of the buffers FileIdentity reads
// the ends of a file into, one per worker or so: the first build of every
// segment checks the file's identity, and a fresh buffer each time was as
// much garbage as the decoding of a container.
var identityBufs = make(chan *[identityWindow]byte, 4)

func getIdentityBuf() *[identityWindow]byte {
	select {
	case b := <-identityBufs:
		return b
	default:
		return new([identityWindow]byte)
	}
}

func putIdentityBuf(b *[identityWindow]byte) {
	select {
	case identityBufs <- b:
	default:
	}
}

// FileIdentity reads the identity of the open file f with fstat and
// pread, never through its path.
func FileIdentity(f *os.File) (Identity, error) {
	st, err := fstat(f)
	if err != nil {
		return Identity{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return Identity{}, fmt.Errorf("%s: not a regular file (mode %o)", f.Name(), st.Mode)
	}
	id := Identity{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size, MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano()}
	win := getIdentityBuf()
	defer putIdentityBuf(win)
	buf := win[:min(identityWindow, id.Size)]
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return Identity{}, err
	}
	id.Head = sha256.Sum256(buf)
	if _, err := f.ReadAt(buf, id.Size-int64(len(buf))); err != nil && !errors.Is(err, io.EOF) {
		return Identity{}, err
	}
	id.Tail = sha256.Sum256(buf)
	return id, nil
}

// fstat returns what fstat(2) reports of the open file f.
func fstat(f *os.File) (*unix.Stat_t, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	if serr != nil {
		return nil, &fs.PathError{Op: "fstat", Path: f.Name(), Err: serr}
	}
	return &st, nil
}
