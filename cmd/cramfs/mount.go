package main

import (
	"fmt"
	"log/slog"
	"os"
	"os/user"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	cfs "github.com/cramfs/cramfs/fs"
	"github.com/cramfs/cramfs/internal/service"
	"github.com/cramfs/cramfs/internal/service/sdnotify"
)

// engineFlags are the options shared by mount, serve and index.
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
	fs.StringVar(&e.cacheSize, "cache-size", service.DefaultCacheSize, "memory budget, `SIZE` bytes (K, M, G suffixes), of the BGZF blocks kept, the builds in flight, the open files' state (up to an eighth) and the decoders (up to half)")
	fs.BoolVar(&e.sharedCache, "shared-cache", false, "trust layout indexes of --cache-dir written by other users of its group (see docs/trust.md)")
	registerThreads(fs, &e.threads)
	fs.IntVar(&e.level, "level", service.DefaultLevel, "BGZF compression `LEVEL` of the served BAM, 0 (stored blocks, fastest to read) to 9")
	fs.BoolVar(&e.noMD, "no-md", false, "do not generate MD and NM tags (htslib decode_md=0)")
	fs.IntVar(&e.readahead, "readahead", 0, "build `N` containers ahead of a sequential reader (0: chosen per file, -1: none)")
}

// options returns the service options the flags describe.
func (e *engineFlags) options(log *slog.Logger) (service.Options, error) {
	size, err := service.ParseSize(e.cacheSize)
	if err != nil {
		return service.Options{}, usageError{fmt.Sprintf("--cache-size: %v", err)}
	}
	if err := checkLevel(e.level); err != nil {
		return service.Options{}, err
	}
	return service.Options{References: e.refs, CacheDir: e.cacheDir, CacheSize: size, Threads: max(e.threads, 1),
		Level: e.level, NoMD: e.noMD, Readahead: e.readahead, SharedCache: e.sharedCache, Digests: e.digests, LimitMemory: true, Log: log}, nil
}

// checkLevel refuses a --level out of 0..9.
func checkLevel(level int) error {
	if level < 0 || level > 9 {
		return usageError{fmt.Sprintf("--level %d: want 0 to 9", level)}
	}
	return nil
}

// mountCmd is `cramfs mount`: it mounts SRC at MNT and serves it until
// unmounted or signalled (SIGINT, SIGTERM), in the foreground or, with
// --daemon, in the background once the mount answers. Started by systemd
// (Type=notify), it says READY=1 once mounted and STOPPING=1 when it
// unmounts. SIGHUP reopens the --log-file.
type mountCmd struct {
	ef           engineFlags
	lf           logFlags
	allowOther   bool
	uid, gid     string
	umask        string
	indexOnMount bool
	daemon       bool
	debug        bool
	memProfile   string
	cpuProfile   string
}

func (c *mountCmd) flags(fs *pflag.FlagSet) {
	c.ef.register(fs)
	fs.BoolVar(&c.allowOther, "allow-other", false, "let other users access the mount (needs user_allow_other in /etc/fuse.conf unless root)")
	fs.StringVar(&c.uid, "uid", "", "show every file as owned by `USER` (a number, or a name in /etc/passwd) instead of its owner in SRC")
	fs.StringVar(&c.gid, "gid", "", "show every file in `GROUP` (a number, or a name in /etc/group) instead of its group in SRC")
	fs.StringVar(&c.umask, "umask", "", "show modes 0555 (directories) and 0444 (files) minus `MASK` (octal, e.g. 027) instead of SRC's; with --uid/--gid this decides who reads what, not SRC (docs/trust.md)")
	fs.BoolVar(&c.indexOnMount, "index-on-mount", false, "scan every CRAM in the background at mount time")
	fs.BoolVar(&c.daemon, "daemon", false, "run in the background once the mount answers (exit 0), or exit 1 saying why it failed")
	c.lf.register(fs)
	fs.BoolVar(&c.debug, "debug", false, "log every FUSE request")
	fs.StringVar(&c.memProfile, "memprofile", "", "write a Go heap profile to this file at unmount")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the whole mount to this file")
	fs.MarkHidden("memprofile")
	fs.MarkHidden("cpuprofile")
}

func (c *mountCmd) run(pos []string, e *env) error {
	if len(pos) != 2 {
		return usageError{fmt.Sprintf("want SRC and MNT, got %d arguments", len(pos))}
	}
	ready := openReadyPipe()
	if c.daemon && ready == nil {
		if _, err := c.ef.options(nil); err != nil {
			return err // a wrong command line is said here, not by the mount
		}
		if _, err := c.mountOptions(); err != nil {
			return err
		}
		return startBackground(c.lf.file)
	}
	err := c.serve(pos[0], pos[1], e, ready)
	if err != nil && ready != nil {
		// The starter says it: this process's standard error may be
		// the same.
		ready.failed(strings.TrimPrefix(errorLine("mount", err), "cramfs mount: "))
		return reportedError{err}
	}
	return err
}

