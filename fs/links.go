package fs

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	iofs "io/fs"
	"os"
	"path"
	"strings"
	"syscall"

	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Symbolic links are shown as links, so that the kernel resolves them
// through the mount and checks every directory on the way, as it does in
// the source (default_permissions): a link in a public directory to a
// file of a private one gives what the private directory allows, no more.
//
// A link's text is rewritten only as needed: an absolute target below the
// source's real path becomes a relative one, and the link x.cram gives
// x.bam, x.bam.bai and x.bai (.csi) as links to the same target with its
// last component's ".cram" replaced by the suffix. A link is shown only
// when its text, resolved by the mount's own names (walk), leads to the
// mount's view of what the link leads to in the source (resolveSource):
// the same directory or file, or that synthetic file of the same CRAM.
// Links that lead outside the source, dangle, loop, or lead to a FIFO,
// socket or device, are hidden.

// missing reports whether err, from an lstat through the root, means
// that the name is not there (or no longer leads anywhere).
func missing(err error) bool {
	return errors.Is(err, iofs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ENAMETOOLONG)
}

// hasCRAMSide reports whether a regular file so named is hidden: a CRAM
// (its synthetic files stand for it) or a CRAM index.
func hasCRAMSide(name string) bool {
	return strings.HasSuffix(name, ".cram") || strings.HasSuffix(name, ".crai")
}

// entryOf is what the name name of the source directory dir (a path
// without links) is in the mount, before a link is checked (checkLink): a
// real entry of the source always wins over a synthetic name.
func (m *mountFS) entryOf(dir, name string) (entry, error) {
	if name == "" || name == "." || name == ".." || len(name) > nameMax || strings.ContainsAny(name, "/\x00") {
		return entry{}, errHidden
	}
	fi, err := m.root.Lstat(path.Join(dir, name))
	switch {
	case err == nil:
		m.noteShadow(dir, name, fi)
		return m.realEntry(dir, name, fi)
	case missing(err):
		return m.syntheticEntry(dir, name)
	}
	return entry{}, err
}

// realEntry is the entry of the real name name of dir, of lstat fi.
func (m *mountFS) realEntry(dir, name string, fi os.FileInfo) (entry, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return entry{}, fmt.Errorf("lstat %s: no syscall.Stat_t (%T)", path.Join(dir, name), fi.Sys())
	}
	rel := path.Join(dir, name)
	switch {
	case fi.IsDir():
		return entry{kind: kindDir, rel: rel, st: *st}, nil
	case fi.Mode().IsRegular():
		if hasCRAMSide(name) {
			return entry{}, errHidden
		}
		return entry{kind: kindFile, rel: rel, st: *st}, nil
	case fi.Mode()&os.ModeSymlink != 0:
		if hasCRAMSide(name) {
			// Shown only as a link to a directory: a link x.cram to a
			// file is a CRAM, shown as x.bam.
			if _, tst, err := m.resolveSource(dir, name); err != nil || !isDir(&tst) {
				return entry{}, errHidden
			}
		}
		return m.linkEntry(dir, name, st, "", kindLink, "")
	}
	return entry{}, fmt.Errorf("%w: %s is not a regular file, directory or symbolic link", errHidden, rel)
}

