package fs

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	iofs "io/fs"
	"log/slog"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// mountFS is the state shared by all nodes of one mount.
type mountFS struct {
	root    *os.Root // the source tree; every access goes through it
	srcReal string   // real absolute path of the source
	op      Opener
	log     *slog.Logger
	shown   shown // constant: Options.UID, GID, Umask
	// escapes is root's error for a name leading outside it (os.Root does
	// not export it), as when a directory was swapped for a link out of
	// the source since it was looked up.
	escapes error
	shadows shadowList // real entries that hide synthetic names
	notes   onceSet    // what was said once (links not shown)
}

// kind is what a mount entry is made of.
type kind uint8

const (
	kindDir  kind = iota // a source directory
	kindFile             // a source regular file, passed through
	kindBAM              // the synthetic BAM of a CRAM
	kindBAI              // the synthetic BAI of a CRAM
	kindLink             // a symbolic link, shown as one
)

// entry is a resolved name in a mount directory: its kind and the source
// object behind it (for kindBAM/kindBAI, the CRAM; for kindLink, the
// link, x.cram's for its x.bam).
type entry struct {
	kind kind
	rel  string // slash path of the source object relative to the source root, without links
	st   syscall.Stat_t
	ext  string // for kindBAI (and a link standing for one), the index extension named: ".bai" or ".csi"
	// For kindLink: text is the link's text in the mount; want is what it
	// must lead to there: kindLink for a link shown under its own name
	// (the file or directory it leads to in the source), kindBAM or
	// kindBAI for x.bam or x.bai of a link x.cram (that file of the CRAM
	// it leads to); dest is what it leads to (set by checkLink).
	text string
	want kind
	dest *entry
}

// indexExt is the extension of the index a BAMFile serves: what it says
// (IndexExter: ".bai", ".csi", or "" when it has no index), else ".bai".
func indexExt(f BAMFile) string {
	if x, ok := f.(IndexExter); ok {
		switch ext := x.IndexExt(); ext {
		case ".csi", "":
			return ext
		}
	}
	return ".bai"
}

// Version identifies one version of a source file, from its stat: a file
// replaced (another device, inode, size or mtime) or changed in place (a
// new ctime, which no user can set back) is another version. The mount's
// nodes and the Opener's cache (internal/service) key by it.
type Version struct {
	Dev, Ino           uint64
	Size, MTime, CTime int64 // times in nanoseconds since the Unix epoch
}

// VersionOf is the version st describes.
func VersionOf(st *syscall.Stat_t) Version {
	return Version{Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size, MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano()}
}

// errHidden reports a source name that exists but is not shown.
var errHidden = fmt.Errorf("name not shown by cramfs: %w", iofs.ErrNotExist)

// maxLinks bounds the symbolic links followed resolving one name (the
// kernel's own limit).
const maxLinks = 40

// nameMax is the longest file name (NAME_MAX): a synthetic name longer
// than that could not be copied anywhere, so it is neither listed nor
// looked up.
const nameMax = 255

