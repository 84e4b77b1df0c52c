package engine

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/internal/sizehint"
)

// ConvertOptions configures Convert.
type ConvertOptions struct {
	Threads int   // decoding and compressing workers; 0 means GOMAXPROCS
	Level   Level // BGZF compression; DefaultLevel is deflate level 1
	// Progress, when set, is called after each container is written with
	// the number written so far and the total.
	Progress func(done, total int)
}

// Convert writes the BAM of src to w: the header's BGZF blocks, one run of
// blocks per container and the EOF block, the same bytes as the virtual
// BAM at that level, in Write calls of WritePiece bytes (the last one
// shorter), so w needs no buffering. Containers are decoded and compressed by Threads
// workers and written in order, so the output does not depend on Threads.
// At most 2×Threads containers are held in memory at once.
func Convert(ctx context.Context, src source.Source, w io.Writer, opt ConvertOptions) error {
	threads := opt.Threads
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	if !opt.Level.valid() {
		return fmt.Errorf("compression level %d: want Stored, DefaultLevel or 1 to 9", opt.Level)
	}
	level := opt.Level.Deflate()
	comp, err := bgzf.NewCompressor(level)
	if err != nil {
		return err
	}
	hdr, err := src.Header()
	if err != nil {
		return err
	}
	out, err := comp.AppendBlocks(nil, hdr)
	if err != nil {
		return err
	}
	pw := &outWriter{w: w}
	if err := pw.write(out); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := src.NumContainers()
	// Stored blocks hold a little more than the BAM bytes, which the
	// estimate undercounts (CIGARs and tags); deflate halves BAM or better.
	guess := int64(2 * 256)
	if level > 0 {
		guess = 3 * 256 / 4
	}
	cw := &convertWorkers{src: src, hint: sizehint.New(guess),
		raws: make(chan []byte, threads), outs: newOutPool(3 * threads),
		comps: make(chan *bgzf.Compressor, threads), pw: pw}
	for range threads {
		c, err := bgzf.NewCompressor(level)
		if err != nil {
			return err
		}
		cw.comps <- c
	}
	queue := make(chan chan convertResult, 2*threads)
	// Long-lived workers rather than a goroutine per container: each new
	// goroutine grows its stack again to the decoder's depth.
	jobs := make(chan convertJob)
	for range threads {
		go func() {
			last := -1 // the container this worker built last
			for j := range jobs {
				r := cw.container(ctx, j.i, last)
				last = j.i
				j.res <- r
			}
		}()
	}
	go func() {
		defer close(queue)
		defer close(jobs)
		for i := range n {
			ch := make(chan convertResult, 1)
			select {
			case queue <- ch:
			case <-ctx.Done():
				return
			}
			select {
			case jobs <- convertJob{i: i, res: ch}:
			case <-ctx.Done():
				ch <- convertResult{err: ctx.Err()}
				return
			}
		}
	}()
	done := 0
	for ch := range queue {
		r := <-ch
		if r.err != nil {
			cancel()
			for ch := range queue { // let the workers finish
				<-ch
			}
			return r.err
		}
		if err := pw.write(r.data); err != nil {
			cancel()
			for ch := range queue {
				<-ch
			}
			return err
		}
		cw.recycle(r)
		done++
		cw.writing.Store(int64(done))
		if opt.Progress != nil {
			opt.Progress(done, n)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := pw.write([]byte(bgzf.EOF)); err != nil {
		return err
	}
	return pw.flush()
}

type convertJob struct {
	i   int
	res chan<- convertResult
}

type convertResult struct {
	data []byte
	err  error
}

// convertWorkers is what Convert's workers share.
type convertWorkers struct {
	src  source.Source
	hint *sizehint.Hint // sizes the blocks' buffers from src's estimates
	// Buffers cycle between the workers and the writer: compressed bytes
	// back after writing, and raw BAM bytes back to the workers for a
	// source.Source that is not a source.BlockAppender.
	raws  chan []byte
	outs  *outPool
	comps chan *bgzf.Compressor // one per worker

	// The worker of the container being written writes its blocks
	// itself as they are cut (headSink); the rest of a container's
	// blocks, and those of a container ended before its turn, the
	// writer writes. One goroutine at a time uses pw: the writer stores
	// writing only after its last write for the container before, and
	// takes a container's result only after its worker's last write.
	pw      *outWriter
	writing atomic.Int64 // the container being written; all before it are
}

// streamMin is how many bytes of blocks a worker holds before it offers
// them to headSink: whole WritePieces are written, the rest moved to the
// front of the buffer, so the larger it is the fewer bytes are moved;
// the buffer of the container being written stays about this size.
const streamMin = 8 * WritePiece

// headSink is the bgzf.Sink of container i: while i is the container
// being written, it writes the whole WritePieces of the blocks offered.
// A container built while earlier ones are still built or written keeps
// its blocks in its buffer as before, until it becomes the one written:
// so the buffer of a container written as it is built stays small and
// its pages, reused, are not new memory to fault in.
type headSink struct {
	cw    *convertWorkers
	i     int64
	taken int64 // bytes written
}

// Take implements bgzf.Sink.
func (h *headSink) Take(b []byte) (int, error) {
	if h.cw.writing.Load() != h.i {
		return 0, nil
	}
	n, err := h.cw.pw.take(b)
	h.taken += int64(n)
	return n, err
}

// outPool holds the output buffers written and given back, and counts
// the containers written, under one lock so that a worker sees a buffer
// and the count that goes with it.
type outPool struct {
	mu      sync.Mutex
	free    [][]byte      // at most cap(free) kept
	written int           // containers written so far
	wrote   chan struct{} // closed, and replaced, at each container written
	largest int64         // capacity of the largest buffer made
}

// make returns a new output buffer of capacity n, or of the largest made
// so far if that is larger. A buffer goes round from container to
// container, and with the container being written streamed (headSink)
// one that a small container was given may serve a large one next: one
// too small would be replaced by another, of fresh pages; capacity never
// written costs no memory.
func (p *outPool) make(n int64) []byte {
	p.mu.Lock()
	p.largest = max(p.largest, n)
	n = p.largest
	p.mu.Unlock()
	return make([]byte, 0, n)
}

// newOutPool returns an empty pool that keeps at most keep buffers.
func newOutPool(keep int) *outPool {
	return &outPool{free: make([][]byte, 0, keep), wrote: make(chan struct{})}
}

// recycle gives the buffer of a written result back to the workers,
// counts its container written and wakes those that wait for that.
func (cw *convertWorkers) recycle(r convertResult) {
	p := cw.outs
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < cap(p.free) {
		p.free = append(p.free, r.data)
	}
	p.written++
	close(p.wrote)
	p.wrote = make(chan struct{})
}

// buffer returns an output buffer for the next container of a worker
// that built container last (-1: none yet), or nil when a new one is to
// be made. A worker ends a container and takes the next at once, before
// the writer has written the one it ended: when that is the next to be
// written, the worker waits for that write, whose buffer then comes back,
// rather than make a new one. Each new buffer is tens of MB that the
// process faults in page by page, which costs more CPU than the write
// takes. A worker whose container waits behind another's does not wait,
// and one whose buffer another worker took first makes a new one: it
// waits only while its last container is the next to be written, which
// needs no other container built.
func (cw *convertWorkers) buffer(ctx context.Context, last int) []byte {
	p := cw.outs
	for {
		p.mu.Lock()
		if n := len(p.free); n > 0 {
			b := p.free[n-1]
			p.free = p.free[:n-1]
			p.mu.Unlock()
			return b
		}
		if last < 0 || p.written != last {
			p.mu.Unlock()
			return nil
		}
		wrote := p.wrote
		p.mu.Unlock()
		select {
		case <-wrote:
		case <-ctx.Done():
			return nil
		}
	}
}

// container builds the BGZF blocks of container i, by a worker that
// built container last before (see buffer).
func (cw *convertWorkers) container(ctx context.Context, i, last int) convertResult {
	out := cw.buffer(ctx, last)
	if ba, ok := cw.src.(source.BlockAppender); ok {
		// Records go into blocks as they are encoded: no container-sized
		// BAM buffer.
		var est int64
		if e, ok := cw.src.(source.Estimator); ok {
			est = e.EstimateContainer(i)
		}
		if hint := cw.hint.Size(est); int64(cap(out)) < hint {
			out = cw.outs.make(recycledSize(hint))
		}
		c := <-cw.comps
		sink := &headSink{cw: cw, i: int64(i)}
		c.SetSink(sink, streamMin)
		data, _, err := ba.AppendContainerBlocks(ctx, i, c, out[:0], source.BlockOptions{})
		c.SetSink(nil, 0)
		cw.comps <- c
		if err == nil {
			cw.hint.Observe(est, sink.taken+int64(len(data)))
		}
		return convertResult{data: data, err: err}
	}
	var raw []byte
	select {
	case raw = <-cw.raws:
	default:
	}
	raw, err := cw.src.AppendContainer(ctx, i, raw[:0])
	if err != nil {
		return convertResult{err: err}
	}
	c := <-cw.comps
	data, err := c.AppendBlocks(out[:0], raw)
	cw.comps <- c
	select {
	case cw.raws <- raw:
	default:
	}
	return convertResult{data: data, err: err}
}

// recycledSize is the capacity of a new buffer for a container hinted at
// hint bytes. Buffers go round from container to container, and a hint
// varies with its container and grows with the ratio learned, so one
// sized to the hint alone is soon too small and replaced: each
// replacement is tens of MB of fresh pages to fault in. An eighth more
// lets the next containers of about the same size reuse it; the part
// never written costs no memory.
func recycledSize(hint int64) int64 {
	return hint + hint/8
}

// WritePiece is the size of Convert's Write calls.
//
// Writing a whole container (tens of MB) in one write(2) costs the kernel
// far more system time than writing it in pieces, and pieces of a few
// hundred KiB less than 1 MiB ones while the page cache takes new pages
// (measurements in bench/archive/NOTES.md).
const WritePiece = 256 << 10

// outWriter writes to w in pieces of WritePiece bytes, the last one
// shorter: whole pieces straight from the buffer written, the rest
// gathered with what follows, so that neither a large container is copied
// through a buffer nor small ones cost a write(2) each.
type outWriter struct {
	w       io.Writer
	pending []byte // fewer than WritePiece bytes not yet written
}

func (p *outWriter) write(b []byte) error {
	if len(p.pending) > 0 {
		n := min(len(b), WritePiece-len(p.pending))
		p.pending = append(p.pending, b[:n]...)
		b = b[n:]
		if len(p.pending) < WritePiece {
			return nil
		}
		if err := p.flush(); err != nil {
			return err
		}
	}
	for len(b) >= WritePiece {
		if _, err := p.w.Write(b[:WritePiece]); err != nil {
			return err
		}
		b = b[WritePiece:]
	}
	if len(b) > 0 && p.pending == nil {
		p.pending = make([]byte, 0, WritePiece)
	}
	p.pending = append(p.pending, b...)
	return nil
}

// take writes the longest prefix of b that ends where a WritePiece of the
// output ends, after what is gathered, and returns its length: what it
// leaves follows in a later call of write or take.
func (p *outWriter) take(b []byte) (int, error) {
	n := 0
	if len(p.pending) > 0 {
		n = WritePiece - len(p.pending)
		if len(b) < n {
			return 0, nil
		}
		p.pending = append(p.pending, b[:n]...)
		if err := p.flush(); err != nil {
			return 0, err
		}
	}
	for len(b)-n >= WritePiece {
		if _, err := p.w.Write(b[n : n+WritePiece]); err != nil {
			return n, err
		}
		n += WritePiece
	}
	return n, nil
}

// flush writes what is gathered.
func (p *outWriter) flush() error {
	if len(p.pending) == 0 {
		return nil
	}
	_, err := p.w.Write(p.pending)
	p.pending = p.pending[:0]
	return err
}
