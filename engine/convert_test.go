package engine

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"unsafe"

	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/internal/bgzftest"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/cramtest"
	"github.com/cramfs/cramfs/internal/sizehint"
)

// bigSource is a source.Source of one container of n bytes.
type bigSource struct{ data []byte }

func (s bigSource) Name() string            { return "big" }
func (s bigSource) Header() ([]byte, error) { return []byte("BAM\x01"), nil }
func (s bigSource) Identity() (source.Identity, error) {
	return source.Identity{}, source.ErrNoIdentity
}
func (s bigSource) Variant() string           { return "" }
func (s bigSource) NumContainers() int        { return 1 }
func (s bigSource) ContainerOffset(int) int64 { return 0 }
func (s bigSource) AppendContainer(_ context.Context, _ int, dst []byte) ([]byte, error) {
	return append(dst, s.data...), nil
}

// pieceWriter keeps what is written and the size of every Write.
type pieceWriter struct {
	bytes.Buffer
	sizes []int
}

func (w *pieceWriter) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return w.Buffer.Write(p)
}

// checkPieces fails unless every Write but the last was of WritePiece
// bytes.
func (w *pieceWriter) checkPieces(t *testing.T, what string) {
	t.Helper()
	for i, n := range w.sizes {
		if n != WritePiece && i < len(w.sizes)-1 || n > WritePiece {
			t.Errorf("%s: Write %d of %d was of %d bytes, want %d (the last one at most that)", what, i, len(w.sizes), n, WritePiece)
			return
		}
	}
}

