// Package cram is the engine's CRAM source: a CRAM file (CRAMv3) read
// through one descriptor, its records decoded container by container
// (package decode) and encoded to BAM (package encode/bam), as a
// source.Source.
package cram

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"unsafe"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/encode/bam"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/engine/states"
	"github.com/cramfs/cramfs/internal/sizehint"
)

// Options configures how a CRAM file is read.
type Options struct {
	// Reference holds the FASTA files and REF_PATH/REF_CACHE lookups. It
	// may be nil for files that need no external reference.
	Reference *reference.Store
	// NoMD turns off MD/NM generation (htslib's decode_md=0).
	NoMD bool
	// AllowMissingEOF accepts a file without its EOF container.
	AllowMissingEOF bool
	// MaxContainerMemory, when positive, refuses to decode a container
	// needing more memory (decode.ErrTooLarge); engine.Options.ContainerMemory
	// is a Manager's. 0: no limit.
	MaxContainerMemory int64
	// States, when set, holds the state of every file opened with it
	// within its bounds; nil keeps each file's state until Close.
	States *states.FileStates
	// Decoders, when set, lends decoders to every file opened with it, so
	// that their buffers (about a container's worth of decoded data each)
	// are bounded by the pool's size rather than by the number of open
	// files. Nil gives the file a pool of its own.
	Decoders *DecoderPool
}

// ErrNotRegular is returned (wrapped, naming the file and what it is)
// when the file to open as a CRAM is not a regular file. FIFOs, sockets
// and devices are refused from the opened descriptor's fstat, before any
// read, so that opening one never blocks.
var ErrNotRegular = errors.New("not a regular file")

// File opens the file a CRAM reads: once when the CRAM is opened, and
// again each time the CRAM's state was dropped (its descriptor closed);
// the CRAM checks that each open gives the file first opened. It must not
// block on a FIFO or device (the CRAM refuses anything but a regular file
// from the descriptor's fstat). A mount's files are fs.CRAMRef, opened
// through the source tree's root; a user-given name is a Path.
type File interface {
	Open() (*os.File, error)
}

// Path is a CRAM named by a user (cramfs convert, cramfs index): links
// are followed.
type Path string

// pathOpenFlags open a Path: O_NONBLOCK makes the open of a FIFO or
// device return at once (it is then refused, see ErrNotRegular); it
// changes nothing for a regular file.
const pathOpenFlags = os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC

// Open implements File.
func (p Path) Open() (*os.File, error) { return os.OpenFile(string(p), pathOpenFlags, 0) }

// CRAM is a CRAM file as a source.Source. What it holds of the file (the
// descriptor, the parsed header, the container table, the reference
// lookups) is its state: kept in Options.States when set, which may
// drop it, and then rebuilt on demand by opening the file again the same
// way (its File), which must give the file first opened with the same
// header and container table (else source.ErrChanged).
type CRAM struct {
	// Dependencies, each safe for concurrent use.
	decoders *DecoderPool
	states   *states.FileStates // nil: the state lives as long as the CRAM

	// Constant after Open: where the file is, opened again the same way.
	file  File
	path  string // the name in messages
	opt   Options
	stat  os.FileInfo // fstat of the descriptor first opened: the version served
	shape uint64      // fileShape of the state first read
	n     int         // data containers
	// rawHint sizes the BAM buffers of AppendContainer (atomic inside).
	rawHint *sizehint.Hint

	// Mutable, guarded by mu (which also guards every state's users and
	// dropped).
	//
	// INVARIANT: st == nil || !st.dropped
	// INVARIANT: closed => st == nil
	mu     sync.Mutex
	st     *cramState // nil while dropped
	closed bool
}

