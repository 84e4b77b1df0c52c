package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cramfs/cramfs/cache"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/layout"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/internal/bgzftest"
	"github.com/cramfs/cramfs/internal/cramtest"
)

func newTestManager(t testing.TB, opts Options) (*Manager, *logCounter) {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	if opts.Threads == 0 {
		opts.Threads = 2
	}
	lc := newLogCounter()
	m := NewManager(opts, slog.New(lc))
	t.Cleanup(m.Close)
	return m, lc
}

func openT(t testing.TB, m *Manager, src source.Source) *VirtualBAM {
	t.Helper()
	v, err := m.Open(context.Background(), src)
	if err != nil {
		t.Fatalf("Open(%s): %v", src.Name(), err)
	}
	return v
}

func TestWholeFileEqualsIndependentCompression(t *testing.T) {
	cases := []struct {
		fixture string
		level   Level // Options.Level
		bgzf    int   // level handed to the compressor
		chunk   int
	}{
		{"synth", 0, 1, 1 << 16},
		{"synth", Stored, 0, 128 << 10},
		{"synth", 6, 6, 4096},
		{"small", 0, 1, 7919},
		{"unsorted", 0, 1, 100},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/level%d", tc.fixture, tc.level), func(t *testing.T) {
			src := newFakeSource(fixture(t, tc.fixture), "")
			m, _ := newTestManager(t, Options{Level: tc.level})
			v := openT(t, m, src)
			want := src.expected(t, tc.bgzf)
			if v.Size() != int64(len(want)) {
				t.Fatalf("Size = %d, want %d", v.Size(), len(want))
			}
			got := readAll(t, v, tc.chunk)
			if !bytes.Equal(got, want) {
				t.Fatalf("virtual BAM (%d bytes) differs from independent compression (%d bytes)", len(got), len(want))
			}
			raw, err := bgzftest.DecompressAll(got)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(raw, src.rawStream()) {
				t.Fatal("decompressed virtual BAM differs from Header()+records")
			}
			l := v.Layout()
			if l.Level != tc.bgzf || len(l.Segments) != src.NumContainers() || l.Size != v.Size() {
				t.Fatalf("layout level %d, %d segments, size %d", l.Level, len(l.Segments), l.Size)
			}
			multi := false
			for _, s := range l.Segments {
				if s.RawLen > bgzf.MaxBlockData {
					multi = true
				}
			}
			if tc.fixture == "synth" && !multi {
				t.Error("fixture has no segment spanning several BGZF blocks")
			}
		})
	}
}

// interestingOffsets lists offsets around every boundary of the layout.
func interestingOffsets(l layout.Layout) []int64 {
	offs := []int64{0, 1, l.Header.CompLen - 1, l.Header.CompLen, l.Size - 28, l.Size - 1, l.Size, l.Size + 1, l.Size + 1<<20}
	for _, s := range l.Segments {
		offs = append(offs, s.Offset-1, s.Offset, s.Offset+1, s.End()-1)
	}
	return offs
}

func checkReadAt(t *testing.T, v *VirtualBAM, want []byte, off int64, n int) {
	t.Helper()
	p := make([]byte, n)
	got, err := v.ReadAt(p, off)
	size := int64(len(want))
	switch {
	case off >= size:
		if got != 0 || err != io.EOF {
			t.Fatalf("ReadAt(%d bytes at %d) past end = %d, %v; want 0, EOF", n, off, got, err)
		}
	case off+int64(n) > size:
		if int64(got) != size-off || err != io.EOF {
			t.Fatalf("ReadAt(%d bytes at %d) over end = %d, %v; want %d, EOF", n, off, got, err, size-off)
		}
	default:
		if got != n || err != nil {
			t.Fatalf("ReadAt(%d bytes at %d) = %d, %v", n, off, got, err)
		}
	}
	if off < size && !bytes.Equal(p[:got], want[off:off+int64(got)]) {
		t.Fatalf("ReadAt(%d bytes at %d): wrong bytes", n, off)
	}
}

func TestRandomReads(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	want := src.expected(t, 1)
	m, _ := newTestManager(t, Options{CacheSize: 1 << 20})
	v := openT(t, m, src)
	r := rand.New(rand.NewPCG(7, 7))
	for _, off := range interestingOffsets(v.Layout()) {
		for _, n := range []int{1, 2, 29, 70000} {
			checkReadAt(t, v, want, max(off, 0), n)
		}
	}
	for range 150 {
		off := r.Int64N(int64(len(want)) + 100)
		n := 1 + r.IntN(150<<10)
		checkReadAt(t, v, want, off, n)
	}
	if n, err := v.ReadAt(make([]byte, 4), -1); n != 0 || !errors.Is(err, ErrInvalid) {
		t.Errorf("ReadAt at -1 = %d, %v", n, err)
	}
	if n, err := v.ReadAt(nil, 5); n != 0 || err != nil {
		t.Errorf("empty ReadAt = %d, %v", n, err)
	}
}

