package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine"
	cfs "github.com/cramfs/cramfs/fs"
	"github.com/spf13/pflag"
)

// engineFlags are the options shared by mount and index.
type engineFlags struct {
	refs      []string
	cacheDir  string
	cacheSize string
	threads   int
	level     int
	noMD      bool
	readahead int

	sharedCache bool
	digests     bool // index only: Options.Digests
}

func (e *engineFlags) register(fs *pflag.FlagSet) {
	registerRefs(fs, &e.refs)
	fs.StringVar(&e.cacheDir, "cache-dir", "", "keep the persisted layout indexes in `DIR` (default $XDG_CACHE_HOME/cramfs)")
	fs.StringVar(&e.cacheSize, "cache-size", "256M", "memory budget, `SIZE` bytes (K, M, G suffixes), of the BGZF blocks kept, the builds in flight, the open files' state (up to an eighth) and the decoders (up to half)")
	fs.BoolVar(&e.sharedCache, "shared-cache", false, "trust layout indexes of --cache-dir written by other users of its group (see docs/trust.md)")
	registerThreads(fs, &e.threads)
	fs.IntVar(&e.level, "level", 0, "BGZF compression `LEVEL` of the served BAM, 0 (stored blocks, fastest to read) to 9")
	fs.BoolVar(&e.noMD, "no-md", false, "do not generate MD and NM tags (htslib decode_md=0)")
	fs.IntVar(&e.readahead, "readahead", 0, "build `N` containers ahead of a sequential reader (0: chosen per file, -1: none)")
}

// open builds the reference store and engine manager the flags describe.
func (e *engineFlags) open(log *slog.Logger) (*reference.Store, *engine.Manager, engine.CRAMOptions, error) {
	size, err := parseSize(e.cacheSize)
	if err != nil {
		return nil, nil, engine.CRAMOptions{}, usageError{fmt.Sprintf("--cache-size: %v", err)}
	}
	level, err := engine.LevelOf(e.level)
	if err != nil {
		return nil, nil, engine.CRAMOptions{}, usageError{fmt.Sprintf("--level %d: want 0 to 9", e.level)}
	}
	store, err := reference.Open(e.refs, reference.Options{})
	if err != nil {
		return nil, nil, engine.CRAMOptions{}, err
	}
	if size == 0 {
		size = -1
	}
	mgr := engine.NewManager(engine.Options{Threads: e.threads, CacheSize: size, Level: level, CacheDir: e.cacheDir, SharedCache: e.sharedCache, Readahead: e.readahead, MaxOpenFiles: openFilesBound(log), Digests: e.digests}, log)
	// One set of decoders for every file: their memory follows the thread
	// count, not the number of files read.
	decoders := engine.NewDecoderPool(max(e.threads, 1))
	mgr.CountDecoders(decoders)
	// A container needing more memory than the budget allows is refused,
	// with the --cache-size that would allow it, rather than served beyond it.
	// Every file's state beyond a small constant is held in the manager's
	// bounded FileStates, its bytes counted against the cache.
	copt := engine.CRAMOptions{Reference: store, NoMD: e.noMD, Decoders: decoders, MaxContainerMemory: mgr.Options().ContainerMemory(), States: mgr.States()}
	return store, mgr, copt, nil
}

// openFilesBound raises the soft limit on open descriptors to the hard
// one and returns how many CRAM descriptors the engine may hold: half of
// the limit (the rest is for FUSE, the cache directory and files being
// opened), at most engine.DefaultMaxOpenFiles. A tree of more CRAMs than
// the limit then has its least recently used CRAMs closed, instead of
// failing lookups with EMFILE.
func openFilesBound(log *slog.Logger) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0 // the engine's default
	}
	if lim.Cur < lim.Max {
		raised := syscall.Rlimit{Cur: lim.Max, Max: lim.Max}
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err != nil {
			if log != nil {
				log.Warn("cannot raise the open file limit", "soft", lim.Cur, "hard", lim.Max, "err", err)
			}
		} else {
			lim = raised
		}
	}
	return int(max(min(lim.Cur/2, engine.DefaultMaxOpenFiles), 1))
}

