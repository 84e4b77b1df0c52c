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
// version of a file once and sharing it between all readers.
type opener struct {
	// dependencies
	mgr  *engine.Manager
	refs *reference.Store
	copt engine.CRAMOptions
	log  *slog.Logger
	// onOpen, when set, is told the layout of each file opened.
	onOpen func(engine.Layout)
	// states, when set, follows each file's state and reports reference
	// problems once per file.
	states *fileStates

	mu      sync.Mutex // guards entries and hints
	entries map[fileKey]*openEntry
	hints   map[fileKey]string // index extension per file version
}

type openEntry struct {
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
	return &opener{mgr: mgr, refs: refs, copt: copt, log: log, entries: map[fileKey]*openEntry{}, hints: map[fileKey]string{}}
}

// OpenBAM implements fs.Opener.
func (o *opener) OpenBAM(ctx context.Context, path string) (fs.BAMFile, error) {
	k, err := statKey(path)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	e := o.entries[k]
	if e != nil && e.done.Load() && e.err != nil && time.Since(e.when) > failedRetry {
		e = nil
	}
	if e == nil {
		e = &openEntry{}
		o.entries[k] = e
		// Drop older versions of the same path; open handles keep theirs.
		for old := range o.entries {
			if old.path == path && old != k {
				delete(o.entries, old)
			}
		}
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
		o.hints[k] = e.vbam.IndexExt()
		o.mu.Unlock()
		if o.onOpen != nil {
			o.onOpen(e.vbam.Layout())
		}
	})
	if e.err != nil {
		o.states.failed(k, e.err)
		return nil, e.err // names the file already
	}
	if o.states != nil {
		return o.states.opened(k, e.vbam), nil
	}
	return e.vbam, nil
}

// Close closes the CRAM files of the current versions; call it after the
// filesystem is unmounted.
func (o *opener) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for k, e := range o.entries {
		if e.done.Load() && e.src != nil {
			e.src.Close()
		}
		delete(o.entries, k)
	}
}

// indexAll opens every CRAM below root in the background, so their
// layouts are ready before a client asks.
func (o *opener) indexAll(ctx context.Context, paths []string) {
	for _, p := range paths {
		if ctx.Err() != nil {
			return
		}
		if _, err := o.OpenBAM(ctx, p); err != nil {
			if _, reported := referenceProblem(err); !reported {
				o.log.Warn("background index failed", "file", p, "err", err)
			}
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
	ext, ok := o.hints[k]
	o.mu.Unlock()
	if ok {
		return ext
	}
	ext = ".bai"
	if fh, err := os.Open(path); err == nil {
		if sh, err := decode.ReadHeader(path, fh, k.size); err == nil {
			for _, r := range sh.Refs {
				if r.Length > 1<<29 {
					ext = ".csi"
				}
			}
		}
		fh.Close()
	}
	o.mu.Lock()
	o.hints[k] = ext
	o.mu.Unlock()
	return ext
}