func TestConcurrentReadersSmallCache(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	want := src.expected(t, 1)
	// The cache holds a small fraction of the file: segments are evicted
	// and rebuilt all the time, and must come back identical.
	m, _ := newTestManager(t, Options{CacheSize: int64(len(want)) / 10, Threads: 2})
	v := openT(t, m, src)
	// The invariants that hold whenever their locks are free hold while
	// the readers and the readahead are at work.
	stop, checked := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(checked)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
				m.checkLocked(t, v)
			}
		}
	}()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 3))
			p := make([]byte, 64<<10)
			for range 60 {
				off := r.Int64N(int64(len(want)))
				n := 1 + r.IntN(len(p))
				got, err := v.ReadAt(p[:n], off)
				if err != nil && err != io.EOF {
					t.Errorf("ReadAt: %v", err)
					return
				}
				if !bytes.Equal(p[:got], want[off:off+int64(got)]) {
					t.Errorf("reader %d: wrong bytes at %d", g, off)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-checked
	st := m.CacheStats()
	if st.Evictions == 0 {
		t.Errorf("no evictions with a cache of %d bytes: %+v", st.MaxBytes, st)
	}
	if st.Bytes > st.MaxBytes {
		t.Errorf("cache holds %d bytes, bound %d", st.Bytes, st.MaxBytes)
	}
	// Whole file again after all that eviction: still the same bytes.
	if got := readAll(t, v, 100<<10); !bytes.Equal(got, want) {
		t.Fatal("bytes differ after eviction")
	}
	m.checkInvariants(t, v)
}

func TestOneBuildPerSegment(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	m, _ := newTestManager(t, Options{Readahead: -1})
	var opens sync.WaitGroup
	vs := make([]*VirtualBAM, 6)
	for i := range vs {
		opens.Add(1)
		go func() {
			defer opens.Done()
			v, err := m.Open(context.Background(), src)
			if err != nil {
				t.Error(err)
			}
			vs[i] = v
		}()
	}
	opens.Wait()
	if t.Failed() {
		return
	}
	for i := range src.conts {
		if n := src.decodes[i].Load(); n != 1 {
			t.Fatalf("container %d decoded %d times by concurrent opens, want 1", i, n)
		}
	}
	// Many readers of the same segment at once: one more decode of it.
	seg := v0Seg(vs[0], 4)
	var wg sync.WaitGroup
	for _, v := range vs {
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p := make([]byte, 100)
				if _, err := v.ReadAt(p, seg.Offset+10); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	if n := src.decodes[4].Load(); n != 2 {
		t.Fatalf("segment 4 decoded %d times in total, want 2 (scan + one build)", n)
	}
	m.checkInvariants(t, vs...)
}

func v0Seg(v *VirtualBAM, i int) layout.Segment { return v.Layout().Segments[i] }

func TestReadahead(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	m, _ := newTestManager(t, Options{Readahead: 3, Threads: 2})
	v := openT(t, m, src)
	l := v.Layout()
	base := src.total.Load()

	// A random read decodes only what it touches.
	mid := l.Segments[len(l.Segments)/2]
	for mid.CompLen == 0 {
		t.Fatal("middle segment empty")
	}
	if _, err := v.ReadAt(make([]byte, 10), mid.Offset); err != nil {
		t.Fatal(err)
	}
	if _, err := v.ReadAt(make([]byte, 10), 7); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := src.total.Load() - base; n != 1 {
		t.Fatalf("random reads decoded %d containers, want 1", n)
	}

	// Sequential reads from the start: later segments get built ahead.
	p := make([]byte, 4096)
	off := int64(0)
	for range 3 {
		n, err := v.ReadAt(p, off)
		if err != nil {
			t.Fatal(err)
		}
		off += int64(n)
	}
	next := l.SegmentAt(off)
	deadline := time.Now().Add(5 * time.Second)
	for {
		ahead := 0
		for i := next + 1; i < len(l.Segments); i++ {
			if src.decodes[i].Load() > 1 {
				ahead++
			}
		}
		if ahead >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no readahead after sequential reads (%d segments built ahead)", ahead)
		}
		time.Sleep(5 * time.Millisecond)
	}
	m.checkInvariants(t, v)
}

func TestIndexMatchesSamtools(t *testing.T) {
	for _, name := range []string{"synth", "small"} {
		t.Run(name, func(t *testing.T) {
			src := newFakeSource(fixture(t, name), "")
			m, _ := newTestManager(t, Options{})
			v := openT(t, m, src)
			dir := t.TempDir()
			path := filepath.Join(dir, "v.bam")
			if err := os.WriteFile(path, readAll(t, v, 1<<20), 0o644); err != nil {
				t.Fatal(err)
			}
			cramtest.Samtools(t, "index", path)
			want, err := os.ReadFile(path + ".bai")
			if err != nil {
				t.Fatal(err)
			}
			got := v.Index()
			if got == nil {
				t.Fatal("no index for a sorted file")
			}
			if !bytes.Equal(got, want) {
				os.WriteFile(filepath.Join(dir, "got.bai"), got, 0o644)
				t.Fatalf(".bai differs from samtools index: %d vs %d bytes", len(got), len(want))
			}
			// The served index also answers region queries like samtools'.
			if err := os.WriteFile(path+".bai", got, 0o644); err != nil {
				t.Fatal(err)
			}
			cramtest.Samtools(t, "quickcheck", path)
		})
	}
}

func TestUnsortedHasNoIndex(t *testing.T) {
	src := newFakeSource(fixture(t, "unsorted"), "")
	m, lc := newTestManager(t, Options{})
	v := openT(t, m, src)
	if v.Index() != nil {
		t.Fatal("index built for unsorted records")
	}
	if lc.count(slog.LevelWarn) == 0 {
		t.Fatal("missing index not logged")
	}
	if !bytes.Equal(readAll(t, v, 333), src.expected(t, 1)) {
		t.Fatal("unsorted file served wrong bytes")
	}
}

func indexPathFor(t *testing.T, m *Manager, src source.Source) string {
	t.Helper()
	id, depends, err := m.identify(src)
	if err != nil {
		t.Fatal(err)
	}
	return m.dir.PathOf(layout.Key(id, depends))
}

func TestPersistedIndex(t *testing.T) {
	fx := fixture(t, "synth")
	dir := t.TempDir()
	src := newFakeSource(fx, "")
	m1, _ := newTestManager(t, Options{CacheDir: dir})
	v1 := openT(t, m1, src)
	path := indexPathFor(t, m1, src)
	good, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("index not written: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("cache dir holds %d entries, want 1 (no temporary files left)", len(entries))
	}

	// Other foreign index: the same file indexed at another level.
	other := newFakeSource(fx, "")
	mOther, _ := newTestManager(t, Options{CacheDir: t.TempDir(), Level: 6})
	openT(t, mOther, other)
	foreign, err := os.ReadFile(indexPathFor(t, mOther, other))
	if err != nil {
		t.Fatal(err)
	}

	corrupt := func(b []byte) []byte {
		c := append([]byte(nil), b...)
		c[len(c)/2] ^= 0x40
		return c
	}
	cases := []struct {
		name    string
		content []byte // nil: leave the file as is
		rebuild bool
	}{
		{"valid", nil, false},
		{"corrupt", corrupt(good), true},
		{"truncated", good[:len(good)-9], true},
		{"empty", []byte{}, true},
		{"foreign", foreign, true},
		{"missing", nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.content != nil {
				if err := os.WriteFile(path, tc.content, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.name == "missing" {
				os.Remove(path)
			}
			s := newFakeSource(fx, "")
			m, lc := newTestManager(t, Options{CacheDir: dir})
			v := openT(t, m, s)
			decoded := s.total.Load() > 0
			if decoded != tc.rebuild {
				t.Fatalf("Open decoded %d containers; rebuild expected %v", s.total.Load(), tc.rebuild)
			}
			if tc.rebuild && tc.name != "missing" && lc.count(slog.LevelInfo) == 0 {
				t.Error("rebuild of an unusable index not logged")
			}
			if !bytes.Equal(v.Index(), v1.Index()) || v.Size() != v1.Size() {
				t.Fatal("index or size differ from the first open")
			}
			after, err := os.ReadFile(path)
			if err != nil || !bytes.Equal(after, good) {
				t.Fatalf("index file not restored (%v)", err)
			}
			if tc.name == "corrupt" && !bytes.Equal(readAll(t, v, 1<<20), s.expected(t, 1)) {
				t.Fatal("wrong bytes")
			}
			if fmt.Sprint(v.Layout()) != fmt.Sprint(v1.Layout()) {
				t.Fatal("layout differs from the first open")
			}
		})
	}

	// A changed file (new mtime) is not served from the old index.
	later := time.Now().Add(time.Hour)
	copyPath := filepath.Join(t.TempDir(), "copy.bam")
	data, _ := os.ReadFile(fx.path)
	os.WriteFile(copyPath, data, 0o644)
	os.Chtimes(copyPath, later, later)
	s := newFakeSource(fx, copyPath)
	m, _ := newTestManager(t, Options{CacheDir: dir})
	openT(t, m, s)
	if s.total.Load() == 0 {
		t.Fatal("index reused for a file with another mtime")
	}
}

func TestTwoManagersIndexConcurrently(t *testing.T) {
	fx := fixture(t, "synth")
	dir := t.TempDir()
	var wg sync.WaitGroup
	vs := make([]*VirtualBAM, 2)
	for i := range vs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, _ := newTestManager(t, Options{CacheDir: dir})
			v, err := m.Open(context.Background(), newFakeSource(fx, ""))
			if err != nil {
				t.Error(err)
			}
			vs[i] = v
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	src := newFakeSource(fx, "")
	want := src.expected(t, 1)
	for i, v := range vs {
		if !bytes.Equal(readAll(t, v, 1<<20), want) {
			t.Fatalf("manager %d serves wrong bytes", i)
		}
	}
	if !bytes.Equal(vs[0].Index(), vs[1].Index()) {
		t.Fatal("indexes differ")
	}
	// The file left behind is valid: a third manager loads it without decoding.
	m, _ := newTestManager(t, Options{CacheDir: dir})
	openT(t, m, src)
	if src.total.Load() != 0 {
		t.Fatal("index left by concurrent writers was not reusable")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("cache dir holds %d entries, want 1", len(entries))
	}
}

func TestUnwritableCacheDir(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fx := fixture(t, "small")
	// A cache dir below a regular file can never be created, even by root.
	m, lc := newTestManager(t, Options{CacheDir: filepath.Join(blocker, "cache")})
	s1 := newFakeSource(fx, "")
	v := openT(t, m, s1)
	if !bytes.Equal(readAll(t, v, 1<<16), s1.expected(t, 1)) {
		t.Fatal("wrong bytes")
	}
	s2 := newFakeSource(fx, "")
	openT(t, m, s2)
	if s2.total.Load() != 0 {
		t.Error("second open rescanned although the layout is kept in memory")
	}
	if n := lc.count(slog.LevelWarn); n != 1 {
		t.Errorf("%d warnings, want exactly 1:\n%s", n, lc.text())
	}
}

func TestNonFileSource(t *testing.T) {
	src := newFakeSource(fixture(t, "small"), "not/a/file.cram")
	m, _ := newTestManager(t, Options{})
	v := openT(t, m, src)
	if !bytes.Equal(readAll(t, v, 5000), src.expected(t, 1)) {
		t.Fatal("wrong bytes")
	}
	if entries, _ := os.ReadDir(m.opts.CacheDir); len(entries) != 0 {
		t.Fatal("index persisted for a source without a file identity")
	}
	m.checkInvariants(t, v)
}

func TestMismatchOnRebuild(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	src.flipOn, src.flipIdx = 2, 4 // the scan sees the true bytes, every rebuild other ones
	m, lc := newTestManager(t, Options{CacheSize: -1, Readahead: -1})
	v := openT(t, m, src)
	seg := v.Layout().Segments[4]
	p := make([]byte, 64)
	// The header and the EOF block do not depend on containers.
	if _, err := v.ReadAt(p, 0); err != nil {
		t.Fatal(err)
	}
	n, err := v.ReadAt(p, seg.Offset)
	if !errors.Is(err, ErrMismatch) || n != 0 {
		t.Fatalf("ReadAt of a changed segment = %d, %v; want ErrMismatch", n, err)
	}
	if !strings.Contains(err.Error(), "container 4") {
		t.Errorf("error lacks context: %v", err)
	}
	if lc.count(slog.LevelError) != 1 {
		t.Errorf("mismatch logged %d times at error level", lc.count(slog.LevelError))
	}
	// A read spanning into the bad segment returns only the good bytes.
	prev := v.Layout().Segments[3]
	n, err = v.ReadAt(make([]byte, 200), seg.Offset-10)
	if prev.CompLen >= 10 && (n != 10 || !errors.Is(err, ErrMismatch)) {
		t.Fatalf("spanning read = %d, %v", n, err)
	}
	m.checkInvariants(t, v)
}

func TestOpenErrors(t *testing.T) {
	fx := fixture(t, "small")
	broken := errors.New("decoder exploded")
	t.Run("source error", func(t *testing.T) {
		src := newFakeSource(fx, "")
		src.fail = broken
		m, _ := newTestManager(t, Options{})
		if _, err := m.Open(context.Background(), src); !errors.Is(err, broken) {
			t.Fatalf("Open = %v, want the source's error", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		m, _ := newTestManager(t, Options{})
		if _, err := m.Open(ctx, newFakeSource(fx, "")); !errors.Is(err, context.Canceled) {
			t.Fatalf("Open = %v, want context.Canceled", err)
		}
	})
	t.Run("bad framing", func(t *testing.T) {
		src := newFakeSource(fx, "")
		src.conts[1] = append(append([]byte(nil), src.conts[1]...), 9, 0, 0)
		m, _ := newTestManager(t, Options{})
		if _, err := m.Open(context.Background(), src); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Open = %v, want ErrInvalid", err)
		}
	})
	t.Run("empty header", func(t *testing.T) {
		src := newFakeSource(fx, "")
		src.header = nil
		m, _ := newTestManager(t, Options{})
		if _, err := m.Open(context.Background(), src); !errors.Is(err, ErrInvalid) {
			t.Fatalf("Open = %v, want ErrInvalid", err)
		}
	})
	t.Run("bad level", func(t *testing.T) {
		m, _ := newTestManager(t, Options{Level: 12})
		if _, err := m.Open(context.Background(), newFakeSource(fx, "")); !errors.Is(err, bgzf.ErrLevel) {
			t.Fatalf("Open = %v, want bgzf.ErrLevel", err)
		}
	})
}

// roundTripIndex is an index file with a segment of every digest kind:
// built, measured and not yet known, measured and learned; measured ones
// with a content sum and without.
func roundTripIndex() *layout.File {
	return &layout.File{
		Depends: layout.Depends(1, "md=1"),
		ID:      source.Identity{Dev: 7, Ino: 8, Size: 123, MTime: 456, CTime: 789, Head: [32]byte{1}, Tail: [32]byte{2}},
		Layout: layout.Layout{Level: 1, Header: layout.Segment{CompLen: 50, RawLen: 70, Digest: 9},
			Segments: []layout.Segment{{Offset: 50, CompLen: 10, RawLen: 20, Digest: 1}, {Offset: 60}, {Offset: 60, CompLen: 5, RawLen: 6, Digest: 2},
				{Offset: 65, CompLen: 7, RawLen: 3, NoDigest: true}, {Offset: 72, CompLen: 8, RawLen: 4, NoDigest: true},
				{Offset: 80, CompLen: 9, RawLen: 5, NoDigest: true, Sum: 0x1234, HasSum: true},
				{Offset: 89, CompLen: 2, RawLen: 1, NoDigest: true, HasSum: true}},
			Size: 91 + 28},
		HasBAI:  true,
		BAI:     []byte("BAI\x01rest"),
		Learned: map[int]uint32{4: 0xabcd, 5: 0x5678},
	}
}

func TestIndexRoundTrip(t *testing.T) {
	f := roundTripIndex()
	b := layout.Marshal(f)
	g, err := layout.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(g) != fmt.Sprint(f) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", g, f)
	}
	for cut := range len(b) {
		if _, err := layout.Parse(b[:cut]); !errors.Is(err, layout.ErrInvalid) {
			t.Fatalf("truncated to %d: %v", cut, err)
		}
	}
}

// FuzzReadIndex feeds arbitrary bytes to the index parser: it must never
// panic, and whatever it accepts must re-encode to the same bytes.
func FuzzReadIndex(f *testing.F) {
	f.Add(layout.Marshal(&layout.File{Depends: layout.Depends(1, "md=1"), Layout: layout.Layout{Header: layout.Segment{CompLen: 1, RawLen: 1}}}))
	measured := roundTripIndex()
	f.Add(layout.Marshal(measured))
	for i := range measured.Layout.Segments {
		measured.Layout.Segments[i].Sum, measured.Layout.Segments[i].HasSum = 0, false
	}
	f.Add(marshalFormat(measured, 5))
	for i := range measured.Layout.Segments {
		measured.Layout.Segments[i].NoDigest = false
	}
	measured.Learned = nil
	f.Add(marshalFormat(measured, 4))
	if _, err := exec.LookPath("samtools"); err == nil {
		src := newFakeSource(fixture(f, "small"), "")
		dir := f.TempDir()
		m := NewManager(Options{CacheDir: dir, Threads: 2}, nil)
		if _, err := m.Open(context.Background(), src); err != nil {
			f.Fatal(err)
		}
		m.Close()
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkIndexBytes(t, b)
		// The same bytes with a valid checksum reach the parser proper.
		if len(b) >= 4 {
			body := b[:len(b)-4]
			checkIndexBytes(t, binary.LittleEndian.AppendUint32(body[:len(body):len(body)], crc32.Checksum(body, castagnoli)))
		}
	})
}

func checkIndexBytes(t *testing.T, b []byte) {
	{
		idx, err := layout.Parse(b)
		if err != nil {
			if !errors.Is(err, layout.ErrInvalid) {
				t.Fatalf("error not wrapping layout.ErrInvalid: %v", err)
			}
			return
		}
		again := marshalFormat(idx, binary.LittleEndian.Uint32(b[8:]))
		if !bytes.Equal(again, b) {
			t.Fatal("accepted index does not re-encode to its bytes")
		}
		l := idx.Layout
		off := l.Header.CompLen
		for _, s := range l.Segments {
			if s.Offset != off || s.CompLen < 0 {
				t.Fatal("inconsistent layout accepted")
			}
			off += s.CompLen
		}
		if l.Size != off+28 {
			t.Fatal("inconsistent size")
		}
	}
}

// TestCancelledLeaderDoesNotFailOthers: when the read leading a segment
// build is interrupted, a concurrent reader of the same segment still gets
// its bytes.
func TestCancelledLeaderDoesNotFailOthers(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	m, _ := newTestManager(t, Options{Readahead: -1})
	v := openT(t, m, src)
	want := src.expected(t, 1)
	src.gateIdx, src.gate = 4, make(chan struct{})
	seg := v.Layout().Segments[4]
	ctx, cancel := context.WithCancel(context.Background())
	leader := make(chan error, 1)
	go func() {
		_, err := v.ReadAtContext(ctx, make([]byte, 10), seg.Offset)
		leader <- err
	}()
	for src.decodes[4].Load() < 2 { // the leader is inside the build
		time.Sleep(time.Millisecond)
	}
	other := make(chan error, 1)
	p := make([]byte, 100)
	go func() {
		_, err := v.ReadAt(p, seg.Offset+5)
		other <- err
	}()
	time.Sleep(20 * time.Millisecond) // let the second reader join the build
	cancel()
	if err := <-leader; !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted read = %v, want context.Canceled", err)
	}
	close(src.gate)
	if err := <-other; err != nil {
		t.Fatalf("second reader failed with the leader's cancellation: %v", err)
	}
	if !bytes.Equal(p, want[seg.Offset+5:seg.Offset+105]) {
		t.Fatal("wrong bytes")
	}
	m.checkInvariants(t, v)
}

