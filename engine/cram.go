package engine

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/encode/bam"
	"github.com/cramfs/cramfs/encode/bgzf"
)

// CRAMOptions configures how a CRAM file is read.
type CRAMOptions struct {
	// Reference holds the FASTA files and REF_PATH/REF_CACHE lookups. It
	// may be nil for files that need no external reference.
	Reference *reference.Store
	// NoMD turns off MD/NM generation (htslib's decode_md=0).
	NoMD bool
	// AllowMissingEOF accepts a file without its EOF container.
	AllowMissingEOF bool
	// MaxContainerMemory, when positive, refuses to decode a container
	// needing more memory (decode.ErrTooLarge); Options.ContainerMemory is
	// a Manager's. 0: no limit.
	MaxContainerMemory int64
	// Decoders, when set, lends decoders to every file opened with it, so
	// that their buffers (about a container's worth of decoded data each)
	// are bounded by the pool's size rather than by the number of open
	// files. Nil gives the file a pool of its own.
	Decoders *DecoderPool
}

// DecoderPool keeps up to a fixed number of idle decoders, with their
// grown buffers, for reuse by any file. It is safe for concurrent use.
// Unlike a sync.Pool it is not emptied by garbage collection, so a heap
// kept tight by a memory limit does not rebuild the buffers from zero
// after every collection.
//
// A decoder holds about a container's worth of decoded data (65 MiB for
// the 100,000-read containers of CRAM 3.1's archive profile), so the pool
// keeps count of its decoders' memory and, once given a budget (see
// Manager.CountDecoders), counts it against that budget.
type DecoderPool struct {
	free chan *pooledDecoder

	mu       sync.Mutex // guards the fields below
	total    int64      // footprint of every decoder made and not dropped
	counted  int64      // the part of total reserved in budget
	budget   reserver   // nil: nothing counted
	maxCount int64      // most of total reserved in budget
	onChange func()
}

// reserver is a byte budget (a cache.Cache) that storage is counted against.
type reserver interface {
	Reserve(n int64)
	Unreserve(n int64)
}

// pooledDecoder is a decoder with the footprint last counted for it.
type pooledDecoder struct {
	d  *decode.Decoder
	fp int64
}

// NewDecoderPool returns a pool keeping at most n idle decoders (at least
// one).
func NewDecoderPool(n int) *DecoderPool {
	return &DecoderPool{free: make(chan *pooledDecoder, max(n, 1))}
}

// Footprint returns the bytes held by the decoders the pool made (lent
// or idle), as of their last return, and how many of them are counted
// against the pool's budget.
func (p *DecoderPool) Footprint() (total, counted int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total, p.counted
}

// OnChange sets f to be called, outside the pool's lock, whenever the
// Footprint changes. Calls may overlap; f should read Footprint itself.
func (p *DecoderPool) OnChange(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onChange = f
}

// count makes the pool's decoders count against b, up to maxBytes.
func (p *DecoderPool) count(b reserver, maxBytes int64) {
	p.mu.Lock()
	p.budget, p.maxCount = b, max(maxBytes, 0)
	f := p.settle()
	p.mu.Unlock()
	if f != nil {
		f()
	}
}

// settle brings the reservation in the budget in line with total, under
// p.mu, and returns the change callback to run.
func (p *DecoderPool) settle() func() {
	want := int64(0)
	if p.budget != nil {
		want = min(p.total, p.maxCount)
	}
	switch {
	case want > p.counted:
		p.budget.Reserve(want - p.counted)
	case want < p.counted:
		p.budget.Unreserve(p.counted - want)
	}
	p.counted = want
	return p.onChange
}

// get returns a decoder for f, reused if one is idle.
func (p *DecoderPool) get(f *decode.File, opt decode.DecoderOptions) *pooledDecoder {
	select {
	case d := <-p.free:
		d.d.Reset(f, opt)
		return d
	default:
		return &pooledDecoder{d: f.NewDecoder(opt)}
	}
}

