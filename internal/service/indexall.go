package service

import (
	"context"
	"path"
	"slices"

	"github.com/cramfs/cramfs/fs"
)

// indexAll opens, in the background, the BAM of every CRAM the mount's
// tree shows (--index-on-mount), so that their layouts are ready before
// a client asks. It walks the tree as a listing does, with the same names
// and rules (fs.Tree): it goes down real directories only (a link leads
// to a name of the tree that is walked anyway), and opens nothing that is
// not a regular file named .cram (no FIFO, socket or device).
func (o *opener) indexAll(ctx context.Context, tree *fs.Tree) {
	root, err := tree.Lookup(ctx, ".")
	if err != nil {
		o.log.Warn("background index: the source's root", "err", err)
		return
	}
	o.indexDir(ctx, tree, root, nil)
}

// dirID is the device and inode of a directory, to skip one that a swap
// made its own descendant.
type dirID struct{ dev, ino uint64 }

func (o *opener) indexDir(ctx context.Context, tree *fs.Tree, dir fs.Entry, above []dirID) {
	id := dirID{uint64(dir.Stat.Dev), dir.Stat.Ino}
	if slices.Contains(above, id) {
		return
	}
	above = append(slices.Clip(above), id)
	list, err := tree.List(ctx, dir)
	if err != nil {
		o.log.Warn("background index: listing failed", "dir", dir.Path, "err", err)
		return
	}
	for _, d := range list {
		if ctx.Err() != nil {
			return
		}
		if d.Kind != fs.KindDir && d.Kind != fs.KindBAM {
			continue
		}
		e, err := tree.Lookup(ctx, path.Join(dir.Path, d.Name))
		if err != nil {
			o.log.Debug("background index: not followed", "file", path.Join(dir.Path, d.Name), "err", err)
			continue
		}
		switch e.Kind {
		case fs.KindDir:
			o.indexDir(ctx, tree, e, above)
		case fs.KindBAM:
			if _, _, err := tree.OpenBAM(ctx, e); err != nil {
				if _, reported := referenceProblem(err); !reported {
					o.log.Warn("background index failed", "file", e.Path, "err", err)
				}
			}
		}
	}
}
