package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/internal/bgzftest"
	"github.com/cramfs/cramfs/internal/cramtest"
)

// bamFixture is a BAM file on disk, decompressed and split into records.
type bamFixture struct {
	path   string   // the BAM file; its identity stands in for a CRAM's
	header []byte   // uncompressed BAM header
	recs   [][]byte // records, each with its block_size prefix
}

// synthSAM writes a coordinate-sorted SAM with three references, reads of
// varied shapes (long deletions spanning bins, placed unmapped reads) and
// unplaced unmapped reads at the end.
func synthSAM(tb testing.TB, path string, nReads int, seed uint64) {
	tb.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	refs := []struct {
		name string
		ln   int
	}{{"chr1", 400000}, {"chr2", 120000}, {"chrM", 16569}}
	b.WriteString("@HD\tVN:1.6\tSO:coordinate\n")
	for _, ref := range refs {
		fmt.Fprintf(&b, "@SQ\tSN:%s\tLN:%d\n", ref.name, ref.ln)
	}
	b.WriteString("@RG\tID:g1\tSM:s\n")
	seq := func(n int) (string, string) {
		s, q := make([]byte, n), make([]byte, n)
		for i := range s {
			s[i] = "ACGTN"[r.IntN(5)]
			q[i] = byte(33 + r.IntN(41))
		}
		return string(s), string(q)
	}
	per := []int{nReads * 6 / 10, nReads * 3 / 10, nReads / 20}
	id := 0
	for ri, ref := range refs {
		pos := 1
		for range per[ri] {
			pos += r.IntN(2 * ref.ln / per[ri])
			longOK := ref.ln > 60000
			limit := ref.ln - 300
			if longOK {
				limit = ref.ln - 30000
			}
			pos = min(pos, limit)
			n := 50 + r.IntN(101)
			s, q := seq(n)
			flag, cigar, mapq := 0, fmt.Sprintf("%dM", n), 60
			switch k := r.IntN(40); {
			case k == 0 && longOK:
				cigar = fmt.Sprintf("%dM%dD%dM", n/2, 17000+r.IntN(9000), n-n/2)
			case k == 1:
				flag, cigar, mapq = 4, "*", 0
			case k < 5:
				cigar = fmt.Sprintf("%dS%dM2I%dM", 5, n/2, n-n/2-7)
				flag = 16
			}
			id++
			fmt.Fprintf(&b, "r%06d\t%d\t%s\t%d\t%d\t%s\t*\t0\t0\t%s\t%s\tRG:Z:g1\tNM:i:%d\n",
				id, flag, ref.name, pos, mapq, cigar, s, q, r.IntN(5))
		}
	}
	for range nReads / 20 {
		id++
		s, q := seq(80)
		fmt.Fprintf(&b, "u%06d\t4\t*\t0\t0\t*\t*\t0\t0\t%s\t%s\n", id, s, q)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// loadBAM decompresses a BAM file and splits header and records.
func loadBAM(tb testing.TB, path string) *bamFixture {
	tb.Helper()
	z, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := bgzftest.DecompressAll(z)
	if err != nil {
		tb.Fatal(err)
	}
	le := binary.LittleEndian
	off := 8 + int(le.Uint32(raw[4:]))
	nRef := int(le.Uint32(raw[off:]))
	off += 4
	for range nRef {
		off += 4 + int(le.Uint32(raw[off:])) + 4
	}
	f := &bamFixture{path: path, header: raw[:off]}
	for off < len(raw) {
		n := 4 + int(le.Uint32(raw[off:]))
		f.recs = append(f.recs, raw[off:off+n])
		off += n
	}
	return f
}

var fixtureCache sync.Map // name -> *bamFixture

// fixture returns a named test BAM, made with samtools in a directory
// shared by the test binary: "synth" (sorted, ~3 MB raw), "small" (a
// sorted htslib test file) or "unsorted".
func fixture(tb testing.TB, name string) *bamFixture {
	tb.Helper()
	if f, ok := fixtureCache.Load(name); ok {
		return f.(*bamFixture)
	}
	dir := fixtureDir(tb)
	bamPath := filepath.Join(dir, name+".bam")
	switch name {
	case "synth":
		sam := filepath.Join(dir, "synth.sam")
		synthSAM(tb, sam, 12000, 42)
		cramtest.Samtools(tb, "view", "-b", "--no-PG", "-o", bamPath, sam)
	case "small":
		cramtest.Samtools(tb, "sort", "--no-PG", "-o", bamPath, "/usr/share/htslib-test/test/ce#1000.sam")
	case "unsorted":
		cramtest.Samtools(tb, "view", "-b", "--no-PG", "-o", bamPath, "/usr/share/htslib-test/test/xx#unsorted.sam")
	default:
		tb.Fatalf("no fixture %q", name)
	}
	f := loadBAM(tb, bamPath)
	fixtureCache.Store(name, f)
	return f
}

var (
	fixtureDirOnce sync.Once
	fixtureDirPath string
	fixtureDirErr  error
)

func fixtureDir(tb testing.TB) string {
	fixtureDirOnce.Do(func() {
		fixtureDirPath, fixtureDirErr = os.MkdirTemp("", "cramfs-engine-test-")
	})
	if fixtureDirErr != nil {
		tb.Fatal(fixtureDirErr)
	}
	return fixtureDirPath
}

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureDirPath != "" {
		os.RemoveAll(fixtureDirPath)
	}
	os.Exit(code)
}

// splitPattern is how many records go into successive fake containers:
// single records, an empty container, and runs large enough to need
// several BGZF blocks.
var splitPattern = []int{1, 7, 0, 120, 400, 25, 3, 260}

// fakeSource serves a bamFixture as CRAM containers cut by splitPattern.
type fakeSource struct {
	name    string
	header  []byte
	conts   [][]byte
	decodes []atomic.Int64 // per container
	total   atomic.Int64
	// flipOn, when positive, makes the flipOn-th and later decodes of
	// container flipIdx return different bytes (a changed quality value).
	flipOn  int64
	flipIdx int   // the container flipOn applies to
	fail    error // returned by every decode when set
	// gate, when set, holds rebuilds (not the scan) of container gateIdx
	// until it is closed or the context ends.
	gate    chan struct{}
	gateIdx int
	// gateHold makes the gate hold even after the context ended (a
	// decoder slow to notice a cancellation).
	gateHold bool
	// duringScan, when set, is called at the first decode of container 3.
	duringScan func()
}

func newFakeSource(f *bamFixture, name string) *fakeSource {
	s := &fakeSource{name: name, header: f.header}
	if s.name == "" {
		s.name = f.path
	}
	for i, k := 0, 0; i < len(f.recs); k++ {
		n := min(splitPattern[k%len(splitPattern)], len(f.recs)-i)
		var c []byte
		for _, r := range f.recs[i : i+n] {
			c = append(c, r...)
		}
		s.conts = append(s.conts, c)
		i += n
	}
	s.conts = append(s.conts, nil) // a trailing container without records
	s.decodes = make([]atomic.Int64, len(s.conts))
	return s
}

func (s *fakeSource) Name() string                { return s.name }
func (s *fakeSource) Header() ([]byte, error)     { return s.header, nil }
func (s *fakeSource) NumContainers() int          { return len(s.conts) }
func (s *fakeSource) ContainerOffset(i int) int64 { return int64(1000 * i) }

// Identity implements source.Source with the identity of the file named,
// when there is one (the fixture's BAM stands in for a CRAM).
func (s *fakeSource) Identity() (source.Identity, error) {
	f, err := os.Open(s.name)
	if err != nil {
		return source.Identity{}, fmt.Errorf("%w: %w", source.ErrNoIdentity, err)
	}
	defer f.Close()
	return source.FileIdentity(f)
}

func (s *fakeSource) Variant() string { return "fake" }

func (s *fakeSource) AppendContainer(ctx context.Context, i int, dst []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return dst, err
	}
	if i < 0 || i >= len(s.conts) {
		return dst, fmt.Errorf("no container %d", i)
	}
	n := s.decodes[i].Add(1)
	s.total.Add(1)
	if s.fail != nil {
		return dst, s.fail
	}
	if s.duringScan != nil && i == 3 && n == 1 {
		s.duringScan()
	}
	if s.gate != nil && i == s.gateIdx && n > 1 && s.gateHold {
		<-s.gate
	} else if s.gate != nil && i == s.gateIdx && n > 1 {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return dst, ctx.Err()
		}
	}
	start := len(dst)
	dst = append(dst, s.conts[i]...)
	if s.flipOn > 0 && i == s.flipIdx && n >= s.flipOn && len(dst) > start {
		dst[len(dst)-1] ^= 1 // last byte of the last record: a quality or aux value
	}
	return dst, nil
}