// resolveSource resolves name in the source directory dirRel: it returns
// the slash path, relative to the source root, of what the name leads to
// with every symbolic link on the way resolved, and the lstat of that.
//
// It reads links and stats names through m.root only, one component at a
// time, and opens nothing: whatever is swapped in while it runs, it never
// reaches outside the source. A link leading outside the source (an
// absolute target not below the source's real path, or more ".." than
// there are directories) is hidden, as is a dangling one.
func (m *mountFS) resolveSource(dirRel, name string) (string, syscall.Stat_t, error) {
	var st syscall.Stat_t
	// dirRel was resolved when its node was made; should it have changed
	// since, the root still confines every access (and a dirRel that is
	// now a link is not a directory: hidden).
	todo := strings.Split(name, "/")
	done := path.Clean(dirRel) // resolved so far: a directory path without links
	fi, err := m.root.Lstat(done)
	links := 0
	for err == nil && len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			// "f/" and "f/." of a file f fail (ENOTDIR), as in the kernel.
			if !fi.IsDir() {
				return "", st, fmt.Errorf("%w: %s is not a directory", errHidden, done)
			}
			continue
		case "..":
			if done == "." {
				return "", st, fmt.Errorf("%w: %s leads above the source", errHidden, path.Join(dirRel, name))
			}
			done = path.Dir(done)
			fi, err = m.root.Lstat(done)
			continue
		}
		if !fi.IsDir() {
			return "", st, fmt.Errorf("%w: %s is not a directory", errHidden, done)
		}
		next := path.Join(done, c)
		nfi, nerr := m.root.Lstat(next)
		if nerr != nil || nfi.Mode()&os.ModeSymlink == 0 {
			done, fi, err = next, nfi, nerr
			continue
		}
		if links++; links > maxLinks {
			return "", st, fmt.Errorf("%w: %s: more than %d symbolic links: %w", errHidden, path.Join(dirRel, name), maxLinks, syscall.ELOOP)
		}
		target, err := m.root.Readlink(next)
		if err != nil {
			// EINVAL: no longer a link, swapped since the lstat.
			return "", st, fmt.Errorf("%w: %s changed while resolved: %v", errHidden, next, err)
		}
		if path.IsAbs(target) {
			r, ok := m.inside(target)
			if !ok {
				return "", st, fmt.Errorf("%w: symbolic link %s points outside the source (%s)", errHidden, next, target)
			}
			done, target = ".", r
			if fi, err = m.root.Lstat(done); err != nil {
				break
			}
		}
		todo = append(strings.Split(target, "/"), todo...)
	}
	if err != nil {
		// A name, or link target, that leads nowhere: hidden like a
		// dangling link, with ENOENT whatever the errno was.
		if errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ENAMETOOLONG) {
			return "", st, fmt.Errorf("%w: %s: %v", errHidden, path.Join(dirRel, name), err)
		}
		return "", st, err
	}
	sys, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", st, fmt.Errorf("stat %s: no syscall.Stat_t (%T)", done, fi.Sys())
	}
	return done, *sys, nil
}

// inside returns the absolute path abs relative to the source's real
// path, when it lies below it (judged on the name alone: nothing outside
// the source is looked at).
//
// The source's components are matched one by one and the rest is kept as
// it is, not cleaned: ".." after a linked directory leads where the
// kernel's resolution leads, and a ".." among the source's own components
// passes outside it.
func (m *mountFS) inside(abs string) (string, bool) {
	rest := strings.Split(abs, "/")
	for _, want := range strings.Split(strings.Trim(m.srcReal, "/"), "/") {
		for len(rest) > 0 && (rest[0] == "" || rest[0] == ".") {
			rest = rest[1:]
		}
		if want == "" {
			break // the source is /
		}
		if len(rest) == 0 || rest[0] != want {
			return "", false
		}
		rest = rest[1:]
	}
	r := strings.TrimLeft(strings.Join(rest, "/"), "/")
	if r == "" {
		r = "."
	}
	return r, true
}

func isDir(st *syscall.Stat_t) bool { return st.Mode&syscall.S_IFMT == syscall.S_IFDIR }
func isReg(st *syscall.Stat_t) bool { return st.Mode&syscall.S_IFMT == syscall.S_IFREG }

// synthetic are the names a CRAM x.cram gives, by suffix of the name:
// x.bam, and its index as x.bam.bai and x.bai (x.bam.csi and x.csi for a
// CSI), the two names htslib, Picard, GATK and IGV look for. The order
// decides which CRAM a name belongs to when two could claim it: x.bam.bai
// is x.cram's before it is x.bam.cram's x.bai.
var synthetic = [...]struct {
	suffix string
	k      kind
	ext    string // for kindBAI, the index extension the name stands for
}{
	{".bam.bai", kindBAI, ".bai"},
	{".bam.csi", kindBAI, ".csi"},
	{".bam", kindBAM, ""},
	{".bai", kindBAI, ".bai"},
	{".csi", kindBAI, ".csi"},
}