// TestReadaheadDefault checks how Options.Readahead resolves per file.
func TestReadaheadDefault(t *testing.T) {
	for _, c := range []struct {
		name       string
		opts       Options
		maxSeg     int64
		wantResult int
	}{
		{"explicit", Options{Readahead: 5, Threads: 2, CacheSize: 1 << 20}, 1 << 30, 5},
		{"disabled", Options{Readahead: -1, Threads: 2}, 1 << 10, 0},
		{"small segments: 4x threads", Options{Threads: 2, CacheSize: 256 << 20}, 1 << 20, 8},
		{"quarter of the cache", Options{Threads: 2, CacheSize: 256 << 20}, 16 << 20, 4},
		{"large segments: threads", Options{Threads: 3, CacheSize: 256 << 20}, 64 << 20, 3},
		{"no cache: threads", Options{Threads: 2, CacheSize: -1}, 1 << 20, 2},
		{"empty file", Options{Threads: 2}, 0, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.opts.withDefaults().readahead(c.maxSeg); got != c.wantResult {
				t.Errorf("readahead(%d) = %d, want %d", c.maxSeg, got, c.wantResult)
			}
		})
	}
}

// TestView checks that View lends exactly the bytes ReadAt returns when the
// range lies in one piece, nil when it spans pieces, and refuses ranges
// outside the file.
func TestView(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	m, _ := newTestManager(t, Options{Readahead: -1})
	v := openT(t, m, src)
	l := v.Layout()
	size := v.Size()
	whole := make([]byte, size)
	if _, err := v.ReadAt(whole, 0); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	type rng struct {
		off    int64
		n      int
		single bool // within one piece
	}
	hdr := l.Header.CompLen
	seg := l.Segments[len(l.Segments)/2]
	cases := []rng{
		{0, int(hdr), true},
		{0, int(hdr) + 1, false},
		{seg.Offset, int(seg.CompLen), true},
		{seg.Offset + 1, int(seg.CompLen) - 2, true},
		{seg.Offset + seg.CompLen - 1, 2, false},
		{size - 28, 28, true},
		{size - 29, 29, false},
		{size - 10, 10, true},
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		off := rnd.Int64N(size)
		n := 1 + rnd.IntN(int(min(size-off, 200000)))
		cases = append(cases, rng{off: off, n: n, single: false})
	}
	for i, c := range cases {
		parts, release, err := v.View(ctx, c.off, c.n)
		if err != nil {
			t.Fatalf("case %d: View(%d, %d): %v", i, c.off, c.n, err)
		}
		defer release()
		if i < 8 && (len(parts) == 1) != c.single {
			t.Errorf("case %d: View(%d, %d) in %d pieces, want one: %v", i, c.off, c.n, len(parts), c.single)
		}
		for _, p := range parts {
			if len(p) == 0 {
				t.Fatalf("case %d: View(%d, %d) has an empty piece", i, c.off, c.n)
			}
		}
		if got := bytes.Join(parts, nil); !bytes.Equal(got, whole[c.off:c.off+int64(c.n)]) {
			t.Fatalf("case %d: View(%d, %d) differs from ReadAt", i, c.off, c.n)
		}
	}
	for _, c := range []rng{{-1, 1, false}, {0, 0, false}, {size - 1, 2, false}, {size, 1, false}} {
		if _, release, err := v.View(ctx, c.off, c.n); !errors.Is(err, ErrInvalid) || release == nil {
			t.Errorf("View(%d, %d) error %v, want ErrInvalid", c.off, c.n, err)
		}
	}
}