// put keeps d for reuse, or leaves it to the collector when the pool is
// full, and accounts for the memory it now holds.
func (p *DecoderPool) put(d *pooledDecoder) {
	d.d.Reset(nil, decode.DecoderOptions{}) // drop the file and reference
	fp := d.d.Footprint()
	p.mu.Lock()
	// d's count changes before another caller can take it from free.
	old := d.fp
	d.fp = fp
	select {
	case p.free <- d:
	default:
		fp = 0 // dropped: left to the collector
	}
	if fp == old {
		p.mu.Unlock()
		return
	}
	p.total += fp - old
	f := p.settle()
	p.mu.Unlock()
	if f != nil {
		f()
	}
}

// CRAM is a CRAM file as an engine Source.
type CRAM struct {
	// constant after OpenCRAM
	path   string
	file   *os.File
	f      *decode.File
	header []byte
	dopt   decode.DecoderOptions
	// rebuildOpt is dopt without the slice MD5 checks (Rebuilder).
	rebuildOpt decode.DecoderOptions
	// dependency
	decoders *DecoderPool
}

// OpenCRAM opens a CRAM file and reads its header and container table.
func OpenCRAM(path string, opt CRAMOptions) (*CRAM, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	f, err := decode.Open(path, fh, st.Size(), decode.OpenOptions{AllowMissingEOF: opt.AllowMissingEOF})
	if err != nil {
		fh.Close()
		return nil, err
	}
	c := &CRAM{path: path, file: fh, f: f, decoders: opt.Decoders}
	if c.decoders == nil {
		c.decoders = NewDecoderPool(runtime.GOMAXPROCS(0))
	}
	c.dopt = decode.DecoderOptions{NoMD: opt.NoMD, MaxContainerMemory: opt.MaxContainerMemory}
	var rs *refSource
	if opt.Reference != nil {
		rs = newRefSource(opt.Reference, f.Refs)
		c.dopt.Reference = rs
	}
	c.rebuildOpt = c.dopt
	c.rebuildOpt.IgnoreMD5 = true
	refs := make([]bam.Reference, len(f.Refs))
	for i, r := range f.Refs {
		refs[i] = bam.Reference{Name: r.Name, Length: r.Length}
		// Like htslib, a FASTA contig of the same name but another length
		// replaces the @SQ length in the binary header (not in the text).
		if rs != nil {
			if n := rs.Length(i); n >= 0 {
				refs[i].Length = n
			}
		}
	}
	c.header = bam.AppendHeader(nil, f.HeaderText, refs)
	return c, nil
}

// Close releases the file.
func (c *CRAM) Close() error { return c.file.Close() }

// File is the decoded file structure.
func (c *CRAM) File() *decode.File { return c.f }

// Name implements Source.
func (c *CRAM) Name() string { return c.path }

// Header implements Source.
func (c *CRAM) Header() []byte { return c.header }

// NumContainers implements Source.
func (c *CRAM) NumContainers() int { return len(c.f.Containers) }

// ContainerOffset implements Source.
func (c *CRAM) ContainerOffset(i int) int64 { return c.f.Containers[i].Offset }

// AppendContainer implements Source.
func (c *CRAM) AppendContainer(ctx context.Context, i int, dst []byte) ([]byte, error) {
	return c.appendContainer(ctx, i, &c.dopt, dst, nil, nil)
}

// AppendContainerBlocks implements BlockAppender.
func (c *CRAM) AppendContainerBlocks(ctx context.Context, i int, comp *bgzf.Compressor, dst []byte, each func(rec []byte, start, end int64) error) ([]byte, int64, error) {
	return c.appendContainerBlocks(ctx, i, &c.dopt, comp, dst, each)
}

// RebuildContainerBlocks implements Rebuilder: the slice reference MD5s
// are not computed again (3-4% of a build's CPU).
func (c *CRAM) RebuildContainerBlocks(ctx context.Context, i int, comp *bgzf.Compressor, dst []byte) ([]byte, int64, error) {
	return c.appendContainerBlocks(ctx, i, &c.rebuildOpt, comp, dst, nil)
}

