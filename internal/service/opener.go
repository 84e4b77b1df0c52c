package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/engine/layout"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/fs"
)

// fileKey identifies one version of a CRAM file: a replaced file (new
// inode, size or mtime) or one changed in place (new ctime, which no user
// can set back) is a different key, so bytes never mix.
type fileKey struct {
	rel string // below the mount's source root
	fs.Version
}

func keyOf(rel string, st *syscall.Stat_t) fileKey {
	return fileKey{rel: rel, Version: fs.VersionOf(st)}
}

// opener gives the FUSE layer the virtual BAM of each CRAM, opening each
// version of a file once and sharing it between all readers. It remembers
// the current version of up to maxEntries paths (and the index extension
// of as many): a path forgotten is opened again, its layout read back
// from the cache directory.
type opener struct {
	// Dependencies, each safe for concurrent use; states and onOpen are
	// set, if at all, before the opener serves.
	mgr  *engine.Manager
	refs *reference.Store
	log  *slog.Logger
	// states, when set, follows each file's state and reports reference
	// problems once per file.
	reports *fileReports

	// Constant.
	copt cram.Options
	// onOpen, when set, is told the layout of each file opened.
	onOpen func(layout.Layout)

	// Mutable, guarded by mu.
	mu      sync.Mutex
	entries *simplelru.LRU[string, *openEntry]   // by path, its current version
	hints   *simplelru.LRU[string, indexExtHint] // by path
}

// maxEntries bounds the paths an opener remembers.
const maxEntries = 4096

// indexExtHint is the index extension of one file version.
type indexExtHint struct {
	k   fileKey
	ext string
}

type openEntry struct {
	// Constant.
	k fileKey

	// Mutable: once makes the fields below, written inside once.Do
	// without o.mu; done is set once they are final, and the retry check
	// reads them only then.
	once     sync.Once
	done     atomic.Bool
	vbam     *engine.VirtualBAM
	src      *cram.CRAM
	segments int // of vbam's layout, counted once (Layout copies it)
	err      error
	when     time.Time
}

// failedRetry is how long a failure to open a file version is remembered
// before it is tried again.
const failedRetry = 30 * time.Second

func newOpener(mgr *engine.Manager, refs *reference.Store, copt cram.Options, log *slog.Logger) *opener {
	entries, _ := simplelru.NewLRU[string, *openEntry](maxEntries, nil) // only fails for a size <= 0
	hints, _ := simplelru.NewLRU[string, indexExtHint](maxEntries, nil)
	return &opener{mgr: mgr, refs: refs, copt: copt, log: log, entries: entries, hints: hints}
}

// OpenBAM implements fs.Opener: the CRAM is opened through ref.Root
// (ref.Open) and must be the version ref.Stat describes.
func (o *opener) OpenBAM(ctx context.Context, ref fs.CRAMRef) (fs.BAMFile, error) {
	k := keyOf(ref.Rel, &ref.Stat)
	o.mu.Lock()
	e, _ := o.entries.Get(k.rel)
	if e != nil && (e.k != k || e.done.Load() && (e.err != nil && time.Since(e.when) > failedRetry || e.vbam != nil && e.vbam.Stale())) {
		// An older version (open handles keep theirs), a failure to try
		// again, or a BAM whose layout was found wrong (see
		// engine.VirtualBAM.Stale): opened anew.
		e = nil
	}
	if e == nil {
		// An older version of the path is forgotten (open handles keep
		// theirs); its hint no longer matches the key asked.
		e = &openEntry{k: k}
		o.entries.Add(k.rel, e)
	}
	o.mu.Unlock()
	e.once.Do(func() { o.open(ctx, ref, k, e) })
	if e.err != nil && !versionFailure(e.err) {
		// Not a property of the version wanted: do not remember it.
		o.mu.Lock()
		if cur, _ := o.entries.Peek(k.rel); cur == e {
			o.entries.Remove(k.rel)
		}
		o.mu.Unlock()
	}
	if e.err != nil {
		o.reports.failed(k, e.err)
		return nil, e.err // names the file already
	}
	if o.reports != nil {
		return o.reports.opened(k, e.vbam, e.segments), nil
	}
	return e.vbam, nil
}

// versionFailure reports whether err, from opening a file version, is a
// property of that version (a broken CRAM), worth remembering for
// failedRetry, rather than a failure to reach it by its name: another
// version found there, a name or directory missing, swapped or not a
// regular file (as while a directory is swapped for a link in a loop), or
// changed while it was scanned, which the next lookup must try again.
func versionFailure(err error) bool {
	var pe *os.PathError
	return !errors.Is(err, fs.ErrChanged) && !errors.Is(err, source.ErrChanged) &&
		!errors.Is(err, cram.ErrNotRegular) && !errors.As(err, &pe)
}

// open fills e with the BAM of the version k of ref.
func (o *opener) open(ctx context.Context, ref fs.CRAMRef, k fileKey, e *openEntry) {
	defer e.done.Store(true)
	e.when = time.Now()
	name := filepath.Join(ref.Root.Name(), filepath.FromSlash(ref.Rel))
	e.src, e.err = cram.Open(name, ref, o.copt)
	if errors.Is(e.err, cram.ErrNotRegular) {
		// ref.Stat was a regular file: what is there now is another one.
		e.err = fmt.Errorf("%w: %w", fs.ErrChanged, e.err)
	}
	if e.err != nil {
		return
	}
	st, ok := e.src.Stat().Sys().(*syscall.Stat_t)
	if got := keyOf(ref.Rel, st); !ok || got != k {
		e.src.Close()
		e.err = fmt.Errorf("%s: %w: wanted inode %d of %d bytes (mtime %d, ctime %d), opened inode %d of %d bytes (mtime %d, ctime %d)",
			name, fs.ErrChanged, k.Ino, k.Size, k.MTime, k.CTime, got.Ino, got.Size, got.MTime, got.CTime)
		return
	}
	// The scan is not tied to one request's context: other readers may be
	// waiting for it too.
	e.vbam, e.err = o.mgr.Open(context.WithoutCancel(ctx), e.src)
	if e.err != nil {
		e.src.Close()
		return
	}
	// A superseded version stays open while an open handle still reads
	// it, and is closed once nothing refers to its BAM.
	runtime.AddCleanup(e.vbam, func(src *cram.CRAM) { src.Close() }, e.src)
	// From now on listings name the index the file has, or none (records
	// not sorted by coordinate).
	o.mu.Lock()
	o.hints.Add(k.rel, indexExtHint{k: k, ext: e.vbam.IndexExt()})
	o.mu.Unlock()
	layout := e.vbam.Layout()
	e.segments = len(layout.Segments)
	if o.onOpen != nil {
		o.onOpen(layout)
	}
}

// Close closes the CRAM files of the current versions; call it after the
// filesystem is unmounted.
func (o *opener) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.entries.Values() {
		if e.done.Load() && e.src != nil {
			e.src.Close()
		}
	}
	o.entries.Purge()
}

// KnownIndexExt implements fs.IndexKnower: the extension of the index of
// a file version opened before ("" for none), from memory only.
func (o *opener) KnownIndexExt(ref fs.CRAMRef) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	h, ok := o.hints.Get(ref.Rel)
	if !ok || h.k != keyOf(ref.Rel, &ref.Stat) {
		return "", false
	}
	return h.ext, true
}