// TestRecycledSegmentsStayIntact reads one file from many goroutines
// through a cache of a few segments, so segments are evicted and their
// storage recycled while other readers still hold them (ReadAt copying,
// View lending): every byte must still be right.
func TestRecycledSegmentsStayIntact(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	ref, _ := newTestManager(t, Options{CacheSize: -1, Readahead: -1})
	want := make([]byte, openT(t, ref, src).Size())
	if _, err := openT(t, ref, src).ReadAt(want, 0); err != nil {
		t.Fatal(err)
	}
	m, _ := newTestManager(t, Options{Threads: 3, Readahead: 2})
	v := openT(t, m, src)
	var maxSeg int64
	for _, s := range v.Layout().Segments {
		maxSeg = max(maxSeg, s.CompLen)
	}
	m2, _ := newTestManager(t, Options{Threads: 3, Readahead: 2, CacheSize: 3 * maxSeg, CacheDir: m.opts.CacheDir})
	v = openT(t, m2, src)
	size := v.Size()
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(g), 7))
			p := make([]byte, 70000)
			for range 300 {
				off := rnd.Int64N(size)
				n := 1 + rnd.IntN(int(min(size-off, int64(len(p)))))
				if g%2 == 0 {
					parts, release, err := v.View(ctx, off, n)
					if err != nil {
						t.Error(err)
						return
					}
					time.Sleep(time.Duration(rnd.IntN(200)) * time.Microsecond)
					ok := bytes.Equal(bytes.Join(parts, nil), want[off:off+int64(n)])
					release()
					if !ok {
						t.Errorf("View(%d, %d): bytes changed under the reader", off, n)
						return
					}
					continue
				}
				if _, err := v.ReadAt(p[:n], off); err != nil {
					t.Error(err)
					return
				}
				if !bytes.Equal(p[:n], want[off:off+int64(n)]) {
					t.Errorf("ReadAt(%d, %d): wrong bytes", off, n)
					return
				}
			}
		}()
	}
	wg.Wait()
	if st := m2.CacheStats(); st.Evictions == 0 {
		t.Fatalf("no evictions (%+v): the test did not exercise recycling", st)
	}
	// Whether storage is free at the end depends on timing (a build may
	// just have taken it); that some build reused released storage does
	// not.
	if n, _ := m2.pool.Free(); n == 0 && m2.pool.Reused() == 0 {
		t.Fatal("no storage came back to the pool")
	}
}

