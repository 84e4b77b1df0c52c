package main

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine"
	"github.com/cramfs/cramfs/fs"
)

// fileKey identifies one version of a CRAM file: a replaced file (new
// inode, size or mtime) is a different key, so bytes never mix.
type fileKey struct {
	path      string
	dev, ino  uint64
	size      int64
	mtimeNsec int64
}

func statKey(path string) (fileKey, error) {
	st, err := os.Stat(path)
	if err != nil {
		return fileKey{}, err
	}
	k := fileKey{path: path, size: st.Size(), mtimeNsec: st.ModTime().UnixNano()}
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		k.dev, k.ino = uint64(s.Dev), s.Ino
	}
	return k, nil
}

// opener gives the FUSE layer the virtual BAM of each CRAM, opening each
// version of a file once and sharing it between all readers. It remembers
// the current version of up to maxEntries paths (and the index extension
// of as many): a path forgotten is opened again, its layout read back
// from the cache directory.
type opener struct {
	// dependencies
	mgr  *engine.Manager
	refs *reference.Store
	copt engine.CRAMOptions
	log  *slog.Logger
	// onOpen, when set, is told the layout of each file opened.
	onOpen func(engine.Layout)

	mu      sync.Mutex                           // guards entries and hints
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
	k    fileKey
	once sync.Once
	// done is set once the fields below are final; the retry check reads
	// them only then (they are written inside once.Do without o.mu).
	done atomic.Bool
	vbam *engine.VirtualBAM
	src  *engine.CRAM
	err  error
	when time.Time
}

// failedRetry is how long a failure to open a file version is remembered
// before it is tried again.
const failedRetry = 30 * time.Second

func newOpener(mgr *engine.Manager, refs *reference.Store, copt engine.CRAMOptions, log *slog.Logger) *opener {
	entries, _ := simplelru.NewLRU[string, *openEntry](maxEntries, nil) // only fails for a size <= 0
	hints, _ := simplelru.NewLRU[string, indexExtHint](maxEntries, nil)
	return &opener{mgr: mgr, refs: refs, copt: copt, log: log, entries: entries, hints: hints}
}

// OpenBAM implements fs.Opener.
func (o *opener) OpenBAM(ctx context.Context, path string) (fs.BAMFile, error) {
	k, err := statKey(path)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	e, _ := o.entries.Get(path)
	if e != nil && (e.k != k || e.done.Load() && e.err != nil && time.Since(e.when) > failedRetry) {
		e = nil // an older version (open handles keep theirs), or a failure to retry
	}
	if e == nil {
		e = &openEntry{k: k}
		o.entries.Add(path, e)
	}
	o.mu.Unlock()
	e.once.Do(func() {
		defer e.done.Store(true)
		e.when = time.Now()
		e.src, e.err = engine.OpenCRAM(path, o.copt)
		if e.err != nil {
			return
		}
		// The scan is not tied to one request's context: other readers may
		// be waiting for it too.
		e.vbam, e.err = o.mgr.Open(context.WithoutCancel(ctx), e.src)
		if e.err != nil {
			e.src.Close()
			return
		}
		// A superseded version stays open while a node or handle still
		// reads it, and is closed once nothing refers to its BAM.
		runtime.AddCleanup(e.vbam, func(src *engine.CRAM) { src.Close() }, e.src)
		// From now on listings name the index the file has, or none
		// (records not sorted by coordinate).
		o.mu.Lock()
		o.hints.Add(path, indexExtHint{k: k, ext: e.vbam.IndexExt()})
		o.mu.Unlock()
		if o.onOpen != nil {
			o.onOpen(e.vbam.Layout())
		}
	})
	if e.err != nil {
		return nil, e.err // names the file already
	}
	return e.vbam, nil
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

// indexAll opens every CRAM below root in the background, so their
// layouts are ready before a client asks.
func (o *opener) indexAll(ctx context.Context, paths []string) {
	for _, p := range paths {
		if ctx.Err() != nil {
			return
		}
		if _, err := o.OpenBAM(ctx, p); err != nil {
			o.log.Warn("background index failed", "file", p, "err", err)
		}
	}
}

// IndexExtHint implements fs.IndexExtHinter: once the file version was
// opened, the extension of the index it has ("" for none); before that,
// ".csi" when a reference of the CRAM's header is longer than a BAI can
// address, else ".bai", from the SAM header alone.
func (o *opener) IndexExtHint(path string) string {
	k, err := statKey(path)
	if err != nil {
		return ".bai"
	}
	o.mu.Lock()
	h, ok := o.hints.Get(path)
	o.mu.Unlock()
	if ok && h.k == k {
		return h.ext
	}
	ext := ".bai"
	if fh, err := os.Open(path); err == nil {
		// Only the LN fields: a listing of thousands of CRAMs with
		// GRCh38 headers spent a third of its time parsing them whole.
		if n, err := decode.ReadMaxRefLength(path, fh, k.size); err == nil && n > 1<<29 {
			ext = ".csi"
		}
		fh.Close()
	}
	o.mu.Lock()
	o.hints.Add(path, indexExtHint{k: k, ext: ext})
	o.mu.Unlock()
	return ext
}