// child resolves name in directory d by the package's name mapping rules.
// Names that do not exist or are not shown give an error matching
// fs.ErrNotExist. It opens nothing: it decides from lstats, and reads
// the links it meets.
func (m *mountFS) child(d *dirNode, name string) (entry, error) {
	e, err := m.entryOf(d.rel, name)
	if err != nil || e.kind != kindLink {
		return e, err
	}
	return e, m.checkLink(d.rel, &e)
}

// inoOf derives the stable inode number of entry e named name in d. The
// synthetic files include the CRAM's size and mtime, so that a CRAM
// replaced in place gets a new node; directories include their mount path,
// so that a directory reached through a symbolic link is not an alias.
// Every kind includes the source path the entry resolved to: go-fuse
// reuses the node of a known inode number, and a node keeps the source
// path it reads, so a file or directory renamed in the source (or a
// directory swapped for a link, and back) must not get the node that
// still reads the old path.
func inoOf(d *dirNode, name string, e *entry) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	put := func(v uint64) {
		for i := range buf {
			buf[i] = byte(v >> (8 * i))
		}
		h.Write(buf[:])
	}
	id := VersionOf(&e.st)
	h.Write([]byte{byte(e.kind)})
	put(id.Dev)
	put(id.Ino)
	h.Write([]byte(e.rel))
	h.Write([]byte{0})
	switch e.kind {
	case kindDir:
		h.Write([]byte(path.Join(d.mpath, name)))
	case kindBAM, kindBAI:
		put(uint64(id.Size))
		put(uint64(id.MTime))
		put(uint64(id.CTime))
	}
	ino := h.Sum64()
	if ino <= fuse.FUSE_ROOT_ID || ino == ^uint64(0) {
		ino = 2 + ino&0xff
	}
	return ino
}

// fillAttr sets a from the source stat st, minus write permission. Group
// bits that are write only stay: with an ACL they are its mask, and the
// kernel consults the ACL only when some group bit is set (without it, a
// named user's entry would be skipped in favour of the other bits). The
// owner, group and modes of Options.UID, GID and Umask replace the
// source's when set.
func (m *mountFS) fillAttr(a *fuse.Attr, st *syscall.Stat_t, size int64, ino uint64) {
	a.Ino = ino
	a.Size = uint64(max(size, 0))
	a.Blocks = (a.Size + 511) / 512
	a.Blksize = 1 << 16
	a.Mode = st.Mode &^ 0o222
	if a.Mode&0o070 == 0 {
		a.Mode |= st.Mode & 0o070
	}
	a.Nlink = 1
	if isDir(st) {
		a.Nlink = uint32(max(st.Nlink, 2))
	}
	a.Uid, a.Gid = st.Uid, st.Gid
	m.shown.apply(a)
	a.Atime, a.Atimensec = uint64(st.Atim.Sec), uint32(st.Atim.Nsec)
	a.Mtime, a.Mtimensec = uint64(st.Mtim.Sec), uint32(st.Mtim.Nsec)
	a.Ctime, a.Ctimensec = uint64(st.Ctim.Sec), uint32(st.Ctim.Nsec)
}