// cramState is what a CRAM rebuilds after it was dropped.
type cramState struct {
	// Dependencies.
	c *CRAM

	// Constant once made (CRAM.load).
	file *os.File
	f    *decode.File
	dopt decode.DecoderOptions
	// rebuildOpt is dopt without the slice MD5 checks (source.BlockOptions.Rebuild).
	rebuildOpt decode.DecoderOptions
	rs         *refSource // nil without a reference store

	// Mutable.
	//
	// INVARIANT: users >= 0
	// INVARIANT: an entry of the FileStates is not dropped (under both
	//            locks)
	// INVARIANT (at rest): users == 0; an entry of the FileStates is c.st
	users   int             // readers of file; guarded by c.mu
	dropped bool            // file is closed once users is 0; guarded by c.mu
	res     states.Resident // guarded by the FileStates' lock
}

// Resident implements states.Entry.
func (st *cramState) Resident() *states.Resident { return &st.res }

// Drop implements states.Entry.
func (st *cramState) Drop() {
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st == st {
		c.st = nil
	}
	if st.dropped {
		return // dropped by Close and by its FileStates
	}
	st.dropped = true
	if st.users == 0 {
		st.file.Close()
	}
}

// Open opens the CRAM file f, which messages call name, and reads its
// header and container table. A file that is not regular is refused
// without blocking (ErrNotRegular); Stat gives the version opened.
func Open(name string, f File, opt Options) (*CRAM, error) {
	c := &CRAM{file: f, path: name, rawHint: newRawHint(), opt: opt, decoders: opt.Decoders, states: opt.States}
	if c.decoders == nil {
		c.decoders = NewDecoderPool(runtime.GOMAXPROCS(0))
	}
	st, err := c.load()
	if err != nil {
		return nil, err
	}
	c.stat, c.shape, c.n = st.stat, st.shape, len(st.f.Containers)
	c.st = &st.cramState
	if c.states != nil {
		c.states.Touch(c.st)
	}
	return c, nil
}

// openFile opens the file of c and returns it with its fstat; anything
// but a regular file is closed and refused.
func (c *CRAM) openFile() (*os.File, os.FileInfo, error) {
	fh, err := c.file.Open()
	if err != nil {
		return nil, nil, err
	}
	fi, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, nil, fmt.Errorf("%s: %w", c.path, err)
	}
	if !fi.Mode().IsRegular() {
		fh.Close()
		return nil, nil, fmt.Errorf("%s: %w: found a %s", c.path, ErrNotRegular, fileType(fi.Mode()))
	}
	return fh, fi, nil
}

// fileType names the type of a file mode for messages.
func fileType(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "FIFO"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeCharDevice != 0:
		return "character device"
	case m&os.ModeDevice != 0:
		return "block device"
	case m&os.ModeSymlink != 0:
		return "symbolic link"
	}
	return "file of mode " + m.String()
}

// Stat is the fstat of the descriptor opened: the version of the file
// that c serves, whatever its name points to now.
func (c *CRAM) Stat() os.FileInfo { return c.stat }

// Identity implements source.Source, from the descriptor the CRAM is
// read through (opened again, and checked to be the version first
// opened, if its state was dropped).
func (c *CRAM) Identity() (source.Identity, error) {
	st, err := c.acquire()
	if err != nil {
		return source.Identity{}, err
	}
	defer c.release(st)
	return source.FileIdentity(st.file)
}

// Variant implements source.Source: MD and NM tags are generated or not.
func (c *CRAM) Variant() string {
	if c.opt.NoMD {
		return "md=0"
	}
	return "md=1"
}

// loaded is a state with the version of the file it was read from.
type loaded struct {
	cramState
	stat  os.FileInfo
	shape uint64 // fileShape of cramState.f
}