// syntheticEntry is the synthetic file name of dir stands for, when no
// real entry has that name: the file of the CRAM base.cram (a regular
// file, or a link, whose file is then a link too) for the first suffix
// of synthetic that name ends with and whose CRAM exists.
func (m *mountFS) syntheticEntry(dir, name string) (entry, error) {
	for _, s := range synthetic {
		base, ok := strings.CutSuffix(name, s.suffix)
		if !ok || base == "" {
			continue
		}
		cram := path.Join(dir, base+".cram")
		fi, err := m.root.Lstat(cram)
		if err != nil {
			if missing(err) {
				continue
			}
			return entry{}, err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		switch {
		case !ok:
			return entry{}, fmt.Errorf("lstat %s: no syscall.Stat_t (%T)", cram, fi.Sys())
		case fi.Mode().IsRegular():
			return entry{kind: s.k, rel: cram, st: *st, ext: s.ext}, nil
		case fi.Mode()&os.ModeSymlink != 0:
			return m.linkEntry(dir, base+".cram", st, s.suffix, s.k, s.ext)
		}
	}
	return entry{}, errHidden
}

// linkEntry is the link entry of the link name of dir, of lstat st, with
// its text for the mount: an absolute target below the source made
// relative to dir, and, with a suffix (the link x.cram's synthetic file
// want), the last component's ".cram" replaced by suffix.
func (m *mountFS) linkEntry(dir, name string, st *syscall.Stat_t, suffix string, want kind, ext string) (entry, error) {
	rel := path.Join(dir, name)
	target, err := m.root.Readlink(rel)
	if err != nil {
		// EINVAL: no longer a link, swapped since the lstat.
		return entry{}, fmt.Errorf("%w: %s changed while resolved: %v", errHidden, rel, err)
	}
	text, ok := m.mountText(dir, target)
	if !ok {
		return entry{}, fmt.Errorf("%w: symbolic link %s points outside the source (%s)", errHidden, rel, target)
	}
	if suffix != "" {
		if text, ok = swapSuffix(text, suffix); !ok {
			if _, tst, err := m.resolveSource(dir, name); err == nil && isReg(&tst) {
				m.noteOnce("link:"+rel, "cramfs: symbolic link to a file not shown as a BAM: its target's name does not end in .cram (rename the target, or link to a name ending in .cram)",
					"link", rel, "target", target)
			}
			return entry{}, fmt.Errorf("%w: the target %s of %s does not end in .cram", errHidden, target, rel)
		}
	}
	return entry{kind: kindLink, rel: rel, st: *st, text: text, want: want, ext: ext}, nil
}

// mountText is the link text target of a link in dir as the mount shows
// it: a relative one as it is, an absolute one below the source relative
// to dir (ok unset when it is not below the source).
func (m *mountFS) mountText(dir, target string) (string, bool) {
	if !path.IsAbs(target) {
		return target, true
	}
	r, ok := m.inside(target)
	if !ok {
		return "", false
	}
	if dir == "." {
		return r, true
	}
	up := strings.Repeat("../", strings.Count(dir, "/")+1)
	if r == "." {
		return strings.TrimSuffix(up, "/"), true
	}
	// The kernel reads a link of PATH_MAX bytes (with its NUL) at most.
	return up + r, len(up)+len(r) < pathMax
}

// pathMax is the longest path (PATH_MAX, its NUL included).
const pathMax = 4096

// swapSuffix replaces the ".cram" ending the last component of text by
// suffix; ok is unset when there is none, or the name would be too long.
func swapSuffix(text, suffix string) (string, bool) {
	i := strings.LastIndexByte(text, '/') + 1
	base, ok := strings.CutSuffix(text[i:], ".cram")
	if !ok || base == "" || len(base)+len(suffix) > nameMax {
		return "", false
	}
	return text[:i] + base + suffix, true
}

// checkLink checks that the link entry e of dir leads, through the mount,
// to the mount's view of what it leads to in the source, and sets e.dest.
func (m *mountFS) checkLink(dir string, e *entry) error {
	srel, sst, err := m.resolveSource(dir, path.Base(e.rel))
	if err != nil {
		return err
	}
	switch {
	case isReg(&sst):
	case isDir(&sst) && e.want == kindLink:
	default:
		return fmt.Errorf("%w: symbolic link %s leads to %s, not a regular file or directory", errHidden, e.rel, srel)
	}
	end, err := m.walk(dir, e.text)
	if err != nil {
		if e.want == kindLink && isReg(&sst) && hasCRAMSide(path.Base(srel)) {
			m.noteOnce("link:"+e.rel, "cramfs: symbolic link to a CRAM (or CRAM index) not shown: the mount shows no .cram; name the link x.cram to see it as x.bam",
				"link", e.rel, "target", srel)
		}
		return fmt.Errorf("%w: %s -> %s through the mount: %w", errHidden, e.rel, e.text, err)
	}
	same := end.rel == srel
	if e.want == kindLink {
		same = same && (end.kind == kindDir || end.kind == kindFile)
	} else {
		same = same && end.kind == e.want && end.ext == e.ext
	}
	if !same {
		m.noteOnce("link:"+e.rel+"\x00"+e.text, "cramfs: symbolic link not shown: through the mount it would lead elsewhere than in the source (its target's synthetic name is taken by a real entry)",
			"link", e.rel, "text", e.text, "source", srel, "mount", end.rel)
		return fmt.Errorf("%w: %s -> %s leads to %s through the mount, to %s in the source", errHidden, e.rel, e.text, end.rel, srel)
	}
	e.dest = &end
	return nil
}

// walk resolves the relative link text from the directory dir as the
// kernel does through the mount: component by component, by the mount's
// names (entryOf), following the links it meets by their mount text. It
// returns the entry reached: a directory, pass-through file or synthetic
// file.
func (m *mountFS) walk(dir, text string) (entry, error) {
	todo := strings.Split(text, "/")
	cur := dir // a source directory without links
	links := 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if cur == "." {
				return entry{}, fmt.Errorf("%w: %s leads above the source", errHidden, text)
			}
			cur = path.Dir(cur)
			continue
		}
		e, err := m.entryOf(cur, c)
		if err != nil {
			return entry{}, err
		}
		switch e.kind {
		case kindDir:
			cur = e.rel
			continue
		case kindLink:
			if links++; links > maxLinks {
				return entry{}, fmt.Errorf("%w: %s: more than %d symbolic links: %w", errHidden, text, maxLinks, syscall.ELOOP)
			}
			todo = append(strings.Split(e.text, "/"), todo...)
			continue
		}
		if len(todo) > 0 {
			return entry{}, fmt.Errorf("%w: %s is not a directory: %w", errHidden, e.rel, syscall.ENOTDIR)
		}
		return e, nil
	}
	fi, err := m.root.Lstat(cur)
	if err != nil {
		return entry{}, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.IsDir() {
		return entry{}, fmt.Errorf("%w: %s is no longer a directory", errHidden, cur)
	}
	return entry{kind: kindDir, rel: cur, st: *st}, nil
}