// TestReadaheadRamp checks that the default readahead window starts at the
// segment being read for a short run of reads (a region query), however
// many workers there are, and widens to the file's readahead as the run
// goes on.
func TestReadaheadRamp(t *testing.T) {
	w := newWindowTest(t)
	lay, segs, maxAhead := w.lay, w.segs, w.v.readahead
	built := func(i int) bool { return i < len(segs) && w.src.decodes[i].Load() > 1 }
	w.off = segs[0].Offset
	w.read()
	w.read()
	c := lay.SegmentAt(w.off) // where the window of the last read starts
	time.Sleep(100 * time.Millisecond)
	for i := c + 1; i < len(segs); i++ {
		if built(i) {
			t.Fatalf("a run of 2 reads ending in segment %d built segment %d", c, i)
		}
	}
	for range 4 * rampReads * maxAhead {
		w.read()
	}
	checkWindow(t, segs, lay.SegmentAt(w.off), maxAhead, built)
}

// TestEOFCheckResumesRun: a reader of the whole file that reads its first
// bytes, then the EOF block, then goes on from where it stopped (htslib
// opening a BAM) keeps the run it began at the file's start: its window
// widens to the file's readahead as TestReadaheadRamp's does, rather than
// staying a region query's.
func TestEOFCheckResumesRun(t *testing.T) {
	w := newWindowTest(t)
	maxAhead := w.v.readahead
	for w.off < w.segs[0].Offset+int64(len(w.p)) {
		w.read()
	}
	if _, err := w.v.ReadAt(make([]byte, 28), w.v.Size()-28); err != nil {
		t.Fatal(err)
	}
	for range 4 * rampReads * maxAhead {
		w.read()
	}
	c := w.lay.SegmentAt(w.off)
	if c+maxAhead >= len(w.segs)-1 {
		t.Fatalf("fixture too short: the reads reached segment %d of %d", c, len(w.segs))
	}
	checkWindow(t, w.segs, c, maxAhead, w.built)
	w.done()
}