// load opens the file and reads its state. Once the CRAM is open, the file
// must be the one first opened (device and inode), of the same size and
// mtime, with the same header and container table (fileShape). Its ctime
// is not compared: a chmod or a link added or removed moves it, and every
// build is checked by its content (a digest, a content sum) or, for a
// layout without content sums, by the file's identity, ctime included
// (see Manager.buildChecked).
func (c *CRAM) load() (*loaded, error) {
	fh, fi, err := c.openFile()
	if err != nil {
		return nil, err
	}
	if c.stat != nil && !sameBesidesCTime(fi, c.stat) {
		fh.Close()
		return nil, fmt.Errorf("%s: %w: opened again to read it after its descriptor was closed, it is %s, not the %s first opened", c.path, source.ErrChanged, describe(fi), describe(c.stat))
	}
	f, err := decode.Open(c.path, fh, fi.Size(), decode.OpenOptions{AllowMissingEOF: c.opt.AllowMissingEOF})
	if err != nil {
		fh.Close()
		return nil, err
	}
	shape := fileShape(f)
	if c.stat != nil && len(f.Containers) != c.n {
		fh.Close()
		return nil, fmt.Errorf("%s: %w: opened again with %d containers, %d first", c.path, source.ErrChanged, len(f.Containers), c.n)
	}
	if c.stat != nil && shape != c.shape {
		fh.Close()
		return nil, fmt.Errorf("%s: %w: opened again after its descriptor was closed, its header or container table differs from the one first read (%v now)", c.path, source.ErrChanged, describe(fi))
	}
	st := &loaded{cramState: cramState{c: c, file: fh, f: f}, stat: fi, shape: shape}
	st.dopt = decode.DecoderOptions{NoMD: c.opt.NoMD, MaxContainerMemory: c.opt.MaxContainerMemory, ContentSum: true}
	if c.opt.Reference != nil {
		st.rs = newRefSource(c.opt.Reference, f.Refs)
		st.dopt.Reference = st.rs
	}
	// A rebuild is checked by its digest: no content sum needed.
	st.rebuildOpt = st.dopt
	st.rebuildOpt.IgnoreMD5, st.rebuildOpt.ContentSum = true, false
	st.res = states.Resident{Bytes: stateBytes(f), File: true}
	return st, nil
}

// shapeSeed seeds fileShape, whose values are only compared within the
// process.
var shapeSeed = maphash.MakeSeed()

// fileShape fingerprints what decoding a container takes from f besides
// the container's data: the file definition, the SAM header (its text,
// references and read groups) and every container header (CRAMv3 §6-7).
// A build checked by its content sum (the data alone) decodes that data
// the way the scan did only while these are the same.
func fileShape(f *decode.File) uint64 {
	var h shapeHash
	h.SetSeed(shapeSeed)
	h.num(int64(f.Def.Major), int64(f.Def.Minor))
	h.Write(f.Def.FileID[:])
	h.bytes(f.HeaderText)
	h.num(int64(len(f.Refs)))
	for _, r := range f.Refs {
		h.str(r.Name)
		h.num(r.Length)
		h.str(r.M5)
		h.str(r.UR)
	}
	h.num(int64(len(f.ReadGroups)))
	for _, g := range f.ReadGroups {
		h.str(g)
	}
	eof := int64(0)
	if f.HasEOF {
		eof = 1
	}
	h.num(eof, int64(len(f.Containers)))
	for i := range f.Containers {
		c := &f.Containers[i]
		h.num(c.Offset, int64(c.HeaderSize), int64(c.Length), int64(c.RefSeqID), c.RefStart, c.AlignmentSpan,
			int64(c.NumRecords), c.RecordCounter, c.Bases, int64(c.NumBlocks), int64(len(c.Landmarks)))
		for _, l := range c.Landmarks {
			h.num(int64(l))
		}
	}
	return h.Sum64()
}

// shapeHash is the hash fileShape writes numbers and strings to, each
// string after its length.
type shapeHash struct {
	maphash.Hash
	b [8]byte
}

func (h *shapeHash) num(vs ...int64) {
	for _, v := range vs {
		binary.LittleEndian.PutUint64(h.b[:], uint64(v))
		h.Write(h.b[:])
	}
}

func (h *shapeHash) str(s string) {
	h.num(int64(len(s)))
	h.WriteString(s)
}

func (h *shapeHash) bytes(b []byte) {
	h.num(int64(len(b)))
	h.Write(b)
}

