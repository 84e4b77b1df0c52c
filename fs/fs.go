// Package fs is the cramfs FUSE filesystem: it mirrors a source directory
// tree read-only and presents every CRAM file x.cram in it as a synthetic
// BAM file x.bam plus its index x.bam.bai (SAMv1 §4 BAM, §5.2 BAI), served
// by an Opener that decodes only the containers a read touches.
//
// Name mapping, per source directory:
//
//   - x.cram (a regular file) appears as x.bam, and its index as x.bam.bai
//     and x.bai, the names htslib, Picard, GATK and IGV look for
//     (x.bam.csi and x.csi when it is a CSI; none when the records are not
//     sorted by coordinate); the .cram itself is not shown.
//   - A listing reads no CRAM: it names x.bam at once, and the index only
//     once the Opener knows it (IndexKnower: the CRAM was opened, by a
//     lookup or --index-on-mount). A lookup of x.bam.bai or x.bai works by
//     name before that. Every name listed can be looked up.
//   - A synthetic name longer than 255 bytes (NAME_MAX) is neither listed
//     nor looked up: a 255-byte x.cram shows x.bam and x.bai only.
//   - .crai files are hidden.
//   - A real entry of the source always wins over a synthetic name: a
//     directory v.bam beside v.cram, a real x.bam, x.bam.bai or x.bai (or
//     a link so named) beside x.cram is shown as it is, and the synthetic
//     file of that name is not. Each such name is logged once per mount
//     (a warning naming the directory, the name and the CRAM) and listed
//     by Server.Shadowed (`cramfs status`), up to MaxShadowed of them.
//     Among synthetic names, x.bam.bai is x.cram's index before it is
//     x.bam.cram's x.bai.
//   - Directories and every other regular file pass through unchanged,
//     read-only, read from the source.
//   - Symbolic links are shown as symbolic links, so that the kernel
//     resolves them through the mount and checks every directory on the
//     way as in the source. A link is shown when, resolved through the
//     mount, it leads to what it leads to in the source: a directory or
//     pass-through file. Its text is kept, except that an absolute target
//     below the source's real path is made relative. A link x.cram (to a
//     CRAM) is not shown; its x.bam, x.bam.bai and x.bai are links to its
//     target with the last component's .cram replaced (x.bam ->
//     ../priv/p.bam), shown when they lead to that CRAM's synthetic file.
//     A link x.cram whose target's name does not end in .cram gives no
//     name to lead to: it is hidden, with a warning. Links leading outside
//     the source, dangling, looping (more than 40 links), to a FIFO,
//     socket or device, or to a .cram under another name, are hidden.
//     FIFOs, sockets and devices are hidden.
//   - Modes, owners and POSIX ACLs are the source's (a synthetic file has
//     its CRAM's), minus write permission; the kernel checks them
//     (default_permissions), the ACLs too (see acl.go), so that with
//     AllowOther a user reads through the mount what they may read in
//     the source. The source's own ancestors are not checked: the mount's
//     root is the source.
//
// Nothing outside the source is ever opened or stat-followed: every file
// and directory is opened through an os.Root of the source, with
// O_NONBLOCK (a FIFO never blocks a request), and a file is checked on
// its descriptor (fstat), so a directory swapped for a link to elsewhere
// while it is read (renameat2 RENAME_EXCHANGE in a loop) cannot make the
// mount serve another file.
//
// Directories are listed lazily and entries carry short kernel timeouts
// (Options.EntryTimeout, AttrTimeout, default 1 s), so files added,
// removed or replaced in the source show up within about a second. Inode
// numbers are derived from the source's device, inode and path (and, for
// the synthetic files, the CRAM's size and mtime), so a replaced CRAM gets
// a new node and never mixes bytes with the old one, and a renamed file
// is served under its new name. The index has the CRAM's mtime, as the
// BAM does (htslib warns about an index older than its BAM).
//
// A stale mount point (a crashed cramfs left "transport endpoint is not
// connected") is not recovered silently: Mount fails with ErrStaleMount and
// asks the user to run `cramfs unmount MNT` (Unmount), because lazily
// detaching someone else's mount behind their back could hide a live one.
package fs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// ErrMount is returned (wrapped, with the reason) when a mount cannot be
// set up or torn down.
var ErrMount = errors.New("cramfs mount")