// TestConvertWritesInPieces checks that a container larger than
// WritePiece reaches the writer in pieces of WritePiece bytes (one huge
// write(2) into a file was several times slower) and whole.
func TestConvertWritesInPieces(t *testing.T) {
	data := make([]byte, 5*WritePiece+123)
	for i := range data {
		data[i] = byte(i * 7 / 5)
	}
	src := bigSource{data: data}
	for _, level := range []Level{Stored, 1} {
		var w pieceWriter
		if err := Convert(context.Background(), src, &w, ConvertOptions{Threads: 2, Level: level}); err != nil {
			t.Fatal(err)
		}
		w.checkPieces(t, fmt.Sprint("level ", level))
		raw, err := bgzftest.DecompressAll(w.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if want := append([]byte("BAM\x01"), data...); !bytes.Equal(raw, want) {
			t.Fatalf("level %d: output holds %d bytes, want the %d of header and container", level, len(raw), len(want))
		}
	}
}

// TestConvertGathersSmallContainers checks that containers smaller than
// WritePiece are written together, in pieces of WritePiece bytes: the
// caller needs no buffering of its own (a bufio.Writer copied every byte
// of every container).
func TestConvertGathersSmallContainers(t *testing.T) {
	for _, c := range openHintCRAMs(t) {
		var w pieceWriter
		if err := Convert(context.Background(), c, &w, ConvertOptions{Threads: 2, Level: Stored}); err != nil {
			t.Fatal(err)
		}
		w.checkPieces(t, c.Name())
		var want bytes.Buffer
		if err := Convert(context.Background(), c, &want, ConvertOptions{Threads: 1, Level: Stored}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w.Bytes(), want.Bytes()) {
			t.Errorf("%s: %d bytes, not the %d of another conversion", c.Name(), w.Len(), want.Len())
		}
	}
}

// hintProbe is a CRAM whose container blocks are checked against the
// buffer Convert builds them in, with its size estimate optionally
// replaced by a fixed one.
type hintProbe struct {
	*cram.CRAM
	fixed int64 // the estimate of every container; 0: the CRAM's own

	mu    sync.Mutex // guards grown
	grown []int      // containers whose blocks outgrew the buffer given
}

func (p *hintProbe) EstimateContainer(i int) int64 {
	if p.fixed != 0 {
		return p.fixed
	}
	return p.CRAM.EstimateContainer(i)
}

func (p *hintProbe) AppendContainerBlocks(ctx context.Context, i int, c *bgzf.Compressor, dst []byte, opt source.BlockOptions) ([]byte, source.Blocks, error) {
	out, n, err := p.CRAM.AppendContainerBlocks(ctx, i, c, dst, opt)
	if err == nil && cap(out) != cap(dst) {
		p.mu.Lock()
		p.grown = append(p.grown, i)
		p.mu.Unlock()
	}
	return out, n, err
}

// hintCRAMs are testdata CRAMs of several containers of different writers
// and versions, some of single records.
var hintCRAMs = []string{"ce_1000.scramble-3.0-s1S50.cram", "ce_1000.scramble-4.0-s1S50.cram", "ce_1000.3.0-sps1.cram", "corner_unmapped.3.1-sps1.cram", "corner_aux.st1.23-3.0-sps1.cram"}

// openHintCRAMs opens the hintCRAMs and, made by samtools from the
// "synth" fixture, CRAMs 3.0 and 3.1 of six containers of 2,000 reads
// (about 500 KB of BAM each).
func openHintCRAMs(t *testing.T) []*cram.CRAM {
	store := cramtest.Reference(t)
	var paths []string
	for _, name := range hintCRAMs {
		paths = append(paths, filepath.Join(corpus.Root(), "testdata", "cram", name))
	}
	synth := fixture(t, "synth")
	for _, v := range []string{"3.0", "3.1"} {
		p := filepath.Join(t.TempDir(), "synth."+v+".cram")
		cramtest.Samtools(t, "view", "-C", "--no-PG", "--output-fmt-option", "version="+v, "--output-fmt-option", "no_ref=1",
			"--output-fmt-option", "seqs_per_slice=2000", "-o", p, synth.path)
		paths = append(paths, p)
	}
	var cs []*cram.CRAM
	for _, p := range paths {
		c, err := cram.Open(p, cram.Path(p), cram.Options{Reference: store})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if c.NumContainers() < 2 {
			t.Fatalf("%s: %d containers, want several", p, c.NumContainers())
		}
		cs = append(cs, c)
	}
	return cs
}

// TestConvertSizesBuffersAhead checks that Convert gives each container's
// blocks a buffer they fit in, so that it is not grown and copied while
// the records are encoded (a 36 MB container used to be copied about
// twice over on its way from an empty buffer).
func TestConvertSizesBuffersAhead(t *testing.T) {
	for _, c := range openHintCRAMs(t) {
		for _, threads := range []int{1, 2} {
			p := &hintProbe{CRAM: c}
			if err := Convert(context.Background(), p, io.Discard, ConvertOptions{Threads: threads, Level: Stored}); err != nil {
				t.Fatal(err)
			}
			if len(p.grown) > 0 {
				t.Errorf("%s, %d threads: the blocks of containers %v of %d outgrew their buffer", c.Name(), threads, p.grown, c.NumContainers())
			}
		}
	}
}

// TestConvertHintKeepsBytes checks that the size hints only size buffers:
// estimates far too small or too large give the bytes of the CRAM's own,
// at every level.
func TestConvertHintKeepsBytes(t *testing.T) {
	for _, c := range openHintCRAMs(t) {
		for _, level := range []Level{Stored, 1, 6} {
			var want bytes.Buffer
			if err := Convert(context.Background(), c, &want, ConvertOptions{Threads: 2, Level: level}); err != nil {
				t.Fatal(err)
			}
			for _, fixed := range []int64{1, 1 << 24} {
				var got bytes.Buffer
				p := &hintProbe{CRAM: c, fixed: fixed}
				if err := Convert(context.Background(), p, &got, ConvertOptions{Threads: 2, Level: level}); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Errorf("%s, level %d, estimate %d: %d bytes differ from the %d with the CRAM's own estimates", c.Name(), level, fixed, got.Len(), want.Len())
				}
			}
		}
	}
}

// TestAppendContainerSizesAhead checks that AppendContainer into an empty
// buffer (as the exact layout scan decodes) sizes it before the records
// are encoded, from what the CRAM learned of its containers, rather than
// growing it by doubling: once every container was decoded, each one's
// buffer has at most 1/8 of its length (or a block) to spare.
func TestAppendContainerSizesAhead(t *testing.T) {
	ctx := context.Background()
	for _, c := range openHintCRAMs(t) {
		for i := range c.NumContainers() {
			if _, err := c.AppendContainer(ctx, i, nil); err != nil {
				t.Fatal(err)
			}
		}
		for i := range c.NumContainers() {
			raw, err := c.AppendContainer(ctx, i, nil)
			if err != nil {
				t.Fatal(err)
			}
			if spare := cap(raw) - len(raw); spare > max(len(raw)/8, bgzf.MaxBlockSize) {
				t.Errorf("%s container %d: %d bytes in a buffer of %d", c.Name(), i, len(raw), cap(raw))
			}
		}
	}
}