// serve mounts src at mnt and serves it until unmounted or signalled,
// telling ready (nil in the foreground) and systemd once it answers.
func (c *mountCmd) serve(src, mnt string, e *env, ready *readyPipe) error {
	sigs := catchHangups()
	defer sigs.release()
	plog, opts, err := openService(&c.lf, &c.ef, e.stderr)
	if err != nil {
		return err
	}
	defer plog.close()
	log := plog.log
	// One scheduler slot more than there are workers: a FUSE request that
	// arrives while every slot runs a decoding worker otherwise waits for
	// the Go scheduler to preempt one (up to 10 ms), and the reader with
	// it. GOMAXPROCS, when set, wins.
	if os.Getenv("GOMAXPROCS") == "" && runtime.GOMAXPROCS(0) < opts.Threads+1 {
		runtime.GOMAXPROCS(opts.Threads + 1)
	}
	if c.cpuProfile != "" {
		stop, err := startCPUProfile(c.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	svc, err := service.Open(opts)
	if err != nil {
		return err
	}
	defer svc.Close()
	mo, err := c.mountOptions()
	if err != nil {
		return err
	}
	sigs.catchStop()
	m, err := svc.Mount(src, mnt, mo)
	if err != nil {
		return err
	}
	log.Info("mounted", "src", absPath(src), "mnt", absPath(mnt), "threads", opts.Threads, "cache_size", c.ef.cacheSize, "level", opts.Level)
	ready.ready()
	notify(log, sdnotify.Ready)

	sig := sigs.wait(plog, m.Done())
	notify(log, sdnotify.Stopping)
	c.writeHeapProfile(log)
	if sig == nil {
		log.Info("unmounted", "mnt", absPath(mnt))
		return nil
	}
	log.Info("signal received, unmounting", "signal", sig.String(), "mnt", absPath(mnt))
	return m.Unmount()
}

// mountOptions are the service's options of the mount flags.
func (c *mountCmd) mountOptions() (service.MountOptions, error) {
	mo := service.MountOptions{AllowOther: c.allowOther, IndexOnMount: c.indexOnMount, Debug: c.debug}
	var err error
	if mo.UID, err = lookupID("--uid", c.uid, "/etc/passwd", user.Lookup, func(u *user.User) string { return u.Uid }); err != nil {
		return mo, err
	}
	if mo.GID, err = lookupID("--gid", c.gid, "/etc/group", user.LookupGroup, func(g *user.Group) string { return g.Gid }); err != nil {
		return mo, err
	}
	if c.umask != "" {
		m, err := strconv.ParseUint(c.umask, 8, 32)
		if err != nil || m > 0o777 {
			return mo, usageError{fmt.Sprintf("--umask %q: want an octal mask such as 027", c.umask)}
		}
		m32 := uint32(m)
		mo.Umask = &m32
	}
	return mo, nil
}

// lookupID is the id a --uid or --gid value names: a number, or a name
// looked up with find and read with id; nil for "". The binary is static
// (no C library, so no NSS): find reads names from db alone, and the error
// for a name it lacks says to give the number of one that only a
// directory service such as LDAP knows.
func lookupID[T any](flag, v, db string, find func(string) (*T, error), id func(*T) string) (*uint32, error) {
	if v == "" {
		return nil, nil
	}
	s := v
	if _, err := strconv.ParseUint(v, 10, 32); err != nil {
		found, err := find(v)
		if err != nil {
			return nil, usageError{fmt.Sprintf("%s %s: %v (names are read from %s; give a name known only to a directory service such as LDAP by its number)", flag, v, err, db)}
		}
		s = id(found)
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return nil, usageError{fmt.Sprintf("%s %s: not a number or a known name", flag, v)}
	}
	n32 := uint32(n)
	return &n32, nil
}

// notify tells systemd the mount's state, when systemd started it.
func notify(log *slog.Logger, state string) {
	if _, err := sdnotify.Notify(state); err != nil {
		log.Warn("systemd notification not sent", "state", state, "err", err)
	}
}

// startCPUProfile profiles the process into path until the returned
// function is called.
func startCPUProfile(path string) (func(), error) {
	pf, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(pf); err != nil {
		pf.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); pf.Close() }, nil
}

// unmountCmd is `cramfs unmount MNT`.
type unmountCmd struct{}

func (*unmountCmd) flags(*pflag.FlagSet) {}

func (*unmountCmd) run(pos []string, e *env) error {
	if len(pos) != 1 {
		return usageError{fmt.Sprintf("want one mount point, got %d arguments", len(pos))}
	}
	detached, err := cfs.UnmountOrDetach(pos[0])
	if detached {
		fmt.Fprintf(e.stderr, "cramfs unmount: %s was busy (files open on it): detached now; its cramfs process ends when the last of them is closed\n", pos[0])
	}
	return err
}

// writeHeapProfile writes the Go heap profile asked for by --memprofile.
func (c *mountCmd) writeHeapProfile(log *slog.Logger) {
	if c.memProfile == "" {
		return
	}
	f, err := os.Create(c.memProfile)
	if err != nil {
		log.Warn("heap profile", "err", err)
		return
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		log.Warn("heap profile", "err", err)
	}
}