// ErrStaleMount is returned (wrapped, together with ErrMount) by Mount when
// the mount point is a dead FUSE mount (ENOTCONN).
var ErrStaleMount = errors.New("stale mount")

// BAMFile is the virtual BAM (SAMv1 §4) of one CRAM file, with its BAI
// index (SAMv1 §5.2). It is provided by the engine and must be safe for
// concurrent use.
type BAMFile interface {
	// Size is the exact length of the BAM byte stream.
	Size() int64
	// ReadAt has io.ReaderAt semantics.
	ReadAt(p []byte, off int64) (int, error)
	// Index returns the synthesized .bai bytes; callers do not modify them.
	Index() []byte
}

// Viewer is implemented by BAMFiles that can lend their bytes without a
// copy: View returns the n bytes at off (n > 0, off+n within Size) as the
// pieces that hold them, in order, and a release function (never nil)
// that the filesystem calls once the reply is sent. The bytes are only
// read.
type Viewer interface {
	View(ctx context.Context, off int64, n int) (parts [][]byte, release func(), err error)
}

// IndexExter is implemented by BAMFiles whose index may be a CSI (SAMv1
// §5, CSIv1) or missing: IndexExt returns ".csi" for a CSI, which the
// mount names x.bam.csi and x.csi instead of x.bam.bai and x.bai, and ""
// when there is no index, which the mount then does not show.
type IndexExter interface {
	IndexExt() string
}

// Tagger is implemented by BAMFiles of which one CRAM version may be
// opened again into other bytes (its layout found wrong and scanned
// again): Tag names the bytes served, the same for two BAMFiles of the
// version only when they serve the same bytes. A node keeps the tag of
// the BAMFile it was looked up with, and an open given another fails with
// EIO: the kernel holds the first one's size and cached pages.
type Tagger interface {
	Tag() string
}

// CRAMRef names one version of a CRAM file of the source tree.
type CRAMRef struct {
	// Root is the mount's source tree. A CRAM is opened through it only
	// (os.Root), so that a directory swapped for a symbolic link while it
	// is opened cannot lead outside the tree.
	Root *os.Root
	// Rel is the slash-separated path of the CRAM below Root, with the
	// symbolic links it went through resolved.
	Rel string
	// Stat is the version wanted, from an lstat through Root: its device,
	// inode, size and modification time identify it.
	Stat syscall.Stat_t
}

// Open opens the CRAM for reading through Root, with the flags of every
// source file the mount opens: the final name is not followed if it is a
// link, and a FIFO or device swapped in does not block the open. It does
// not check what it opened: the Opener compares the descriptor's fstat
// with Stat, and refuses anything but a regular file.
func (r CRAMRef) Open() (*os.File, error) { return r.Root.OpenFile(r.Rel, fileOpenFlags, 0) }

// ErrChanged is returned (wrapped) by an Opener when the file at a
// CRAMRef's Rel is not the version its Stat describes; the filesystem
// then looks at the name again.
var ErrChanged = errors.New("source file changed")

// Opener gives the BAMFile of a CRAM. It caches and shares BAMFiles, and
// may block while a never-seen file is scanned (the first stat of the
// .bam waits for it). Errors from a broken CRAM come back here.
//
// OpenBAM must open the CRAM through ref.Root only, without blocking on a
// FIFO or device (refusing anything but a regular file), and check on
// the opened descriptor (fstat) that it is the version ref.Stat describes,
// failing with an error matching ErrChanged when it is not. It keys its
// cache by ref.Rel and that identity (device, inode, size, mtime), so that
// a CRAM replaced in the source gets a new BAMFile.
type Opener interface {
	OpenBAM(ctx context.Context, ref CRAMRef) (BAMFile, error)
}