// growingSource is a source.BlockAppender whose container i is estimated
// at est(i) = 1 MB plus 4% per container and fills 1.3 bytes per
// estimated byte, and which records the buffers it is given.
type growingSource struct {
	bigSource
	n       int
	buffers map[*byte]bool
}

func (s *growingSource) NumContainers() int { return s.n }

func (s *growingSource) EstimateContainer(i int) int64 { return 1<<20 + int64(i)<<20/25 }

func (s *growingSource) AppendContainerBlocks(_ context.Context, i int, _ *bgzf.Compressor, dst []byte, _ source.BlockOptions) ([]byte, source.Blocks, error) {
	s.buffers[unsafe.SliceData(dst[:1])] = true
	n := int(s.EstimateContainer(i) * 13 / 10)
	return append(dst, make([]byte, n)...), source.Blocks{Raw: int64(n)}, nil
}

// TestConvertReusesBuffers checks that a buffer given back after writing
// serves the next containers when they are estimated a little larger:
// each new buffer is tens of MB of pages to fault in on a real file
// (archive containers), and a buffer sized to the hint alone was
// replaced at almost every container whose estimate grew.
func TestConvertReusesBuffers(t *testing.T) {
	src := &growingSource{n: 40, buffers: map[*byte]bool{}}
	cw := &convertWorkers{src: src, hint: sizehint.New(2 * 256), outs: newOutPool(1),
		comps: make(chan *bgzf.Compressor, 1)}
	c, err := bgzf.NewCompressor(0)
	if err != nil {
		t.Fatal(err)
	}
	cw.comps <- c
	for i := range src.n {
		r := cw.container(context.Background(), i, i-1)
		if r.err != nil {
			t.Fatal(r.err)
		}
		cw.recycle(r)
	}
	// The first buffer is sized from the guess of 2 bytes per estimated
	// byte; then one new buffer for every three containers at most.
	if len(src.buffers) > 1+src.n/3 {
		t.Errorf("%d buffers for %d containers each 4%% larger than the last, want at most %d", len(src.buffers), src.n, 1+src.n/3)
	}
}

// steadySource is a growingSource whose containers are all estimated at
// 1 MB.
type steadySource struct{ growingSource }

func (s *steadySource) EstimateContainer(int) int64 { return 1 << 20 }

func (s *steadySource) AppendContainerBlocks(_ context.Context, i int, _ *bgzf.Compressor, dst []byte, _ source.BlockOptions) ([]byte, source.Blocks, error) {
	s.buffers[unsafe.SliceData(dst[:1])] = true
	n := int(s.EstimateContainer(i) * 13 / 10)
	return append(dst, make([]byte, n)...), source.Blocks{Raw: int64(n)}, nil
}

// TestConvertWaitsForItsBuffer checks that a worker whose last container
// is the next to be written waits for the writer to give its buffer back
// rather than make a new one: with one worker and containers of one size,
// a single buffer serves them all. The worker used to take its next
// container before the writer had written the last, and made a new
// buffer, tens of MB of fresh pages, at most of them.
func TestConvertWaitsForItsBuffer(t *testing.T) {
	for range 5 {
		src := &steadySource{growingSource{n: 30, buffers: map[*byte]bool{}}}
		if err := Convert(context.Background(), src, io.Discard, ConvertOptions{Threads: 1, Level: Stored}); err != nil {
			t.Fatal(err)
		}
		if len(src.buffers) != 1 {
			t.Fatalf("one worker: %d buffers for %d containers of one size, want 1", len(src.buffers), src.n)
		}
	}
}

// cutSource is a source.BlockAppender of n containers of size bytes,
// built through the Compressor's run a record of rec bytes at a time, as
// a CRAM's are; it notes the longest buffer a run held.
type cutSource struct {
	n, size, rec int

	mu      sync.Mutex // guards longest
	longest int
}