// checkWindow waits until built reports the n segments holding data from
// segment c on (a readahead window: empty segments are skipped) built,
// and fails t if they are not within 5 s or if the next segment holding
// data is built too.
func checkWindow(t *testing.T, segs []layout.Segment, c, n int, built func(int) bool) {
	t.Helper()
	var window []int
	beyond := c
	for ; beyond < len(segs) && len(window) < n; beyond++ {
		if segs[beyond].CompLen > 0 {
			window = append(window, beyond)
		}
	}
	for beyond < len(segs) && segs[beyond].CompLen == 0 {
		beyond++
	}
	if beyond >= len(segs) {
		t.Fatalf("fixture too short: reads reached segment %d of %d", c, len(segs))
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, i := range window {
		for !built(i) {
			if time.Now().After(deadline) {
				t.Fatalf("segment %d (window of %d from %d) was not built", i, n, c)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if built(beyond) {
		t.Fatalf("segment %d built, beyond a window of %d from %d", beyond, n, c)
	}
}

// TestSequentialRunKeepsPassedSegments checks that the segments a
// sequential reader has left behind stay in a cache with room for them,
// with the bytes unchanged, and that reads out of order keep every
// segment they built.
func TestSequentialRunKeepsPassedSegments(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	ref, _ := newTestManager(t, Options{CacheSize: -1, Readahead: -1})
	want := readAll(t, openT(t, ref, src), 1<<20)

	m, _ := newTestManager(t, Options{Threads: 1, CacheSize: 1 << 30})
	m.reorder = 16 << 10
	v := openT(t, m, src)
	segs := v.Layout().Segments
	built := 0
	for _, s := range segs {
		if s.CompLen > 0 {
			built++
		}
	}
	for pass := range 2 {
		if got := readAll(t, v, 4096); !bytes.Equal(got, want) {
			t.Fatalf("pass %d: wrong bytes", pass)
		}
		st := m.CacheStats()
		if st.Evictions != 0 {
			t.Fatalf("pass %d: %d evictions from a cache larger than the file", pass, st.Evictions)
		}
		if st.Entries != built+1 {
			t.Errorf("pass %d: %d segments cached after a sequential read, want the header and %d", pass, st.Entries, built)
		}
	}

	m2, _ := newTestManager(t, Options{Threads: 1, CacheSize: 1 << 30, Readahead: -1})
	m2.reorder = 16 << 10
	v2 := openT(t, m2, src)
	p := make([]byte, 1)
	for _, i := range rand.New(rand.NewPCG(3, 4)).Perm(len(segs)) {
		if segs[i].CompLen == 0 {
			continue
		}
		if _, err := v2.ReadAt(p, segs[i].Offset); err != nil {
			t.Fatal(err)
		}
		if p[0] != want[segs[i].Offset] {
			t.Fatalf("segment %d: wrong byte", i)
		}
	}
	if st := m2.CacheStats(); st.Entries != built {
		t.Errorf("reads out of order left %d of %d segments cached", st.Entries, built)
	}
}

// TestReadersTakingTurnsBuildOnce has two sequential readers take turns on
// one file, in different halves: neither may make the other's readahead
// count as left behind, so every container is decoded at most once.
func TestReadersTakingTurnsBuildOnce(t *testing.T) {
	_, v, src, want := buildOnceSetup(t, 16<<10)
	before := decodeCounts(src)
	size := v.Size()
	offs := []int64{0, size / 2}
	ends := []int64{size / 2, size}
	p := make([]byte, 8192)
	for offs[0] < ends[0] || offs[1] < ends[1] {
		for r, reads := range []int{2, 1} {
			for range reads {
				if offs[r] >= ends[r] {
					break
				}
				n := int(min(int64(len(p)), ends[r]-offs[r]))
				if _, err := v.ReadAt(p[:n], offs[r]); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(p[:n], want[offs[r]:offs[r]+int64(n)]) {
					t.Fatalf("reader %d: wrong bytes at %d", r, offs[r])
				}
				offs[r] += int64(n)
			}
		}
	}
	checkDecodedOnce(t, src, before)
}

// TestReorderedReadsBuildOnce reads a file sequentially in pairs of reads
// that arrive swapped, as the kernel's concurrent readahead requests may:
// the run must go on, so that readahead for it is not rebuilt.
func TestReorderedReadsBuildOnce(t *testing.T) {
	_, v, src, want := buildOnceSetup(t, 64<<10)
	before := decodeCounts(src)
	size := v.Size()
	const chunk = 4096
	p := make([]byte, chunk)
	for off := int64(0); off < size; off += 2 * chunk {
		for _, o := range []int64{off + chunk, off} {
			if o >= size {
				continue
			}
			n := int(min(chunk, size-o))
			if _, err := v.ReadAt(p[:n], o); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(p[:n], want[o:o+int64(n)]) {
				t.Fatalf("wrong bytes at %d", o)
			}
		}
	}
	checkDecodedOnce(t, src, before)
}

// buildOnceSetup opens the synth fixture through a manager of two workers,
// a cache larger than the file and the given reorder window, and returns
// the file's bytes as an uncached reader sees them.
func buildOnceSetup(t *testing.T, reorder int64) (*Manager, *VirtualBAM, *fakeSource, []byte) {
	t.Helper()
	src := newFakeSource(fixture(t, "synth"), "")
	ref, _ := newTestManager(t, Options{CacheSize: -1, Readahead: -1})
	want := readAll(t, openT(t, ref, src), 1<<20)
	m, _ := newTestManager(t, Options{Threads: 2, CacheSize: 1 << 30})
	m.reorder = reorder
	return m, openT(t, m, src), src, want
}

// decodeCounts returns how often each container of src has been decoded.
func decodeCounts(src *fakeSource) []int64 {
	n := make([]int64, len(src.decodes))
	for i := range n {
		n[i] = src.decodes[i].Load()
	}
	return n
}

// checkDecodedOnce fails t for every container decoded more than once
// since before, after giving readahead time to finish.
func checkDecodedOnce(t *testing.T, src *fakeSource, before []int64) {
	t.Helper()
	time.Sleep(50 * time.Millisecond) // readahead still running
	for i, n := range decodeCounts(src) {
		if n-before[i] > 1 {
			t.Errorf("container %d decoded %d times", i, n-before[i])
		}
	}
}

// TestCloseWaitsForReadahead checks that Close returns only once the
// segments being built ahead of a reader are no longer being built, even
// when a build is slow to notice that Close cancelled it.
func TestCloseWaitsForReadahead(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	src.gateIdx, src.gate, src.gateHold = 0, make(chan struct{}), true
	release := openGate(t, src)
	m, _ := newTestManager(t, Options{Readahead: 1, Threads: 2})
	v := openT(t, m, src)
	// Two sequential reads in the header: segment 0 is built ahead.
	for _, off := range []int64{0, 10} {
		if _, err := v.ReadAt(make([]byte, 10), off); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for src.decodes[0].Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("segment 0 was not built ahead")
		}
		time.Sleep(time.Millisecond)
	}
	closed := make(chan struct{})
	go func() {
		m.Close()
		close(closed)
	}()
	// The build ahead is held: Close must not return meanwhile.
	select {
	case <-closed:
		t.Fatal("Close returned while a segment was being built ahead")
	case <-time.After(200 * time.Millisecond):
	}
	release()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return after the build ahead ended")
	}
	v.mu.Lock()
	n := len(v.ahead)
	v.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d segments still being built ahead after Close", n)
	}
}

// TestOpeningReadBuildsTail: the read at offset 0 (a reader opening the
// file) builds, in the background, the segment holding the page before the
// EOF block, which htslib reads next to check the EOF block; nothing else
// beyond what it reads, and nothing without readahead.
func TestOpeningReadBuildsTail(t *testing.T) {
	for _, ra := range []int{0, -1} {
		src := newFakeSource(fixture(t, "synth"), "")
		m, _ := newTestManager(t, Options{Threads: 2, Readahead: ra})
		v := openT(t, m, src)
		segs := v.Layout().Segments
		last := len(segs) - 1
		for segs[last].CompLen == 0 {
			last--
		}
		base := make([]int64, len(segs))
		for i := range segs {
			base[i] = src.decodes[i].Load()
		}
		if _, err := v.ReadAt(make([]byte, 16), 0); err != nil {
			t.Fatal(err)
		}
		if ra < 0 {
			m.Close() // waits for any build ahead
		} else {
			for deadline := time.Now().Add(10 * time.Second); src.decodes[last].Load() == base[last]; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the last segment (%d) was not built after the read at 0", last)
				}
			}
			m.Close()
		}
		for i := range segs {
			built := src.decodes[i].Load() - base[i]
			want := int64(0)
			if i == last && ra == 0 {
				want = 1
			}
			if built != want {
				t.Errorf("readahead %d: segment %d of %d built %d times after a read at 0, want %d", ra, i, len(segs), built, want)
			}
		}
		// The EOF check reads it from the cache.
		if ra == 0 {
			page := (v.Size() - 28) &^ (tailPage - 1)
			if _, err := v.ReadAt(make([]byte, v.Size()-page), page); err != nil {
				t.Fatal(err)
			}
			if n := src.decodes[last].Load() - base[last]; n != 1 {
				t.Errorf("the EOF check built the last segment again (%d builds)", n)
			}
		}
	}
}