// IndexKnower is implemented by Openers that know, without reading the
// CRAM, which index the BAM of a version will have: KnownIndexExt returns
// ".bai", ".csi" or "" (no index) with ok set, or ok unset when it does
// not know yet (typically: the version was never opened). Directory
// listings name an index only when it is known, so that every name listed
// can be looked up; it must not block.
type IndexKnower interface {
	KnownIndexExt(ref CRAMRef) (ext string, ok bool)
}

// Options tune a mount. The zero value is usable.
type Options struct {
	// AllowOther lets other users access the mount (needs
	// user_allow_other in /etc/fuse.conf for non-root users). Access is
	// still checked by the kernel against the source's modes, owners and
	// POSIX ACLs (default_permissions), symbolic links included, which
	// the mount shows as links.
	AllowOther bool
	// Logger receives one line per failed operation; nil discards.
	Logger *slog.Logger
	// EntryTimeout and AttrTimeout are the kernel cache lifetimes of names
	// and attributes; 0 means DefaultTimeout. They bound how long a change
	// in the source takes to appear.
	EntryTimeout, AttrTimeout time.Duration
	// Debug logs every FUSE request (very verbose) to Logger.
	Debug bool
	// MaxRead is the largest read request the kernel sends; 0 means
	// DefaultMaxRead. MaxReadAhead is the kernel read-ahead window of a
	// sequential reader, sent as requests of MaxRead; 0 means
	// DefaultMaxReadAhead.
	MaxRead, MaxReadAhead int
	// UID and GID, when set, are shown as the owner and group of every
	// file and directory, and Umask, when set, makes their modes 0555
	// (directories) and 0444 (files) minus Umask, instead of the
	// source's (cramfs mount --uid, --gid, --umask: serving a group or a
	// container's user). The kernel then checks access against what is
	// shown, not against the source: it may let users read what they
	// could not read in the source. The source's ACLs are not served
	// when any of them is set. Nil: the source's.
	UID, GID, Umask *uint32
	// RootXattrs are extended attributes of the mount's root directory,
	// by name, for clients that find the mount's services from the mount
	// point alone (`cramfs status MNT` its status socket). Every node
	// answers its POSIX ACLs besides (system.posix_acl_access and
	// _default), and no other attribute.
	RootXattrs map[string]string
}

// Defaults for Options fields left zero. MaxRead was chosen with
// BenchmarkSequentialRead (figures in bench/archive/SCALING.md). The
// read-ahead window is also how far past a region query's end the kernel
// asks for bytes: a window reaching into the next segment has it built
// for nothing, as a window of several MiB does at the end of most
// regions. One request (MaxRead) keeps that short, while a sequential
// reader still has the kernel's asynchronous request in flight beside its
// own (bench/archive/REGIONS2.md). A larger window may exceed MaxRead: the
// kernel then keeps that many MaxRead requests of a sequential reader in
// flight, served on as many goroutines.
const (
	DefaultTimeout      = time.Second
	DefaultMaxRead      = 1 << 20
	DefaultMaxReadAhead = 1 << 20
)

// Server is a mounted cramfs filesystem.
type Server struct {
	srv     *fuse.Server
	mnt     string
	m       *mountFS
	closeMu sync.Once
}