func (s *cutSource) Name() string            { return "cut" }
func (s *cutSource) Header() ([]byte, error) { return []byte("BAM\x01"), nil }
func (s *cutSource) Identity() (source.Identity, error) {
	return source.Identity{}, source.ErrNoIdentity
}
func (s *cutSource) Variant() string           { return "" }
func (s *cutSource) NumContainers() int        { return s.n }
func (s *cutSource) ContainerOffset(int) int64 { return 0 }
func (s *cutSource) EstimateContainer(int) int64 {
	return int64(s.size) / 2
}

// data is the bytes of container i.
func (s *cutSource) data(i int) []byte {
	b := make([]byte, s.size)
	for j := range b {
		b[j] = byte(i*31 + j*7/5)
	}
	return b
}

func (s *cutSource) AppendContainer(_ context.Context, i int, dst []byte) ([]byte, error) {
	return append(dst, s.data(i)...), nil
}

func (s *cutSource) AppendContainerBlocks(_ context.Context, i int, c *bgzf.Compressor, dst []byte, _ source.BlockOptions) ([]byte, source.Blocks, error) {
	buf := c.Begin(dst)
	longest := 0
	for d := s.data(i); len(d) > 0; {
		k := min(len(d), s.rec)
		buf = append(buf, d[:k]...)
		d = d[k:]
		longest = max(longest, len(buf))
		var err error
		if buf, err = c.Cut(buf); err != nil {
			return dst, source.Blocks{}, err
		}
	}
	out, raw, err := c.End(buf)
	s.mu.Lock()
	s.longest = max(s.longest, longest, len(out))
	s.mu.Unlock()
	return out, source.Blocks{Raw: raw}, err
}

// TestConvertWritesTheHeadContainerAsBuilt checks that the container
// being written is written as its blocks are cut, so that its buffer stays
// about streamMin long rather than the container's size: a long-read
// container is about 10 MB of BAM, each a buffer of fresh pages to fault
// in. With one worker every container is the one written. The output is
// the same bytes, in WritePiece writes, as with two workers and with the
// blocks made of each container's whole data.
func TestConvertWritesTheHeadContainerAsBuilt(t *testing.T) {
	for _, level := range []Level{Stored, 1} {
		s := &cutSource{n: 5, size: 6*streamMin + 12345, rec: 30000}
		var one pieceWriter
		if err := Convert(context.Background(), s, &one, ConvertOptions{Threads: 1, Level: level}); err != nil {
			t.Fatal(err)
		}
		one.checkPieces(t, fmt.Sprint("level ", level))
		if bound := streamMin + WritePiece + 2*bgzf.MaxBlockSize + s.rec; s.longest > bound {
			t.Errorf("level %d: a run held %d bytes, want at most %d", level, s.longest, bound)
		}
		var two pieceWriter
		if err := Convert(context.Background(), s, &two, ConvertOptions{Threads: 2, Level: level}); err != nil {
			t.Fatal(err)
		}
		two.checkPieces(t, fmt.Sprint("level ", level, ", two workers"))
		var whole pieceWriter
		if err := Convert(context.Background(), wholeSource{s}, &whole, ConvertOptions{Threads: 2, Level: level}); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(one.Bytes(), whole.Bytes()) || !bytes.Equal(two.Bytes(), whole.Bytes()) {
			t.Fatalf("level %d: outputs of %d and %d bytes, want the %d of the blocks of whole containers", level, one.Len(), two.Len(), whole.Len())
		}
	}
}

// wholeSource hides the BlockAppender of a cutSource: Convert compresses
// each container's whole data.
type wholeSource struct{ s *cutSource }

func (w wholeSource) Name() string                       { return w.s.Name() }
func (w wholeSource) Header() ([]byte, error)            { return w.s.Header() }
func (w wholeSource) Identity() (source.Identity, error) { return w.s.Identity() }
func (w wholeSource) Variant() string                    { return w.s.Variant() }
func (w wholeSource) NumContainers() int                 { return w.s.NumContainers() }
func (w wholeSource) ContainerOffset(i int) int64        { return w.s.ContainerOffset(i) }
func (w wholeSource) AppendContainer(ctx context.Context, i int, dst []byte) ([]byte, error) {
	return w.s.AppendContainer(ctx, i, dst)
}