// indexMayBe reports whether the index e (of a CRAM) may exist under its
// extension: unless the Opener knows that it has another or none.
func (m *mountFS) indexMayBe(e entry) bool {
	k, ok := m.op.(IndexKnower)
	if !ok {
		return true
	}
	ext, known := k.KnownIndexExt(m.ref(e))
	return !known || ext == e.ext
}

// entryIno is the inode number of entry e named name in d.
func entryIno(d *dirNode, name string, e *entry) uint64 {
	if e.kind != kindLink {
		return inoOf(d, name, e)
	}
	return linkIno(e)
}

// linkIno derives the inode number of the link entry e from the link's
// identity and path and its text in the mount, which the node keeps: a
// link replaced, or x.bam beside x.bai of one link x.cram, gets another.
func linkIno(e *entry) uint64 {
	h := fnv.New64a()
	var buf [17]byte
	buf[0] = byte(kindLink)
	for i := range 8 {
		buf[1+i] = byte(uint64(e.st.Dev) >> (8 * i))
		buf[9+i] = byte(e.st.Ino >> (8 * i))
	}
	h.Write(buf[:])
	h.Write([]byte(e.rel))
	h.Write([]byte{0})
	h.Write([]byte(e.text))
	ino := h.Sum64()
	if ino <= fuse.FUSE_ROOT_ID || ino == ^uint64(0) {
		ino = 2 + ino&0xff
	}
	return ino
}

// fillLinkAttr sets a for a link of text length n from the source link's
// lstat st: its owner and times.
func fillLinkAttr(a *fuse.Attr, st *syscall.Stat_t, n int, ino uint64) {
	a.Ino = ino
	a.Size = uint64(n)
	a.Blocks = (a.Size + 511) / 512
	a.Blksize = 1 << 16
	a.Mode = syscall.S_IFLNK | 0o777
	a.Nlink = 1
	a.Uid, a.Gid = st.Uid, st.Gid
	a.Atime, a.Atimensec = uint64(st.Atim.Sec), uint32(st.Atim.Nsec)
	a.Mtime, a.Mtimensec = uint64(st.Mtim.Sec), uint32(st.Mtim.Nsec)
	a.Ctime, a.Ctimensec = uint64(st.Ctim.Sec), uint32(st.Ctim.Nsec)
}

// linkNode is a symbolic link of the source, or a synthetic file of a
// link x.cram, with its text in the mount.
type linkNode struct {
	fusefs.Inode
	text []byte         // constant: it is part of the inode number
	st   syscall.Stat_t // the source link's lstat
}

var (
	_ fusefs.NodeReadlinker = (*linkNode)(nil)
	_ fusefs.NodeGetattrer  = (*linkNode)(nil)
)

// Readlink implements fs.NodeReadlinker.
func (n *linkNode) Readlink(ctx context.Context) ([]byte, syscall.Errno) { return n.text, 0 }

// Getattr implements fs.NodeGetattrer.
func (n *linkNode) Getattr(ctx context.Context, _ fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	fillLinkAttr(&out.Attr, &n.st, len(n.text), n.StableAttr().Ino)
	return 0
}
