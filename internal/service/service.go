// Package service builds the cramfs service from options: the reference
// store, the engine (scheduler, block cache, layout store, decoders) and
// its memory limit, and on top of them what the front ends serve: a FUSE
// mount of a source tree (Mount), the layouts prepared ahead (Index) and
// a file converted whole (Convert), with the per-file states and
// reference notices and the status socket of a mount. The command (cmd/
// cramfs) only parses flags and wires this package to the process:
// signals, terminals, profiles, exit codes.
package service

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"syscall"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/engine/layout"
)

// Options configure a Service. Every field means what it says at its zero
// value: no references, no cache, the default cache directory.
type Options struct {
	// References are FASTA files (samtools -T); a CRAM's reference is
	// also found through its @SQ UR: fields, REF_CACHE and REF_PATH.
	References []string
	// CacheDir holds the persisted layout indexes; "" is the default
	// ($XDG_CACHE_HOME/cramfs, else ~/.cache/cramfs).
	CacheDir string
	// CacheSize is the memory budget in bytes (see docs/memory.md); 0
	// keeps no built segment between reads.
	CacheSize int64
	// Threads is the number of decoding workers, at least 1.
	Threads int
	// Level is the BGZF compression level of the served BAM, 0 to 9.
	Level int
	// NoMD leaves out the MD and NM tags (htslib decode_md=0).
	NoMD bool
	// Readahead is the containers built ahead of a sequential reader: 0
	// chooses per file, -1 none.
	Readahead int
	// SharedCache trusts indexes of CacheDir written by other users of
	// its group (docs/trust.md).
	SharedCache bool
	// Digests makes level-0 scans build every container to record its
	// digest (cramfs index --digests).
	Digests bool
	// LimitMemory keeps the process's Go memory limit near the budget
	// (see memoryLimit), for a process that runs this one service;
	// GOMEMLIMIT, when set, wins.
	LimitMemory bool
	// Log receives the service's log lines; nil discards them.
	Log *slog.Logger
}

// Defaults of the front ends' options: the memory budget as users write
// it (ParseSize reads it), and the BGZF level served.
const (
	DefaultCacheSize = "256M"
	DefaultLevel     = 0
)

// OptionError is an option with a value the service cannot use: a mistake
// of the command line, which front ends report as such.
type OptionError struct {
	Option string // the option's name, as in Options
	Msg    string
}

func (e *OptionError) Error() string { return e.Option + ": " + e.Msg }

// Service is an open reference store and engine, shared by every file it
// serves. It is safe for concurrent use.
type Service struct {
	// Constant after Open.
	opts  Options
	log   *slog.Logger
	refs  *reference.Store
	mgr   *engine.Manager
	copt  cram.Options
	limit *memoryLimit // nil without Options.LimitMemory
}

// Open builds the service opts describe. Close it when done.
func Open(opts Options) (*Service, error) {
	level, err := opts.check()
	if err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	refs, err := reference.Open(opts.References, reference.Options{})
	if err != nil {
		return nil, err
	}
	return newService(opts, level, refs, openFilesBound(opts.Log)), nil
}

// check refuses options the service cannot use and returns the level.
func (o Options) check() (engine.Level, error) {
	if o.Threads < 1 {
		return 0, &OptionError{"Threads", fmt.Sprintf("%d: want at least 1", o.Threads)}
	}
	if o.CacheSize < 0 {
		return 0, &OptionError{"CacheSize", fmt.Sprintf("%d: want 0 or more bytes", o.CacheSize)}
	}
	level, err := engine.LevelOf(o.Level)
	if err != nil {
		return 0, &OptionError{"Level", fmt.Sprintf("%d: want 0 to 9", o.Level)}
	}
	return level, nil
}

// newService builds the engine of opts (checked, with a logger) over the
// reference store refs, holding at most maxOpenFiles CRAM descriptors.
func newService(opts Options, level engine.Level, refs *reference.Store, maxOpenFiles int) *Service {
	size := opts.CacheSize
	if size == 0 {
		size = -1 // the engine's "no cache"
	}
	mgr := engine.NewManager(engine.Options{Threads: opts.Threads, CacheSize: size, Level: level, CacheDir: opts.CacheDir,
		SharedCache: opts.SharedCache, Readahead: opts.Readahead, MaxOpenFiles: maxOpenFiles, Digests: opts.Digests}, opts.Log)
	// One set of decoders for every file: their memory follows the thread
	// count, not the number of files read.
	decoders := cram.NewDecoderPool(opts.Threads)
	mgr.CountDecoders(decoders)
	// A container needing more memory than the budget allows is refused,
	// with the --cache-size that would allow it, rather than served beyond it.
	// Every file's state beyond a small constant is held in the manager's
	// bounded FileStates, its bytes counted against the cache.
	copt := cram.Options{Reference: refs, NoMD: opts.NoMD, Decoders: decoders,
		MaxContainerMemory: mgr.Options().ContainerMemory(), States: mgr.States()}
	s := &Service{opts: opts, log: opts.Log, refs: refs, mgr: mgr, copt: copt}
	if opts.LimitMemory {
		s.limit = newMemoryLimit(mgr.Options().CacheSize, mgr.Options().Threads, decoders)
	}
	return s
}

// noteLayout tells the memory limit, if any, of a file's layout.
func (s *Service) noteLayout(l layout.Layout) {
	if s.limit != nil {
		s.limit.noteLayout(l)
	}
}

// Close closes the engine and the reference store; nothing it opened may
// be read after.
func (s *Service) Close() {
	s.mgr.Close()
	s.refs.Close()
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

// ParseSize reads a byte count with an optional K, M, G or T suffix.
func ParseSize(s string) (int64, error) {
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