// openBAM asks the Opener for the BAM of the CRAM e, the version e.st
// describes (checked by the Opener on the descriptor it opens); when the
// CRAM changed meanwhile, it takes the new version (up to a few tries)
// and returns the BAM with the entry it belongs to.
func (m *mountFS) openBAM(ctx context.Context, e entry) (BAMFile, entry, error) {
	const tries = 3
	for range tries {
		f, err := m.op.OpenBAM(ctx, m.ref(e))
		if err == nil && f == nil {
			err = fmt.Errorf("opener returned no BAM for %s", e.rel)
		}
		if !errors.Is(err, ErrChanged) {
			return f, e, err
		}
		fi, err := m.root.Stat(e.rel)
		if err != nil {
			return nil, e, err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || !isReg(st) {
			return nil, e, fmt.Errorf("%w: %s is no longer a regular file", errHidden, e.rel)
		}
		e.st = *st
	}
	return nil, e, fmt.Errorf("CRAM %s kept changing while being opened (%d tries): %w", e.rel, tries, syscall.ESTALE)
}

// ref is the CRAMRef of the CRAM of entry e.
func (m *mountFS) ref(e entry) CRAMRef { return CRAMRef{Root: m.root, Rel: e.rel, Stat: e.st} }

// knownIndex reports whether the listing may name the index entry e: only
// when the Opener knows that the CRAM's BAM has an index of that
// extension, so that the name can be looked up.
func (m *mountFS) knownIndex(e entry) bool {
	k, ok := m.op.(IndexKnower)
	if !ok {
		return false
	}
	ext, ok := k.KnownIndexExt(m.ref(e))
	return ok && ext == e.ext
}

// dirNode is a mirrored source directory. The mount's directories are the
// source's own (a link to a directory is shown as a link), so its source
// path has no links and is its path in the mount.
type dirNode struct {
	fusefs.Inode
	m     *mountFS
	rel   string // source path relative to the source root
	mpath string // path inside the mount, for logs and inode numbers
}

var (
	_ fusefs.NodeLookuper  = (*dirNode)(nil)
	_ fusefs.NodeReaddirer = (*dirNode)(nil)
	_ fusefs.NodeGetattrer = (*dirNode)(nil)
	_ fusefs.NodeStatfser  = (*dirNode)(nil)
)

// rootDir is the mount's root directory when it has extended attributes
// (Options.RootXattrs) besides its ACL.
type rootDir struct {
	dirNode
	xattrs map[string]string // constant
}

var _ fusefs.NodeGetxattrer = (*rootDir)(nil)

// Getxattr implements fs.NodeGetxattrer: the attribute attr, copied into
// dest when it fits, or its size when dest is empty; the directory's ACL
// as every directory's.
func (r *rootDir) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	v, ok := r.xattrs[attr]
	switch {
	case !ok:
		return r.dirNode.Getxattr(ctx, attr, dest)
	case len(dest) == 0:
		return uint32(len(v)), 0
	case len(dest) < len(v):
		return uint32(len(v)), syscall.ERANGE
	}
	return uint32(copy(dest, v)), 0
}

// Getattr implements fs.NodeGetattrer from the source directory.
func (d *dirNode) Getattr(ctx context.Context, _ fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	fi, err := d.m.root.Stat(d.rel)
	if err != nil {
		return d.m.fail("getattr", d.mpath, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return syscall.EIO
	}
	d.m.fillAttr(&out.Attr, st, st.Size, d.StableAttr().Ino)
	return 0
}

// Statfs implements fs.NodeStatfser with the source filesystem's numbers.
func (d *dirNode) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	// Through the root's directory, not the path, which may have changed.
	f, err := d.m.root.OpenFile(".", dirOpenFlags, 0)
	if err != nil {
		return d.m.fail("statfs", d.mpath, err)
	}
	defer f.Close()
	var s syscall.Statfs_t
	if err := syscall.Fstatfs(int(f.Fd()), &s); err != nil {
		return d.m.fail("statfs", d.mpath, err)
	}
	out.FromStatfsT(&s)
	return 0
}

