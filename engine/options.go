package engine

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
)

// ErrMismatch is returned when a segment rebuilt on demand does not match
// the layout recorded by the scan (length, raw length or segmentDigest of
// its BGZF blocks, or the content sum of a measured segment's container
// while the file's identity is unchanged), and by a VirtualBAM whose
// layout was found so and is no longer held (VirtualBAM.Stale). The bytes
// are never served.
var ErrMismatch = errors.New("engine: rebuilt segment does not match layout")

// ErrInvalid is returned for malformed input: a source.Source whose
// records are not well-framed BAM.
var ErrInvalid = errors.New("engine: invalid data")

// DefaultCacheSize is the block cache bound used when Options.CacheSize is 0.
const DefaultCacheSize = 256 << 20

// Options configure a Manager. The zero value selects the defaults.
type Options struct {
	// Threads bounds how many containers are decoded and compressed at
	// once, across all files. 0 means runtime.GOMAXPROCS(0).
	Threads int
	// CacheSize bounds, in bytes, the BGZF data kept in memory across all
	// files. 0 means DefaultCacheSize; negative means no cache.
	CacheSize int64
	// Level is the compression of the served BGZF blocks (DefaultLevel:
	// deflate level 1).
	Level Level
	// CacheDir holds the persisted layout indexes. "" means
	// $XDG_CACHE_HOME/cramfs, or ~/.cache/cramfs.
	CacheDir string
	// SharedCache trusts layout indexes in CacheDir written by other
	// users: a cluster cache of a group, filled by `cramfs index` jobs.
	// Without it, the directory and each index file must be owned by
	// this user or root and not be writable by group or others; with it,
	// any owner and group write are accepted (never write by others), and
	// the device number leaves the file identity (NFS clients number
	// devices differently).
	SharedCache bool
	// MaxOpenFiles bounds the CRAM descriptors held open by the CRAMs
	// sharing the Manager's States; the least recently used are closed and
	// opened again on demand. 0 means DefaultMaxOpenFiles.
	MaxOpenFiles int
	// Readahead is how many segments are built ahead of a sequential
	// reader. 0 chooses per file: as many as fit in a quarter of the
	// cache, at least Threads and at most 4×Threads (with only Threads
	// ahead, a reader that consumes faster than the workers build left
	// one of two workers idle half of the time); negative disables
	// readahead.
	Readahead int
	// Digests makes the layout scan at level 0 build every container, as
	// at the other levels, so that each segment's digest is known from
	// the start (its first build may then skip the reference MD5 checks).
	// Without it a level-0 scan of a source.LayoutScanner only measures the
	// records, and each segment's digest is learned at its first build.
	Digests bool
}

// DefaultMaxOpenFiles is the bound on CRAM descriptors when
// Options.MaxOpenFiles is 0.
const DefaultMaxOpenFiles = 512

// minStateBytes is the least memory the per-file state of open files may
// take (see stateBytes).
const minStateBytes = 8 << 20

// stateBytes bounds the per-file state of open files (states.FileStates): an
// eighth of the cache, in which it is counted, and at least minStateBytes.
func (o Options) stateBytes() int64 {
	return max(o.CacheSize/8, minStateBytes)
}

// withDefaults resolves the zero values of o.
func (o Options) withDefaults() Options {
	if o.Threads <= 0 {
		o.Threads = runtime.GOMAXPROCS(0)
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	} else if o.CacheSize < 0 {
		o.CacheSize = 0
	}
	if o.Level == DefaultLevel {
		o.Level = Level(DefaultLevel.Deflate())
	}
	if o.Readahead < 0 {
		o.Readahead = -1
	}
	if o.MaxOpenFiles <= 0 {
		o.MaxOpenFiles = DefaultMaxOpenFiles
	}
	if o.CacheDir == "" {
		o.CacheDir = defaultCacheDir()
	}
	return o
}

// defaultCacheDir follows the XDG base directory convention.
func defaultCacheDir() string {
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "cramfs")
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		return filepath.Join(h, ".cache", "cramfs")
	}
	return filepath.Join(os.TempDir(), "cramfs-cache")
}

// MinContainerMemory is the memory a container may always take to decode,
// whatever the cache size: the 100,000-read containers of CRAM 3.1's
// archive profile need about 70 MiB.
const MinContainerMemory = 128 << 20

// ContainerMemory is the most memory one container may need to decode (its
// bytes, its blocks decoded and its records): its worker's share of half
// the cache, the part the decoders may take (see Manager.CountDecoders),
// and at least MinContainerMemory. A CRAM opened with it as
// cram.Options.MaxContainerMemory refuses larger containers, so that a
// mount's memory stays within max(CacheSize, 2*Threads*MinContainerMemory)
// and its headroom.
func (o Options) ContainerMemory() int64 {
	o = o.withDefaults()
	return max(o.CacheSize/int64(2*o.Threads), MinContainerMemory)
}

// cacheSizeFor returns the smallest cache size whose ContainerMemory is at
// least need.
func (o Options) cacheSizeFor(need int64) int64 {
	o = o.withDefaults()
	return need * int64(2*o.Threads)
}

// readahead resolves Options.Readahead for a file whose largest segment
// holds maxSeg bytes.
func (o Options) readahead(maxSeg int64) int {
	switch {
	case o.Readahead > 0:
		return o.Readahead
	case o.Readahead < 0:
		return 0
	}
	n := o.Threads
	if maxSeg > 0 {
		n = int(min(int64(4*o.Threads), o.CacheSize/4/maxSeg))
	}
	return max(n, o.Threads)
}

// DefaultCacheDir is the CacheDir used when Options.CacheDir is "".
func DefaultCacheDir() string { return defaultCacheDir() }