// parseSize reads a byte count with an optional K, M, G or T suffix.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(strings.ToUpper(s))
	s = strings.TrimSuffix(strings.TrimSuffix(s, "IB"), "B")
	mult := int64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			s = s[:n-1]
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 || v > (1<<62)/mult {
		return 0, fmt.Errorf("%q is not a size", s)
	}
	return v * mult, nil
}

// mountCmd is `cramfs mount`: it mounts SRC at MNT and serves it until
// unmounted or signalled.
type mountCmd struct {
	ef           engineFlags
	allowOther   bool
	indexOnMount bool
	debug        bool
	memProfile   string
	cpuProfile   string
}

func (c *mountCmd) flags(fs *pflag.FlagSet) {
	c.ef.register(fs)
	fs.BoolVar(&c.allowOther, "allow-other", false, "let other users access the mount (needs user_allow_other in /etc/fuse.conf unless root)")
	fs.BoolVar(&c.indexOnMount, "index-on-mount", false, "scan every CRAM in the background at mount time")
	fs.BoolVar(&c.debug, "debug", false, "log every FUSE request")
	fs.StringVar(&c.memProfile, "memprofile", "", "write a Go heap profile to this file at unmount")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the whole mount to this file")
	fs.MarkHidden("memprofile")
	fs.MarkHidden("cpuprofile")
}