// stateBytes estimates the memory of f and its reference lookups.
func stateBytes(f *decode.File) int64 {
	n := int64(512 + len(f.HeaderText))
	ur := ""
	for _, r := range f.Refs {
		n += int64(len(r.Name)+len(r.M5)) + 112 // the RefSeq, its strings, refSource's slots
		if r.UR != ur {                         // equal neighbours share one string
			n += int64(len(r.UR))
			ur = r.UR
		}
	}
	for _, g := range f.ReadGroups {
		n += int64(len(g)) + 16
	}
	for _, h := range f.Containers {
		n += int64(unsafe.Sizeof(h)) + 4*int64(len(h.Landmarks))
	}
	return n
}

// acquire returns the CRAM's state, rebuilt if it was dropped, for use
// until release.
func (c *CRAM) acquire() (*cramState, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", c.path, os.ErrClosed)
	}
	st := c.st
	if st == nil {
		l, err := c.load()
		if err != nil {
			c.mu.Unlock()
			return nil, err
		}
		st = &l.cramState
		c.st = st
	}
	st.users++
	c.mu.Unlock()
	if c.states != nil {
		c.states.Touch(st)
	}
	return st, nil
}

// release ends a use of st begun by acquire.
func (c *CRAM) release(st *cramState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st.users--
	if st.users == 0 && st.dropped {
		st.file.Close()
	}
}

// Close releases the file. Later calls fail with os.ErrClosed.
func (c *CRAM) Close() error {
	c.mu.Lock()
	st := c.st
	c.closed, c.st = true, nil
	c.mu.Unlock()
	if st == nil {
		return nil
	}
	if c.states != nil {
		c.states.Remove(st)
	}
	st.Drop()
	return nil
}

// File is the decoded file structure (read again if it was dropped; nil
// if that fails).
func (c *CRAM) File() *decode.File {
	st, err := c.acquire()
	if err != nil {
		return nil
	}
	defer c.release(st)
	return st.f
}

// Name implements source.Source.
func (c *CRAM) Name() string { return c.path }

// Header implements source.Source: the uncompressed BAM header, built
// from the CRAM's SAM header and references.
func (c *CRAM) Header() ([]byte, error) {
	st, err := c.acquire()
	if err != nil {
		return nil, err
	}
	defer c.release(st)
	refs := make([]bam.Reference, len(st.f.Refs))
	for i, r := range st.f.Refs {
		refs[i] = bam.Reference{Name: r.Name, Length: r.Length}
		// Like htslib, a FASTA contig of the same name but another length
		// replaces the @SQ length in the binary header (not in the text).
		if st.rs != nil {
			if n := st.rs.Length(i); n >= 0 {
				refs[i].Length = n
			}
		}
	}
	return bam.AppendHeader(nil, st.f.HeaderText, refs), nil
}

// NumContainers implements source.Source.
func (c *CRAM) NumContainers() int { return c.n }

// ContainerOffset implements source.Source; -1 when the file cannot be read
// again.
func (c *CRAM) ContainerOffset(i int) int64 {
	st, err := c.acquire()
	if err != nil {
		return -1
	}
	defer c.release(st)
	return st.f.Containers[i].Offset
}

// EstimateContainer implements source.Estimator (see estimateBAM).
func (c *CRAM) EstimateContainer(i int) int64 {
	st, err := c.acquire()
	if err != nil {
		return 0
	}
	defer c.release(st)
	return estimateBAM(&st.f.Containers[i])
}

// ContainerSpan implements source.Spanner: the alignment span of the
// header of container i (CRAMv3 §8), when its records are on one
// reference.
func (c *CRAM) ContainerSpan(i int) (int64, bool) {
	st, err := c.acquire()
	if err != nil {
		return 0, false
	}
	defer c.release(st)
	h := &st.f.Containers[i]
	if h.RefSeqID < 0 || h.AlignmentSpan <= 0 {
		return 0, false
	}
	return h.AlignmentSpan, true
}

// newRawHint returns the hint of a CRAM's BAM buffers: real containers
// take 1.25 to 1.45 times their estimate (CIGARs and tags), so the first
// guess is twice it.
func newRawHint() *sizehint.Hint { return sizehint.New(2 * 256) }

