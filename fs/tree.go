package fs

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path"
	"strings"
	"syscall"
)

// Tree is the tree of a source directory as cramfs shows it, for front
// ends other than the FUSE mount (cramfs serve): the same names (x.cram as
// x.bam with its index, real entries winning, hidden names hidden), the
// same confinement (every access through an os.Root of the source) and
// the same Opener. It is safe for concurrent use.
type Tree struct {
	m     *mountFS // constant
	owned bool     // Close closes the source root (not a mount's)
}

// EntryKind is what a name of a Tree is.
type EntryKind uint8

const (
	KindDir   EntryKind = iota // a source directory
	KindFile                   // a source regular file, passed through
	KindBAM                    // the synthetic BAM of a CRAM
	KindIndex                  // the synthetic BAI or CSI of a CRAM
	KindLink                   // a symbolic link inside the source
)

// Entry is a resolved path of a Tree.
type Entry struct {
	Kind EntryKind
	// Path is the slash-separated path the entry was asked by, cleaned.
	Path string
	// Target is, for a KindLink, where the link leads in the tree: the
	// slash-separated path (from the tree's root) of its target, then the
	// rest of the path asked for, which a front end answers with
	// instead (an HTTP redirect).
	Target string
	// Stat is the source object's lstat: for a BAM or index, the CRAM's;
	// it identifies the version served.
	Stat syscall.Stat_t
	// IndexExt is, for a KindIndex, the extension named: ".bai" or ".csi".
	IndexExt string

	e entry
}

// DirEntry is a name listed in a directory of a Tree.
type DirEntry struct {
	Name string
	Kind EntryKind
}

// OpenTree opens the source directory src for front ends to read through
// op. Close it when done.
func OpenTree(src string, op Opener, log *slog.Logger) (*Tree, error) {
	if op == nil {
		return nil, fmt.Errorf("%w: nil Opener", ErrMount)
	}
	srcReal, err := realDir("source", src)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(srcReal)
	if err != nil {
		return nil, fmt.Errorf("source %s: %w", src, err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Tree{m: newMountFS(root, srcReal, op, log), owned: true}, nil
}

// Close closes the source directory of a tree OpenTree opened; a mount's
// tree (Server.Tree) is closed with the mount.
func (t *Tree) Close() error {
	if !t.owned {
		return nil
	}
	return t.m.root.Close()
}

// Tree is the tree the mount shows, for its own walkers (the background
// indexing of --index-on-mount): the same names and the same Opener.
func (s *Server) Tree() *Tree { return &Tree{m: s.m} }

// Root is the source tree, for the Opener's walkers.
func (t *Tree) Root() *os.Root { return t.m.root }

// kindOf maps the package's entry kinds to a Tree's.
var kindOf = [...]EntryKind{kindDir: KindDir, kindFile: KindFile, kindBAM: KindBAM, kindBAI: KindIndex, kindLink: KindLink}

// Lookup resolves p, a slash-separated path from the tree's root ("" or
// "." for the root). A path that does not exist or is not shown gives an
// error matching fs.ErrNotExist; a path through a link gives the link's
// entry, with the Target to ask for instead.
func (t *Tree) Lookup(ctx context.Context, p string) (Entry, error) {
	p = path.Clean("/" + p)[1:]
	if p == "" {
		p = "."
	}
	dir := "."
	st, err := t.m.root.Lstat(".")
	if err != nil {
		return Entry{}, err
	}
	cur := Entry{Kind: KindDir, Path: ".", Stat: *st.Sys().(*syscall.Stat_t), e: entry{kind: kindDir, rel: "."}}
	if p == "." {
		return cur, nil
	}
	parts := strings.Split(p, "/")
	for i, name := range parts {
		if err := ctx.Err(); err != nil {
			return Entry{}, err
		}
		if cur.Kind != KindDir {
			return Entry{}, fmt.Errorf("%w: %s is not a directory", errHidden, cur.Path)
		}
		e, err := t.m.child(&dirNode{rel: dir}, name)
		if err != nil {
			return Entry{}, err
		}
		asked := path.Join(parts[:i+1]...)
		cur = Entry{Kind: kindOf[e.kind], Path: asked, Stat: e.st, IndexExt: e.ext, e: e}
		if e.kind == kindLink {
			target := path.Join(path.Dir(asked), e.text)
			if rest := parts[i+1:]; len(rest) > 0 {
				target = path.Join(target, path.Join(rest...))
			}
			cur.Target = target
			return cur, nil
		}
		dir = e.rel
	}
	return cur, nil
}

// List lists the directory entry d (from Lookup) as a mount lists it: no
// CRAM is read, an index is named once the Opener knows it, every name
// listed can be looked up.
func (t *Tree) List(ctx context.Context, d Entry) ([]DirEntry, error) {
	if d.Kind != KindDir {
		return nil, fmt.Errorf("%s is not a directory: %w", d.Path, syscall.ENOTDIR)
	}
	list, err := t.m.list(ctx, &dirNode{rel: d.e.rel, mpath: d.Path})
	if err != nil {
		return nil, err
	}
	out := make([]DirEntry, len(list))
	for i, l := range list {
		out[i] = DirEntry{Name: l.name, Kind: kindOf[l.e.kind]}
	}
	return out, nil
}

// OpenBAM returns the BAM of the BAM or index entry e, through the Opener,
// and the entry of the version opened (the CRAM may have been replaced
// since the lookup: the version opened is the one served, whole).
func (t *Tree) OpenBAM(ctx context.Context, e Entry) (BAMFile, Entry, error) {
	if e.Kind != KindBAM && e.Kind != KindIndex {
		return nil, e, fmt.Errorf("%s is not a BAM or its index", e.Path)
	}
	f, ie, err := t.m.openBAM(ctx, e.e)
	if err != nil {
		return nil, e, err
	}
	e.e, e.Stat = ie, ie.st
	if e.Kind == KindIndex {
		if ext := indexExt(f); ext != e.IndexExt {
			return nil, e, fmt.Errorf("%w: the index of %s is %q", errHidden, ie.rel, ext)
		}
	}
	return f, e, nil
}

// OpenFile opens the regular file entry e, read-only, through the source
// root, never blocking on a FIFO and checked on its descriptor to be the
// file e names.
func (t *Tree) OpenFile(e Entry) (*os.File, error) {
	if e.Kind != KindFile {
		return nil, fmt.Errorf("%s is not a regular file", e.Path)
	}
	f, err := t.m.root.OpenFile(e.e.rel, fileOpenFlags, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !isReg(st) || st.Dev != e.Stat.Dev || st.Ino != e.Stat.Ino {
		f.Close()
		return nil, fmt.Errorf("source %s was replaced: %w", e.e.rel, ErrChanged)
	}
	return f, nil
}

// ToErrno is the errno a request failing with err answers (see toErrno),
// for front ends that map it further (HTTP status codes).
func ToErrno(err error) syscall.Errno { return toErrno(err) }