// TestOpeningReadBuildsSecondAfterTail: when the first segment holds at
// least the reorder window's bytes (long reads), the run cannot open its
// window before that segment is built, so the read at offset 0 also builds
// the second segment in the background, once the tail is built and not
// before (the reader checks the EOF block first). When the first segment
// is shorter than the window, or the cache cannot keep the whole file (a
// region query would build the second segment at every open), it builds
// the tail alone.
func TestOpeningReadBuildsSecondAfterTail(t *testing.T) {
	size := openT(t, func() *Manager { m, _ := newTestManager(t, Options{}); return m }(), newFakeSource(fixture(t, "synth"), "")).Size()
	for _, c := range []struct {
		long  bool
		cache int64
	}{{true, 0}, {false, 0}, {true, size / 2}} {
		long := c.long && c.cache == 0
		src := newFakeSource(fixture(t, "synth"), "")
		m, _ := newTestManager(t, Options{Threads: 2, CacheSize: c.cache})
		v := openT(t, m, src)
		if c.cache > 0 && (m.keepsFile(v.size, v.maxSeg, v.readahead) || m.segmentsThatFit(v.maxSeg) <= v.readahead+2) {
			t.Fatalf("cache of %d bytes for a file of %d: keeps the file or has no room for the tail", c.cache, size)
		}
		segs := v.Layout().Segments
		last := len(segs) - 1
		for segs[last].CompLen == 0 {
			last--
		}
		first := 0
		for segs[first].CompLen == 0 {
			first++
		}
		second := first + 1
		for segs[second].CompLen == 0 {
			second++
		}
		if second >= last {
			t.Fatalf("fixture too small: %d segments", len(segs))
		}
		m.reorder = segs[first].CompLen
		if !c.long {
			m.reorder++
		}
		src.gateIdx, src.gate = last, make(chan struct{})
		base := decodeCounts(src)
		if _, err := v.ReadAt(make([]byte, 16), 0); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(10 * time.Second); src.decodes[last].Load() == base[last]; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the last segment (%d) was not built after the read at 0", last)
			}
		}
		time.Sleep(50 * time.Millisecond) // time for a wrong build of the second
		if n := src.decodes[second].Load() - base[second]; n != 0 {
			t.Errorf("first segment of %d bytes, window %d: the second segment was built (%d times) while the tail was being built", segs[first].CompLen, m.reorder, n)
		}
		close(src.gate)
		if long {
			for deadline := time.Now().Add(10 * time.Second); src.decodes[second].Load() == base[second]; time.Sleep(time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("first segment of %d bytes, window %d: the second segment (%d) was not built after the tail", segs[first].CompLen, m.reorder, second)
				}
			}
		}
		// Every build ahead done (Close would cancel one the tail started).
		for deadline := time.Now().Add(10 * time.Second); aheadCount(v) > 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("builds ahead still running after 10 s")
			}
		}
		m.Close()
		for i := range segs {
			want := int64(0)
			if i == last || i == second && long {
				want = 1
			}
			if n := src.decodes[i].Load() - base[i]; n != want {
				t.Errorf("first segment of %d bytes, window %d: segment %d built %d times after a read at 0, want %d", segs[first].CompLen, m.reorder, i, n, want)
			}
		}
	}
}