// Lookup implements fs.NodeLookuper by the package's name mapping rules.
// Looking up a .bam or .bai opens the CRAM's BAM, which may wait for a
// first scan of the CRAM; a broken CRAM fails here with EIO.
func (d *dirNode) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fusefs.Inode, syscall.Errno) {
	mp := path.Join(d.mpath, name)
	e, err := d.m.child(d, name)
	if err != nil {
		return nil, d.m.fail("lookup", mp, err)
	}
	ino := entryIno(d, name, &e)
	switch e.kind {
	case kindDir:
		n := &dirNode{m: d.m, rel: e.rel, mpath: mp}
		d.m.fillAttr(&out.Attr, &e.st, e.st.Size, ino)
		return d.NewInode(ctx, n, fusefs.StableAttr{Mode: syscall.S_IFDIR, Ino: ino}), 0
	case kindLink:
		if e.want == kindBAI && !d.m.indexMayBe(*e.dest) {
			return nil, d.m.fail("lookup", mp, fmt.Errorf("%w: the index of %s is not %s", errHidden, e.dest.rel, e.ext))
		}
		n := &linkNode{text: []byte(e.text), st: e.st}
		fillLinkAttr(&out.Attr, &e.st, len(e.text), ino)
		return d.NewInode(ctx, n, fusefs.StableAttr{Mode: syscall.S_IFLNK, Ino: ino}), 0
	case kindFile:
		n := &fileNode{m: d.m, rel: e.rel, mpath: mp, id: VersionOf(&e.st)}
		d.m.fillAttr(&out.Attr, &e.st, e.st.Size, ino)
		return d.NewInode(ctx, n, fusefs.StableAttr{Mode: syscall.S_IFREG, Ino: ino}), 0
	}
	// Revalidation of an unchanged CRAM: reuse the node and its BAM.
	if ch := d.GetChild(name); ch != nil && ch.StableAttr().Ino == ino {
		if bn, ok := ch.Operations().(*bamNode); ok {
			d.m.fillAttr(&out.Attr, &bn.st, bn.size(), ino)
			return ch, 0
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, d.m.fail("lookup", mp, err)
	}
	f, e, err := d.m.openBAM(ctx, e)
	if err != nil {
		return nil, d.m.fail("lookup", mp, err)
	}
	if ext := indexExt(f); e.kind == kindBAI && e.ext != ext {
		if ext == "" {
			// No index could be built (records not sorted by
			// coordinate): no index file rather than an empty one.
			return nil, d.m.fail("lookup", mp, fmt.Errorf("%w: %s has no index (records not sorted by coordinate)", errHidden, e.rel))
		}
		// x.bam.bai of a file indexed by CSI, or the other way round.
		return nil, d.m.fail("lookup", mp, fmt.Errorf("%w: the index of %s is %s", errHidden, e.rel, ext))
	}
	ino = inoOf(d, name, &e)
	n := newBAMNode(d.m, e, mp, f)
	d.m.fillAttr(&out.Attr, &e.st, n.size(), ino)
	return d.NewInode(ctx, n, fusefs.StableAttr{Mode: syscall.S_IFREG, Ino: ino}), 0
}

// Open flags of source files and directories: O_NONBLOCK so that a FIFO
// or device swapped in for a file never blocks the open (the descriptor's
// fstat then refuses it).
const (
	fileOpenFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_NOFOLLOW | syscall.O_CLOEXEC
	dirOpenFlags  = fileOpenFlags | syscall.O_DIRECTORY
)

// Readdir implements fs.NodeReaddirer: it lists the source directory and
// maps the names as Lookup does, from lstats only: it opens and reads no
// CRAM (a FIFO named x.cram is hidden, not opened). An index is listed
// only once the Opener knows the CRAM has one (see IndexKnower), x.bam
// always; names longer than NAME_MAX are left out.
func (d *dirNode) Readdir(ctx context.Context) (fusefs.DirStream, syscall.Errno) {
	list, err := d.m.list(ctx, d)
	if err != nil {
		return nil, d.m.fail("readdir", d.mpath, err)
	}
	out := make([]fuse.DirEntry, 0, len(list))
	for _, l := range list {
		mode := uint32(syscall.S_IFREG)
		switch l.e.kind {
		case kindDir:
			mode = syscall.S_IFDIR
		case kindLink:
			mode = syscall.S_IFLNK
		}
		out = append(out, fuse.DirEntry{Name: l.name, Mode: mode, Ino: entryIno(d, l.name, &l.e)})
	}
	return fusefs.NewListDirStream(out), 0
}

// listed is a name of a directory listing with its entry.
type listed struct {
	name string
	e    entry
}

// list lists the source directory of d and maps its names as Lookup does,
// from lstats only (see Readdir): the names shown, sorted, each with its
// entry. A name that cannot be resolved is logged and left out.
func (m *mountFS) list(ctx context.Context, d *dirNode) ([]listed, error) {
	f, err := m.root.OpenFile(d.rel, dirOpenFlags, 0)
	if err != nil {
		return nil, err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return nil, err
	}
	cand := make(map[string]struct{}, len(names)*2)
	for _, n := range names {
		cand[n] = struct{}{}
		if base, ok := strings.CutSuffix(n, ".cram"); ok {
			for _, s := range synthetic {
				cand[base+s.suffix] = struct{}{}
			}
		}
	}
	sorted := make([]string, 0, len(cand))
	for n := range cand {
		if len(n) <= nameMax {
			sorted = append(sorted, n)
		}
	}
	sort.Strings(sorted)
	out := make([]listed, 0, len(sorted))
	for _, n := range sorted {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		e, err := m.child(d, n)
		if err != nil {
			if !errors.Is(err, iofs.ErrNotExist) {
				m.fail("readdir", path.Join(d.mpath, n), err)
			}
			continue
		}
		if e.kind == kindBAI && !m.knownIndex(e) || e.kind == kindLink && e.want == kindBAI && !m.knownIndex(*e.dest) {
			continue
		}
		out = append(out, listed{name: n, e: e})
	}
	return out, nil
}

// bamNode is the synthetic .bam (or, with bai set, .bam.bai) of one
// version of a CRAM. It holds what Getattr needs and what names the
// version, not the BAMFile: the kernel keeps a node it looked up until it
// sends FORGET (under memory pressure), long after its entry timed out,
// and a BAMFile (layout, header, index) kept for every name ever looked
// up would make memory grow with the number of files. Open asks the
// Opener for the BAMFile, and the handle holds it while the file is open.
type bamNode struct {
	fusefs.Inode
	m     *mountFS
	rel   string // the CRAM, relative to the source root
	mpath string
	st    syscall.Stat_t // the CRAM version this node serves
	bai   bool
	// sz is the BAM's size, or with bai the index's, and tag the
	// BAMFile's Tag ("" without one), when looked up: what Getattr
	// answers and what every BAMFile opened for the node must still have.
	sz  int64
	tag string
}

var (
	_ fusefs.NodeGetattrer = (*bamNode)(nil)
	_ fusefs.NodeOpener    = (*bamNode)(nil)
)

// newBAMNode makes the node of e, a kindBAM or kindBAI entry, named mp in
// the mount, whose BAMFile f the Opener gave for e.st.
func newBAMNode(m *mountFS, e entry, mp string, f BAMFile) *bamNode {
	n := &bamNode{m: m, rel: e.rel, mpath: mp, st: e.st, bai: e.kind == kindBAI}
	n.sz, n.tag = n.sizeOf(f), tagOf(f)
	return n
}

// tagOf is f's Tag, or "" when it has none.
func tagOf(f BAMFile) string {
	if t, ok := f.(Tagger); ok {
		return t.Tag()
	}
	return ""
}

func (n *bamNode) size() int64 { return n.sz }

// sizeOf is the size of the file n serves, as f has it.
func (n *bamNode) sizeOf(f BAMFile) int64 {
	if n.bai {
		return int64(len(f.Index()))
	}
	return f.Size()
}

// Getattr implements fs.NodeGetattrer: the exact size of the BAM or BAI,
// with the CRAM's mode (minus write bits), owner and times.
func (n *bamNode) Getattr(ctx context.Context, _ fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.m.fillAttr(&out.Attr, &n.st, n.size(), n.StableAttr().Ino)
	return 0
}

// Open implements fs.NodeOpener. It refuses writing (EROFS) and answers
// ESTALE when the CRAM changed since the lookup, which makes the kernel
// look the name up again and get the node of the new version. The handle
// holds the BAMFile of the node's version, so that an open file keeps
// serving it whatever the Opener forgets or opens since.
func (n *bamNode) Open(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0 {
		return nil, 0, n.m.fail("open", n.mpath, syscall.EROFS)
	}
	fi, err := n.m.root.Stat(n.rel)
	if err != nil {
		return nil, 0, n.m.fail("open", n.mpath, err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || VersionOf(st) != VersionOf(&n.st) {
		return nil, 0, n.m.fail("open", n.mpath, fmt.Errorf("CRAM %s was replaced: %w", n.rel, syscall.ESTALE))
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, n.m.fail("open", n.mpath, err)
	}
	f, err := n.m.op.OpenBAM(ctx, CRAMRef{Root: n.m.root, Rel: n.rel, Stat: n.st})
	switch {
	case errors.Is(err, ErrChanged):
		return nil, 0, n.m.fail("open", n.mpath, fmt.Errorf("CRAM %s was replaced: %w: %w", n.rel, syscall.ESTALE, err))
	case err != nil:
		return nil, 0, n.m.fail("open", n.mpath, err)
	case f == nil:
		return nil, 0, n.m.fail("open", n.mpath, fmt.Errorf("opener returned no BAM for %s: %w", n.rel, syscall.EIO))
	}
	if err := n.sameBytes(f); err != nil {
		return nil, 0, n.m.fail("open", n.mpath, err)
	}
	return &bamHandle{n: n, f: f}, fuse.FOPEN_KEEP_CACHE, 0
}

// sameBytes checks that f, given for n's version, serves the bytes n was
// looked up with. It does not when the version was scanned again (its
// layout found wrong): the kernel holds the old size and cached pages,
// which other bytes must not be mixed with.
func (n *bamNode) sameBytes(f BAMFile) error {
	what := "BAM"
	if n.bai {
		what = "index"
	}
	if got := n.sizeOf(f); got != n.sz {
		return fmt.Errorf("%s of %s: %d bytes, %d when looked up: %w", what, n.rel, got, n.sz, syscall.EIO)
	}
	if got := tagOf(f); got != n.tag {
		return fmt.Errorf("%s of %s: scanned again into layout %s, %s when looked up: %w", what, n.rel, got, n.tag, syscall.EIO)
	}
	return nil
}

// bamHandle is an open synthetic BAM or BAI: the BAMFile of its node's
// version, held while the file is open.
type bamHandle struct {
	n *bamNode
	f BAMFile
}

var _ fusefs.FileReader = (*bamHandle)(nil)

// Read implements fs.FileReader; offsets past the end read 0 bytes.
func (h *bamHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n := h.n
	size := n.size()
	if off < 0 {
		return nil, n.m.fail("read", n.mpath, fmt.Errorf("negative offset %d: %w", off, syscall.EINVAL))
	}
	if off >= size || len(dest) == 0 {
		return fuse.ReadResultData(nil), 0
	}
	want := int(min(int64(len(dest)), size-off))
	if n.bai {
		// Asked for at each read: a BAMFile may drop its index while
		// the file is open, and read it again.
		index := h.f.Index()
		if int64(len(index)) != size {
			return nil, n.m.fail("read", n.mpath, fmt.Errorf("index of %s: %d bytes, %d when looked up: %w", n.rel, len(index), size, syscall.EIO))
		}
		return fuse.ReadResultData(index[off : off+int64(want)]), 0
	}
	if err := ctx.Err(); err != nil {
		return nil, n.m.fail("read", n.mpath, err)
	}
	if v, ok := h.f.(Viewer); ok {
		parts, release, err := v.View(ctx, off, want)
		if err != nil {
			return nil, n.m.fail("read", n.mpath, err)
		}
		return &lentResult{parts: parts, size: want, release: release}, 0
	}
	got, err := h.f.ReadAt(dest[:want], off)
	if got < want {
		if err == nil || err == io.EOF {
			err = fmt.Errorf("short read at offset %d: %d of %d bytes (size %d): %w", off, got, want, size, io.ErrUnexpectedEOF)
		}
		return nil, n.m.fail("read", n.mpath, err)
	}
	return fuse.ReadResultData(dest[:want]), 0
}

// lentResult is a read reply made of bytes lent by a Viewer, in one or
// more pieces, released once go-fuse has sent them.
type lentResult struct {
	parts   [][]byte
	size    int
	release func()
}

// Bytes returns the reply in one piece: the lent bytes themselves, or a
// copy into buf when they are in several.
func (r *lentResult) Bytes(buf []byte) ([]byte, fuse.Status) {
	if len(r.parts) == 1 {
		return r.parts[0], fuse.OK
	}
	buf = buf[:0]
	for _, p := range r.parts {
		buf = append(buf, p...)
	}
	return buf, fuse.OK
}

func (r *lentResult) Size() int { return r.size }
func (r *lentResult) Done()     { r.release() }

// Slices makes go-fuse write the lent pieces with one writev, without a
// copy, and call Done only after that write. A result without it is
// turned into bytes by Bytes and released by Done before the reply is
// written (with splice disabled, as here), which let a recycled segment
// buffer be overwritten by the next build while the kernel copied it.
func (r *lentResult) Slices() ([][]byte, fuse.Status) { return r.parts, fuse.OK }

// fileNode is a source regular file passed through read-only.
type fileNode struct {
	fusefs.Inode
	m     *mountFS
	rel   string
	mpath string
	id    Version // Dev and Ino are what Open checks
}

var (
	_ fusefs.NodeGetattrer = (*fileNode)(nil)
	_ fusefs.NodeOpener    = (*fileNode)(nil)
)

// Getattr implements fs.NodeGetattrer from the source file (or the open
// handle), minus write bits.
func (n *fileNode) Getattr(ctx context.Context, fh fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	var fi os.FileInfo
	var err error
	if h, ok := fh.(*fileHandle); ok {
		fi, err = h.f.Stat()
	} else {
		fi, err = n.m.root.Stat(n.rel)
	}
	if err != nil {
		return n.m.fail("getattr", n.mpath, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return syscall.EIO
	}
	n.m.fillAttr(&out.Attr, st, st.Size, n.StableAttr().Ino)
	return 0
}

// Open implements fs.NodeOpener: read-only, and ESTALE when the source
// file was replaced by another inode since the lookup.
func (n *fileNode) Open(ctx context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY || flags&syscall.O_TRUNC != 0 {
		return nil, 0, n.m.fail("open", n.mpath, syscall.EROFS)
	}
	f, err := n.m.root.OpenFile(n.rel, fileOpenFlags, 0)
	if err != nil {
		return nil, 0, n.m.fail("open", n.mpath, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, n.m.fail("open", n.mpath, err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !isReg(st) || uint64(st.Dev) != n.id.Dev || st.Ino != n.id.Ino {
		f.Close()
		return nil, 0, n.m.fail("open", n.mpath, fmt.Errorf("source %s was replaced: %w", n.rel, syscall.ESTALE))
	}
	return &fileHandle{f: f, n: n}, 0, 0
}

// fileHandle is an open pass-through file.
type fileHandle struct {
	f *os.File
	n *fileNode
}

var (
	_ fusefs.FileReader   = (*fileHandle)(nil)
	_ fusefs.FileReleaser = (*fileHandle)(nil)
)

// Read implements fs.FileReader from the source file.
func (h *fileHandle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off < 0 {
		return nil, h.n.m.fail("read", h.n.mpath, fmt.Errorf("negative offset %d: %w", off, syscall.EINVAL))
	}
	got, err := h.f.ReadAt(dest, off)
	if err != nil && err != io.EOF {
		return nil, h.n.m.fail("read", h.n.mpath, err)
	}
	return fuse.ReadResultData(dest[:got]), 0
}

// Release implements fs.FileReleaser.
func (h *fileHandle) Release(ctx context.Context) syscall.Errno {
	if err := h.f.Close(); err != nil {
		return h.n.m.fail("release", h.n.mpath, err)
	}
	return 0
}