func (c *mountCmd) run(pos []string, e *env) error {
	ef, log := &c.ef, e.log
	allowOther, indexOnMount, debug, memProfile, cpuProfile := &c.allowOther, &c.indexOnMount, &c.debug, &c.memProfile, &c.cpuProfile
	if len(pos) != 2 {
		return usageError{fmt.Sprintf("want SRC and MNT, got %d arguments", len(pos))}
	}
	src, mnt := pos[0], pos[1]
	if *allowOther {
		if err := cfs.CheckAllowOther(); err != nil {
			return err
		}
	}
	// One scheduler slot more than there are workers: a FUSE request that
	// arrives while every slot runs a decoding worker otherwise waits for
	// the Go scheduler to preempt one (up to 10 ms), and the reader with
	// it. GOMAXPROCS, when set, wins.
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < ef.threads+1 {
		runtime.GOMAXPROCS(ef.threads + 1)
	}
	if *cpuProfile != "" {
		pf, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	store, mgr, copt, err := ef.open(log)
	if err != nil {
		return err
	}
	defer store.Close()
	defer mgr.Close()
	op := newOpener(mgr, store, copt, log)
	op.states = newFileStates(e.stderr, src)
	op.onOpen = newMemoryLimit(mgr.Options().CacheSize, mgr.Options().Threads, copt.Decoders).noteLayout
	defer op.Close()
	sock := statusSocket(ef.cacheDir, mnt)
	srv, err := cfs.Mount(src, mnt, op, cfs.Options{AllowOther: *allowOther, Logger: log, Debug: *debug,
		RootXattrs: map[string]string{statusXattr: sock}})
	if err != nil {
		return err
	}
	log.Info("mounted", "src", src, "mnt", mnt, "threads", ef.threads, "cache_size", ef.cacheSize, "level", ef.level)
	base := mountStatus{Src: src, Mnt: mnt, PID: os.Getpid(), Started: time.Now(), Threads: mgr.Options().Threads,
		Level: ef.level, CacheSize: mgr.Options().CacheSize}
	if ss, err := newStatusServer(sock, base, op.states, mgr, log, srv); err != nil {
		log.Warn("cramfs status will not answer for this mount", "err", err)
	} else {
		defer ss.Close()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if *indexOnMount {
		go op.indexAll(ctx, srv.Root())
	}
	done := make(chan struct{})
	go func() { srv.Wait(); close(done) }()
	select {
	case <-done:
		if *memProfile != "" {
			writeHeapProfile(*memProfile, log)
		}
		log.Info("unmounted", "mnt", mnt)
		return nil
	case <-ctx.Done():
	}
	if *memProfile != "" {
		writeHeapProfile(*memProfile, log)
	}
	log.Info("signal received, unmounting", "mnt", mnt)
	if err := srv.Unmount(); err != nil {
		// Busy: detach lazily so no stale mount is left behind.
		log.Warn("unmount failed, detaching lazily", "err", err)
		if err := cfs.Unmount(mnt); err != nil {
			return err
		}
	}
	<-done
	return nil
}

// unmountCmd is `cramfs unmount MNT`.
type unmountCmd struct{}

func (*unmountCmd) flags(*pflag.FlagSet) {}

func (*unmountCmd) run(pos []string, _ *env) error {
	if len(pos) != 1 {
		return usageError{fmt.Sprintf("want one mount point, got %d arguments", len(pos))}
	}
	return cfs.Unmount(pos[0])
}

// memoryLimit keeps the Go heap near the cache budget plus a constant
// (see limitBytes). Without a limit the collector lets the heap grow to
// twice the live data, which is mostly cache and decoder buffers, so RSS
// would be about twice the cache budget. GOMEMLIMIT, when set, wins.
type memoryLimit struct {
	// constant
	cacheSize int64
	threads   int
	decoders  *engine.DecoderPool

	mu     sync.Mutex // guards maxRaw and the limit set
	maxRaw int64      // largest segment's BAM bytes seen so far
}

func newMemoryLimit(cacheSize int64, threads int, decoders *engine.DecoderPool) *memoryLimit {
	m := &memoryLimit{cacheSize: max(cacheSize, 0), threads: threads, decoders: decoders}
	decoders.OnChange(m.apply)
	m.apply()
	return m
}

// noteLayout raises the limit for a file with larger containers.
func (m *memoryLimit) noteLayout(l engine.Layout) {
	var raw int64
	for _, s := range l.Segments {
		raw = max(raw, s.RawLen)
	}
	m.mu.Lock()
	grew := raw > m.maxRaw
	m.maxRaw = max(m.maxRaw, raw)
	m.mu.Unlock()
	if grew {
		m.apply()
	}
}

func (m *memoryLimit) apply() {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	total, counted := m.decoders.Footprint()
	debug.SetMemoryLimit(limitBytes(m.cacheSize, m.threads, m.maxRaw, total-counted))
}

// limitHeadroom is the Go memory a mount needs beyond its cache budget:
// the runtime and FUSE buffers, a free segment buffer kept for the next
// build, and room for the collector to work in; each worker adds
// workerHeadroom for its codecs' tables (tok3, bzip2, rANS, fqzcomp: up to
// about 20 MiB for CRAM 3.1 archive containers). What the limit does not
// cover (the binary's pages, reference pages being read: 7-10 MiB) keeps
// a two-worker mount's RSS within the cache budget plus 150 MiB.
const (
	limitHeadroom  = 96 << 20
	workerHeadroom = 20 << 20
)

// limitBytes is the Go memory limit of a mount: the cache budget, which
// covers the segments kept, the builds in flight and the decoders' buffers
// (up to half of it, see engine.Manager.CountDecoders), plus the headroom
// and the decoder memory the cache could not take. With no cache or a
// small one, the builds in flight (one container's BAM per worker, maxRaw
// bytes at most) take the cache's place. A limit below the live heap makes
// the collector run without pause, so every term is memory that is live.
func limitBytes(cacheSize int64, threads int, maxRaw, uncountedDecoders int64) int64 {
	return max(cacheSize, int64(threads)*maxRaw) + limitHeadroom + int64(threads)*workerHeadroom + max(uncountedDecoders, 0)
}

func writeHeapProfile(path string, log *slog.Logger) {
	f, err := os.Create(path)
	if err != nil {
		log.Warn("heap profile", "err", err)
		return
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		log.Warn("heap profile", "err", err)
	}
}