// aheadCount is how many segments of v are being built ahead.
func aheadCount(v *VirtualBAM) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.ahead)
}

// TestReadaheadFollowsReorderedReads: reads that arrive in windows of 4,
// each in reverse order (as the kernel's concurrent readahead requests
// may), are a sequential run: the readahead ramps and builds segments
// ahead of the furthest read, as for reads in order.
func TestReadaheadFollowsReorderedReads(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	m, _ := newTestManager(t, Options{Threads: 2})
	m.reorder = 64 << 10 // more than the reads in flight, less than the run
	v := openT(t, m, src)
	lay := v.Layout()
	before := decodeCounts(src) // the scan's
	const chunk, inFlight = 4096, 4
	p := make([]byte, chunk)
	var end int64
	for w := int64(0); w < 4*rampReads; w++ {
		base := lay.Segments[0].Offset + w*inFlight*chunk
		for k := int64(inFlight - 1); k >= 0; k-- {
			if _, err := v.ReadAt(p, base+k*chunk); err != nil {
				t.Fatal(err)
			}
		}
		end = base + inFlight*chunk
	}
	if end >= v.Size()/2 {
		t.Fatalf("fixture too small: reads reached %d of %d bytes", end, v.Size())
	}
	next := lay.SegmentAt(end) + 1
	for next < len(lay.Segments) && lay.Segments[next].CompLen == 0 {
		next++
	}
	for deadline := time.Now().Add(10 * time.Second); src.decodes[next].Load() == before[next]; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %d reordered reads up to segment %d, segment %d was not built ahead", 4*rampReads*inFlight, next-1, next)
		}
	}
}

// TestReadaheadWaitsForLongRun: a run of many reads that together read
// less than the reorder window (a region query: the kernel's readahead
// already asks for what follows) builds nothing beyond the segment being
// read, however many reads it makes; past the window's bytes the
// readahead builds ahead.
func TestReadaheadWaitsForLongRun(t *testing.T) {
	src := newFakeSource(fixture(t, "synth"), "")
	m, _ := newTestManager(t, Options{Threads: 2})
	const chunk = 4096
	m.reorder = 256 << 10
	v := openT(t, m, src)
	lay := v.Layout()
	if v.Size() < 4*m.reorder {
		t.Fatalf("fixture too small: %d bytes", v.Size())
	}
	before := decodeCounts(src) // the scan's
	builtBeyond := func(c int) int {
		for i := c + 1; i < len(lay.Segments); i++ {
			if src.decodes[i].Load() > before[i] {
				return i
			}
		}
		return -1
	}
	p := make([]byte, chunk)
	start := lay.Segments[0].Offset
	off := start
	reads := 0
	for ; off+chunk-start < m.reorder; off += chunk {
		if _, err := v.ReadAt(p, off); err != nil {
			t.Fatal(err)
		}
		reads++
	}
	if reads < 4*rampReads {
		t.Fatalf("only %d reads: the window would not have grown anyway", reads)
	}
	c := lay.SegmentAt(off - 1)
	time.Sleep(100 * time.Millisecond)
	if i := builtBeyond(c); i >= 0 {
		t.Fatalf("a run of %d reads, %d bytes, ending in segment %d built segment %d ahead", reads, off-start, c, i)
	}
	for range 4 * rampReads {
		if _, err := v.ReadAt(p, off); err != nil {
			t.Fatal(err)
		}
		off += chunk
	}
	c = lay.SegmentAt(off - 1)
	for deadline := time.Now().Add(10 * time.Second); builtBeyond(c) < 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a run of %d bytes ending in segment %d built nothing ahead", off-start, c)
		}
	}
}

// TestCacheBoundCoversFreeStorage: the storage kept for reuse (the
// segments evicted, which no reader holds) counts against the cache size
// with the segments cached and the builds in flight: a file read through
// a cache smaller than it never holds more than the cache size in all.
func TestCacheBoundCoversFreeStorage(t *testing.T) {
	const cacheSize = 512 << 10
	m, _ := newTestManager(t, Options{Threads: 1, CacheSize: cacheSize, Readahead: -1, Level: Stored})
	v := openT(t, m, newFakeSource(fixture(t, "synth"), ""))
	if v.Size() < 4*cacheSize {
		t.Fatalf("fixture of %d bytes, want at least %d", v.Size(), 4*cacheSize)
	}
	p := make([]byte, 4096)
	for off := int64(0); off < v.Size(); off += int64(len(p)) {
		if _, err := v.ReadAt(p, off); err != nil && !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		st := m.CacheStats()
		_, free := m.pool.Free()
		if held := st.Bytes + st.Reserved + free; held > cacheSize {
			t.Fatalf("after the read at %d: %d bytes cached, %d reserved and %d free for reuse, %d in all: more than the cache size %d",
				off, st.Bytes, st.Reserved, free, held, cacheSize)
		}
	}
	if m.pool.Reused() == 0 {
		t.Error("no build reused the storage of an evicted segment")
	}
}

// TestLeavingSegmentsKeptForBuilds: a sequential reader leaves segments
// behind in bursts, while the builds of its readahead window wait for
// workers: the storage of as many segments as a quarter of the cache
// holds (what the window may hold) is kept for those builds rather than
// left to the collector, so that streaming allocates no fresh storage.
func TestLeavingSegmentsKeptForBuilds(t *testing.T) {
	const cacheSize, seg, burst = 1 << 20, 30 << 10, 8
	m, _ := newTestManager(t, Options{CacheSize: cacheSize})
	for k := range burst {
		b := m.pool.Get(seg)
		b.B = append(b.B, make([]byte, seg)...)
		m.cache.Add(cache.Key{File: "f", Segment: k}, b)
		b.Release()
	}
	for k := range burst {
		m.cache.Remove(cache.Key{File: "f", Segment: k})
	}
	before := m.pool.Reused()
	for range burst {
		defer m.pool.Get(seg).Release()
	}
	if got := m.pool.Reused() - before; got != burst {
		t.Errorf("%d of %d builds after a burst of %d segments of %d KiB left a %d KiB cache reused their storage",
			got, burst, burst, seg>>10, cacheSize>>10)
	}
}