// estimateBAM guesses the BAM bytes of the records of the container of
// header h: what their fixed fields, shortest names, bases and qualities
// take (CIGARs and tags come on top), from its record and base counts, at
// most 64 times the container's bytes in the file.
func estimateBAM(h *decode.ContainerHeader) int64 {
	const most = 1 << 40 // keeps the arithmetic below from overflowing
	recs := min(max(int64(h.NumRecords), 0), most)
	bases := min(max(h.Bases, 0), most)
	est := recs*(4+32+2) + bases + (bases+1)/2
	return min(est, 64*(int64(h.HeaderSize)+int64(h.Length)))
}

// AppendContainer implements source.Source.
func (c *CRAM) AppendContainer(ctx context.Context, i int, dst []byte) ([]byte, error) {
	dst, _, err := c.appendContainer(ctx, i, false, dst, nil, source.BlockOptions{})
	return dst, err
}

// AppendContainerBlocks implements source.BlockAppender. A Rebuild does
// not compute the slice reference MD5s again (3-4% of a build's CPU), nor
// the content sum.
func (c *CRAM) AppendContainerBlocks(ctx context.Context, i int, comp *bgzf.Compressor, dst []byte, opt source.BlockOptions) ([]byte, source.Blocks, error) {
	start := len(dst)
	buf, sum, err := c.appendContainer(ctx, i, opt.Rebuild, comp.Begin(dst), comp, opt)
	if err == nil {
		var raw int64
		if dst, raw, err = comp.End(buf); err == nil {
			return dst, source.Blocks{Raw: raw, Sum: sum}, nil
		}
		err = fmt.Errorf("%s: container at byte %d: BGZF: %w", c.path, c.ContainerOffset(i), err)
	}
	return dst[:start], source.Blocks{}, err
}

// appendContainer appends the BAM records of container i to dst, with the
// slice MD5 checks unless rebuild, and returns them with the container's
// content sum (none when rebuild). When comp is not nil, dst is the buffer
// of a run of comp's blocks: each record is reported to bo.Each (if set)
// and full blocks are cut after it. With bo.Helpers, the blocks of each
// slice are decompressed on an idle worker too, when one is lent.
func (c *CRAM) appendContainer(ctx context.Context, i int, rebuild bool, dst []byte, comp *bgzf.Compressor, bo source.BlockOptions) ([]byte, source.Sum, error) {
	each := bo.Each
	if err := ctx.Err(); err != nil {
		return dst, source.Sum{}, err
	}
	st, err := c.acquire()
	if err != nil {
		return dst, source.Sum{}, err
	}
	defer c.release(st)
	opt := st.dopt
	if rebuild {
		opt = st.rebuildOpt
	}
	pd := c.decoders.get(st.f, opt)
	defer c.decoders.put(pd)
	off := st.f.Containers[i].Offset
	var est int64
	start := len(dst)
	if comp == nil {
		// dst is the BAM buffer: give it its size before the records.
		est = estimateBAM(&st.f.Containers[i])
		if n := c.rawHint.Size(est); int64(cap(dst)-start) < n {
			dst = slices.Grow(dst, int(n))
		}
	}
	var run decode.BlockRunner
	if bo.Helpers != nil {
		pd.run.helpers = bo.Helpers
		defer pd.dropHelpers()
		run = &pd.run
	}
	err = pd.d.ContainerFuncWith(i, run, func(j int, r *decode.Record) error {
		at := len(dst)
		var err error
		if dst, err = bam.AppendRecord(dst, r); err != nil {
			return fmt.Errorf("%s: container at byte %d: record %d (%s): %w", c.path, off, j, r.Name, err)
		}
		if comp == nil {
			return nil
		}
		if each != nil {
			end := comp.Pos(dst)
			if err := each(dst[at:], end-int64(len(dst)-at), end); err != nil {
				return err
			}
		}
		if dst, err = comp.Cut(dst); err != nil {
			return fmt.Errorf("%s: container at byte %d: BGZF: %w", c.path, off, err)
		}
		return nil
	})
	if err == nil && comp == nil {
		c.rawHint.Observe(est, int64(len(dst)-start))
	}
	return dst, source.Sum{CRC: pd.d.ContentSum(), OK: !rebuild}, err
}