// Mount mounts the tree of src at mnt, read-only, serving CRAM files
// through op, and returns the running server. It fails with an error
// wrapping ErrMount when /dev/fuse or fusermount3 is missing, when src is
// not a directory, when mnt does not exist, is not a directory, is already
// a mount point, is a stale mount (also ErrStaleMount), or when mnt and src
// contain each other.
func Mount(src, mnt string, op Opener, opts Options) (*Server, error) {
	if op == nil {
		return nil, fmt.Errorf("%w: nil Opener", ErrMount)
	}
	if err := checkFUSE(); err != nil {
		return nil, err
	}
	srcReal, mntReal, err := checkPaths(src, mnt)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(srcReal)
	if err != nil {
		return nil, fmt.Errorf("%w: source %s: %w", ErrMount, src, err)
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	entryTO, attrTO := opts.EntryTimeout, opts.AttrTimeout
	if entryTO <= 0 {
		entryTO = DefaultTimeout
	}
	if attrTO <= 0 {
		attrTO = DefaultTimeout
	}
	maxRead, readAhead := opts.MaxRead, opts.MaxReadAhead
	if maxRead <= 0 {
		maxRead = DefaultMaxRead
	}
	if readAhead <= 0 {
		readAhead = DefaultMaxReadAhead
	}

	m := newMountFS(root, srcReal, op, logger)
	m.shown = shown{uid: opts.UID, gid: opts.GID, umask: opts.Umask}
	var rootNode fusefs.InodeEmbedder = &dirNode{m: m, rel: ".", mpath: "."}
	if len(opts.RootXattrs) > 0 {
		rootNode = &rootDir{dirNode: dirNode{m: m, rel: ".", mpath: "."}, xattrs: maps.Clone(opts.RootXattrs)}
	}
	negTO := entryTO
	fo := &fusefs.Options{
		EntryTimeout:    &entryTO,
		AttrTimeout:     &attrTO,
		NegativeTimeout: &negTO,
		NullPermissions: true,
		MountOptions: fuse.MountOptions{
			AllowOther:         opts.AllowOther,
			Options:            []string{"ro", "default_permissions"},
			FsName:             srcReal,
			Name:               "cramfs",
			MaxWrite:           maxRead,
			MaxReadAhead:       readAhead,
			DisableReadDirPlus: true, // plain ls must not scan every CRAM
			// The kernel checks the source's POSIX ACLs, which the nodes
			// serve (getxattr, see acl.go); IgnoreSecurityLabels would
			// answer their getxattr without asking the nodes.
			EnableAcl:     true,
			DisableSplice: true, // data is in memory; 1 MiB replies overflow a pipe
			Debug:         opts.Debug,
		},
	}
	if opts.Debug {
		fo.MountOptions.Logger = slog.NewLogLogger(logger.Handler(), slog.LevelDebug)
		fo.Logger = fo.MountOptions.Logger
	} else {
		fo.Logger = log.New(io.Discard, "", 0)
	}
	srv, err := fusefs.Mount(mntReal, rootNode, fo)
	if err != nil {
		root.Close()
		return nil, fmt.Errorf("%w: mounting %s on %s: %w", ErrMount, src, mnt, err)
	}
	if srv.KernelSettings().Flags64()&fuse.CAP_POSIX_ACL == 0 {
		logger.Warn("cramfs: this kernel does not check POSIX ACLs on FUSE (Linux before 4.9): through the mount only modes and owners are checked, not the source's ACLs",
			"mnt", mntReal)
	}
	if err := setReadAhead(mntReal, readAhead); err != nil {
		logger.Debug("cramfs: read-ahead left at the kernel default", "mnt", mntReal, "err", err)
	}
	return &Server{srv: srv, mnt: mntReal, m: m}, nil
}

// setReadAhead raises the kernel read-ahead window of the mount, which the
// FUSE INIT reply can only lower below the 128 KiB default, by writing
// /sys/class/bdi/MAJ:MIN/read_ahead_kb (needs root; best effort).
func setReadAhead(mnt string, bytes int) error {
	var st syscall.Stat_t
	if err := syscall.Stat(mnt, &st); err != nil {
		return err
	}
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	p := fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", major, minor)
	return os.WriteFile(p, []byte(fmt.Sprintf("%d\n", max(bytes>>10, 4))), 0)
}

// Wait blocks until the filesystem is unmounted.
func (s *Server) Wait() {
	s.srv.Wait()
	s.close()
}

// Unmount unmounts the filesystem; it fails while files on it are open.
func (s *Server) Unmount() error {
	if err := s.srv.Unmount(); err != nil {
		return fmt.Errorf("%w: unmounting %s: %w", ErrMount, s.mnt, err)
	}
	s.close()
	return nil
}

// Root is the source tree the mount serves, for callers that walk it
// (cramfs mount --index-on-mount); it is closed when the mount ends.
func (s *Server) Root() *os.Root { return s.m.root }

func (s *Server) close() { s.closeMu.Do(func() { s.m.root.Close() }) }

// Unmount unmounts the FUSE filesystem at mnt, live or stale, like
// `fusermount3 -u`; when that fails (e.g. busy) it falls back to a lazy
// unmount (`fusermount3 -u -z`), which detaches the mount now and frees it
// once the last file on it is closed.
//
// It refuses, with ErrNotMounted or ErrNotCramfs, a directory that nothing
// is mounted on, a mount of another file system type, and (for a user
// other than root) another user's cramfs mount.
func Unmount(mnt string) error {
	_, err := UnmountOrDetach(mnt)
	return err
}

// UnmountOrDetach is Unmount, reporting whether the mount was busy and
// detached lazily: it is gone from the tree at once, and its process ends
// when the last file open on it is closed.
func UnmountOrDetach(mnt string) (detached bool, err error) {
	abs, err := filepath.Abs(mnt)
	if err != nil {
		return false, fmt.Errorf("%w: unmounting %s: %w", ErrMount, mnt, err)
	}
	// A dead mount cannot be stat'ed: resolve links only when it can.
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	if err := unmountable(abs, os.Geteuid()); err != nil {
		return false, err
	}
	bin, err := fusermount()
	if err != nil {
		if syscall.Unmount(mnt, 0) == nil {
			return false, nil
		}
		if e := syscall.Unmount(mnt, syscall.MNT_DETACH); e != nil {
			return false, fmt.Errorf("%w: unmounting %s: %w (and umount2: %w)", ErrMount, mnt, err, e)
		}
		return true, nil
	}
	out, err := exec.Command(bin, "-u", mnt).CombinedOutput()
	if err == nil {
		return false, nil
	}
	out2, err2 := exec.Command(bin, "-u", "-z", mnt).CombinedOutput()
	if err2 == nil {
		return true, nil
	}
	if e := syscall.Unmount(mnt, syscall.MNT_DETACH); e == nil {
		return true, nil
	}
	return false, fmt.Errorf("%w: unmounting %s: %s -u: %v: %s; lazy: %v: %s", ErrMount, mnt, bin,
		err, strings.TrimSpace(string(out)), err2, strings.TrimSpace(string(out2)))
}

// fusermount finds fusermount3 (or the older fusermount) the way go-fuse
// does: on PATH, else in /bin.
func fusermount() (string, error) {
	for _, name := range []string{"fusermount3", "fusermount"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
		p := filepath.Join("/bin", name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: fusermount3 not found on PATH or in /bin (install the fuse3 package)", ErrMount)
}

func checkFUSE() error {
	fi, err := os.Stat("/dev/fuse")
	if err != nil {
		return fmt.Errorf("%w: FUSE device /dev/fuse unavailable (load the fuse kernel module, or pass --device /dev/fuse to the container): %w", ErrMount, err)
	}
	if fi.Mode()&os.ModeCharDevice == 0 {
		return fmt.Errorf("%w: /dev/fuse is not a character device (mode %v)", ErrMount, fi.Mode())
	}
	fm, err := fusermount()
	if err != nil {
		return err
	}
	if why := fuseAccessProblem(os.Geteuid(), fm); why != "" {
		return fmt.Errorf("%w: %w: %s", ErrMount, ErrNoFUSEAccess, why)
	}
	return nil
}

// checkPaths validates src and mnt and returns their real paths.
func checkPaths(src, mnt string) (string, string, error) {
	srcReal, err := realDir("source", src)
	if err != nil {
		return "", "", err
	}
	// A stat may be answered from the kernel's attribute cache; opening
	// the directory always reaches a (dead) FUSE server.
	_, err = os.Stat(mnt)
	if err == nil {
		var f *os.File
		if f, err = os.Open(mnt); err == nil {
			f.Close()
		}
	}
	if errors.Is(err, syscall.ENOTCONN) {
		return "", "", fmt.Errorf("%w: %w: %s is a dead FUSE mount (transport endpoint is not connected); run `cramfs unmount %s` first",
			ErrMount, ErrStaleMount, mnt, mnt)
	}
	if _, lerr := os.Lstat(mnt); errors.Is(lerr, os.ErrNotExist) {
		return "", "", fmt.Errorf("%w: mount point %s does not exist: create it with `mkdir -p %s`", ErrMount, mnt, mnt)
	}
	mntReal, err := realDir("mount point", mnt)
	if err != nil {
		return "", "", err
	}
	// fusermount3 mounts for a user only on a directory they can write.
	if euid := os.Geteuid(); euid != 0 && unix.Faccessat(unix.AT_FDCWD, mntReal, unix.W_OK, unix.AT_EACCESS) != nil {
		return "", "", fmt.Errorf("%w: mount point %s is not writable by user %d, and fusermount3 mounts only on a directory you may write: mount on one of your own (e.g. `mkdir ~/mnt`)",
			ErrMount, mnt, euid)
	}
	if within(mntReal, srcReal) {
		return "", "", fmt.Errorf("%w: mount point %s is inside the source %s", ErrMount, mnt, src)
	}
	if within(srcReal, mntReal) {
		return "", "", fmt.Errorf("%w: source %s is inside the mount point %s", ErrMount, src, mnt)
	}
	if busy, err := isMountPoint(mntReal); err != nil {
		return "", "", fmt.Errorf("%w: mount point %s: %w", ErrMount, mnt, err)
	} else if busy {
		return "", "", fmt.Errorf("%w: mount point %s is busy: something is already mounted there (unmount it, e.g. `cramfs unmount %s`)", ErrMount, mnt, mnt)
	}
	return srcReal, mntReal, nil
}

func realDir(what, p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("%w: %s %s: %w", ErrMount, what, p, err)
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("%w: %s %s does not exist or is unreachable: %w", ErrMount, what, p, err)
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return "", fmt.Errorf("%w: %s %s: %w", ErrMount, what, p, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("%w: %s %s is not a directory", ErrMount, what, p)
	}
	return resolved, nil
}

// within reports whether p equals dir or lies below it; both are clean
// absolute paths.
func within(p, dir string) bool {
	if p == dir || dir == "/" {
		return true
	}
	return strings.HasPrefix(p, dir+"/")
}

// isMountPoint reports whether dir (a real path) is a mount point, from
// /proc/self/mountinfo, falling back to comparing devices with the parent.
func isMountPoint(dir string) (bool, error) {
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) > 4 && unescapeMount(fields[4]) == dir {
				return true, nil
			}
		}
		if sc.Err() == nil {
			return false, nil
		}
	}
	var st, pst syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return false, err
	}
	if err := syscall.Stat(filepath.Dir(dir), &pst); err != nil {
		return false, err
	}
	return st.Dev != pst.Dev || (st.Ino == pst.Ino && dir != "/"), nil
}

// unescapeMount decodes the octal escapes (\040 etc.) of mountinfo paths.
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			o := s[i+1 : i+4]
			if o[0] >= '0' && o[0] <= '3' && o[1] >= '0' && o[1] <= '7' && o[2] >= '0' && o[2] <= '7' {
				b.WriteByte((o[0]-'0')<<6 | (o[1]-'0')<<3 | (o[2] - '0'))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