func (c *CRAM) appendContainerBlocks(ctx context.Context, i int, opt *decode.DecoderOptions, comp *bgzf.Compressor, dst []byte, each func(rec []byte, start, end int64) error) ([]byte, int64, error) {
	start := len(dst)
	buf, err := c.appendContainer(ctx, i, opt, comp.Begin(dst), comp, each)
	if err == nil {
		var raw int64
		if dst, raw, err = comp.End(buf); err == nil {
			return dst, raw, nil
		}
		err = fmt.Errorf("%s: container at byte %d: BGZF: %w", c.path, c.f.Containers[i].Offset, err)
	}
	return dst[:start], 0, err
}

// appendContainer appends the BAM records of container i to dst. When
// comp is not nil, dst is the buffer of a run of comp's blocks: each
// record is reported to each (if set) and full blocks are cut after it.
func (c *CRAM) appendContainer(ctx context.Context, i int, opt *decode.DecoderOptions, dst []byte, comp *bgzf.Compressor, each func([]byte, int64, int64) error) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	pd := c.decoders.get(c.f, *opt)
	defer c.decoders.put(pd)
	err := pd.d.ContainerFunc(i, func(j int, r *decode.Record) error {
		at := len(dst)
		var err error
		if dst, err = bam.AppendRecord(dst, r); err != nil {
			return fmt.Errorf("%s: container at byte %d: record %d (%s): %w", c.path, c.f.Containers[i].Offset, j, r.Name, err)
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
			return fmt.Errorf("%s: container at byte %d: BGZF: %w", c.path, c.f.Containers[i].Offset, err)
		}
		return nil
	})
	return dst, err
}

// refSource resolves the @SQ lines of one file against a reference store,
// once per contig, on first use.
type refSource struct {
	store *reference.Store
	refs  []decode.RefSeq
	// lengths holds, per @SQ line, the length of the FASTA contig of the
	// same name, or -1: htslib's @SQ length sanitising.
	lengths []int64

	mu      sync.Mutex // guards contigs and errs
	contigs []*reference.Contig
	errs    []error
}

func newRefSource(s *reference.Store, refs []decode.RefSeq) *refSource {
	r := &refSource{store: s, refs: refs, lengths: make([]int64, len(refs)),
		contigs: make([]*reference.Contig, len(refs)), errs: make([]error, len(refs))}
	byName := map[string]int64{}
	for _, c := range s.Contigs() {
		if _, ok := byName[c.Name()]; !ok {
			byName[c.Name()] = c.Len()
		}
	}
	for i, q := range refs {
		r.lengths[i] = -1
		if n, ok := byName[q.Name]; ok {
			r.lengths[i] = n
		}
	}
	return r
}

func (r *refSource) contig(id int) (*reference.Contig, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.contigs[id] == nil && r.errs[id] == nil {
		q := r.refs[id]
		// A contig that only its name and length can match needs no
		// whole-contig MD5 against the @SQ M5: the slice MD5s check every
		// base used, as htslib does with -T.
		if c := r.store.Unambiguous(q.Name, q.Length); c != nil {
			r.contigs[id] = c
			return c, nil
		}
		r.contigs[id], r.errs[id] = r.store.Lookup(q.Name, q.Length, q.M5)
		if r.errs[id] != nil {
			// Like htslib with -T, fall back to the FASTA contig of that
			// name; the slice MD5s still guard every base used.
			for _, c := range r.store.Contigs() {
				if c.Name() == q.Name {
					r.contigs[id], r.errs[id] = c, nil
					break
				}
			}
		}
	}
	return r.contigs[id], r.errs[id]
}

// Bases implements decode.ReferenceSource.
func (r *refSource) Bases(dst []byte, id int, start, end int64) ([]byte, error) {
	c, err := r.contig(id)
	if err != nil {
		return dst, err
	}
	end = min(end, c.Len())
	start = min(start, end)
	return c.Bases(dst, start, end)
}

// Length implements decode.ReferenceSource.
func (r *refSource) Length(id int) int64 {
	return r.lengths[id]
}