// expected builds the virtual BAM independently: the header's blocks, each
// container's blocks, the EOF block.
func (s *fakeSource) expected(tb testing.TB, level int) []byte {
	tb.Helper()
	c, err := bgzf.NewCompressor(level)
	if err != nil {
		tb.Fatal(err)
	}
	out, err := c.AppendBlocks(nil, s.header)
	if err != nil {
		tb.Fatal(err)
	}
	for _, ct := range s.conts {
		// A fresh compressor per segment: the output must not depend on
		// what was compressed before.
		c, _ := bgzf.NewCompressor(level)
		if out, err = c.AppendBlocks(out, ct); err != nil {
			tb.Fatal(err)
		}
	}
	return append(out, bgzf.EOF...)
}

// rawStream is the uncompressed BAM: header then all records.
func (s *fakeSource) rawStream() []byte {
	b := append([]byte(nil), s.header...)
	for _, c := range s.conts {
		b = append(b, c...)
	}
	return b
}

// logCounter is a slog handler counting records per level and keeping
// their messages.
type logCounter struct {
	mu   sync.Mutex
	n    map[slog.Level]int
	msgs []string
}

func newLogCounter() *logCounter { return &logCounter{n: map[slog.Level]int{}} }

func (h *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h *logCounter) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n[r.Level]++
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(&b, " %s=%v", a.Key, a.Value); return true })
	h.msgs = append(h.msgs, b.String())
	return nil
}
func (h *logCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logCounter) WithGroup(string) slog.Handler      { return h }
func (h *logCounter) count(l slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n[l]
}
func (h *logCounter) text() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.msgs, "\n")
}

// readAll reads v whole with reads of size chunk.
func readAll(tb testing.TB, v *VirtualBAM, chunk int) []byte {
	tb.Helper()
	var out bytes.Buffer
	buf := make([]byte, chunk)
	for off := int64(0); ; {
		n, err := v.ReadAt(buf, off)
		out.Write(buf[:n])
		off += int64(n)
		if err != nil {
			if !errors.Is(err, io.EOF) {
				tb.Fatalf("ReadAt(%d): %v", off, err)
			}
			break
		}
	}
	return out.Bytes()
}

// openGate returns a function that opens src's gate, once however often
// it is called, and is called when t ends.
func openGate(t *testing.T, src *fakeSource) func() {
	var once sync.Once
	release := func() { once.Do(func() { close(src.gate) }) }
	t.Cleanup(release)
	return release
}
