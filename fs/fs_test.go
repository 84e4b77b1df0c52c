package fs

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cramfs/cramfs/internal/corpus"
)

// errFakeCorrupt stands for a decoder's corruption error.
var errFakeCorrupt = errors.New("fakecram: corrupt container")

// fakeBAM is a deterministic pseudo-random BAMFile.
type fakeBAM struct {
	data, index []byte
}

func (f *fakeBAM) Size() int64   { return int64(len(f.data)) }
func (f *fakeBAM) Index() []byte { return f.index }
func (f *fakeBAM) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= int64(len(f.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// fakeFor derives the BAM of a CRAM from its content: the size and bytes
// depend on a hash of the content, and sizeHint (if > 0) fixes the size.
func fakeFor(content []byte, sizeHint int) *fakeBAM {
	h := fnv.New64a()
	h.Write(content)
	seed := h.Sum64()
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	n := sizeHint
	if n <= 0 {
		n = 150_000 + int(seed%200_000)
	}
	data := make([]byte, n)
	for i := 0; i+8 <= n; i += 8 {
		v := r.Uint64()
		for j := range 8 {
			data[i+j] = byte(v >> (8 * j))
		}
	}
	for i := n &^ 7; i < n; i++ {
		data[i] = byte(r.Uint32())
	}
	index := make([]byte, 1000+int(seed%3000))
	for i := range index {
		index[i] = byte(r.Uint32())
	}
	return &fakeBAM{data: data, index: index}
}

// fakeOpener serves fakeFor(content) for each CRAM, read through the
// mount's root and checked on the descriptor, caching by path and
// identity as the Opener contract asks. CRAMs whose content starts with
// "BROKEN" fail with errFakeCorrupt. Once a version was opened it knows
// its index (.bai).
type fakeOpener struct {
	mu       sync.Mutex
	cache    map[string]*fakeBAM
	opens    int
	sizeHint int
}

func fakeKey(rel string, st *syscall.Stat_t) string {
	return fmt.Sprintf("%s|%d|%d|%d|%d", rel, st.Dev, st.Ino, st.Size, st.Mtim.Nano())
}

func (o *fakeOpener) OpenBAM(ctx context.Context, ref CRAMRef) (BAMFile, error) {
	key := fakeKey(ref.Rel, &ref.Stat)
	o.mu.Lock()
	defer o.mu.Unlock()
	if f, ok := o.cache[key]; ok {
		return f, nil
	}
	fh, err := ref.Root.OpenFile(ref.Rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", ref.Rel)
	}
	if fakeKey(ref.Rel, fi.Sys().(*syscall.Stat_t)) != key {
		return nil, fmt.Errorf("%s: %w", ref.Rel, ErrChanged)
	}
	content, err := io.ReadAll(fh)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(content, []byte("BROKEN")) {
		return nil, fmt.Errorf("decoding %s: container at offset 26: %w", ref.Rel, errFakeCorrupt)
	}
	if o.cache == nil {
		o.cache = map[string]*fakeBAM{}
	}
	f := fakeFor(content, o.sizeHint)
	o.cache[key] = f
	o.opens++
	return f, nil
}

// KnownIndexExt implements IndexKnower: .bai for the versions opened.
func (o *fakeOpener) KnownIndexExt(ref CRAMRef) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.cache[fakeKey(ref.Rel, &ref.Stat)]
	return ".bai", ok
}

// mountT mounts src on a fresh directory and unmounts it at cleanup.
func mountT(tb testing.TB, src string, op Opener, opts Options) string {
	tb.Helper()
	corpus.RequireFUSE(tb)
	mnt := tb.TempDir()
	s, err := Mount(src, mnt, op, opts)
	if err != nil {
		tb.Fatalf("Mount: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Unmount(); err != nil {
			tb.Errorf("Unmount: %v", err)
			_ = Unmount(mnt)
		}
	})
	return mnt
}

func writeFile(tb testing.TB, p string, content string) {
	tb.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// replaceFile atomically replaces p by new content (a new inode).
func replaceFile(tb testing.TB, p, content string) {
	tb.Helper()
	tmp := p + ".tmp"
	writeFile(tb, tmp, content)
	if err := os.Rename(tmp, p); err != nil {
		tb.Fatal(err)
	}
}

// makeTree builds the standard source tree and returns its path.
func makeTree(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "a.cram"), "CRAM a content")
	writeFile(t, filepath.Join(src, "a.cram.crai"), "index a")
	writeFile(t, filepath.Join(src, "a.crai"), "index a2")
	writeFile(t, filepath.Join(src, "readme.txt"), "hello, pass-through\n")
	writeFile(t, filepath.Join(src, "sub", "b.cram"), "CRAM b content")
	writeFile(t, filepath.Join(src, "sub", "b.bai"), "a real b.bai, shown instead of the synthetic one")
	writeFile(t, filepath.Join(src, "sub", "deep", "c.txt"), "deep file")
	writeFile(t, filepath.Join(src, "bad.cram"), "BROKEN cram")
	must(t, os.Symlink("/etc/passwd", filepath.Join(src, "link-out")))
	must(t, os.Symlink("readme.txt", filepath.Join(src, "link-in.txt")))
	must(t, os.Symlink(filepath.Join(src, "sub", "b.cram"), filepath.Join(src, "blink.cram")))
	must(t, os.Symlink("..", filepath.Join(src, "sub", "loop")))
	must(t, os.Symlink("deep", filepath.Join(src, "sub", "deeplink")))
	must(t, os.Symlink("/", filepath.Join(src, "rootlink")))
	must(t, syscall.Mkfifo(filepath.Join(src, "fifo"), 0o644))
	return src
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func readDirNames(tb testing.TB, dir string) []string {
	tb.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatalf("ReadDir %s: %v", dir, err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func expectedBAM(tb testing.TB, cram string) *fakeBAM {
	tb.Helper()
	content, err := os.ReadFile(cram)
	if err != nil {
		tb.Fatal(err)
	}
	return fakeFor(content, 0)
}

func TestMirror(t *testing.T) {
	src := makeTree(t)
	mnt := mountT(t, src, &fakeOpener{}, Options{})

	for _, tc := range []struct {
		dir  string
		want []string
	}{
		// No CRAM was opened yet: no index is listed (see IndexKnower).
		{".", []string{"a.bam", "bad.bam", "blink.bam", "link-in.txt", "readme.txt", "sub"}},
		{"sub", []string{"b.bai", "b.bam", "deep", "deeplink", "loop"}},
		{"sub/deep", []string{"c.txt"}},
		{"sub/deeplink", []string{"c.txt"}},
	} {
		if got := readDirNames(t, filepath.Join(mnt, tc.dir)); !slices.Equal(got, tc.want) {
			t.Errorf("ReadDir(%s) = %q, want %q", tc.dir, got, tc.want)
		}
	}

	// blink.bai would lead to the real sub/b.bai, not to b.cram's index.
	for _, name := range []string{"a.cram", "a.cram.crai", "a.crai", "link-out", "rootlink", "fifo", "sub/b.cram", "nope.bam", "nope.bam.bai", "blink.bai", "blink.cram"} {
		if _, err := os.Stat(filepath.Join(mnt, name)); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("Stat(%s) = %v, want ENOENT", name, err)
		}
	}

	// Links are links, an absolute one below the source made relative.
	for name, want := range map[string]string{
		"blink.bam": "sub/b.bam", "blink.bam.bai": "sub/b.bam.bai", "link-in.txt": "readme.txt", "sub/loop": "..", "sub/deeplink": "deep",
	} {
		if got, err := os.Readlink(filepath.Join(mnt, name)); err != nil || got != want {
			t.Errorf("Readlink(%s) = %q, %v; want %q", name, got, err, want)
		}
	}

	// Synthetic files: sizes, bytes, mode, times, owners, inodes.
	for _, tc := range []struct{ cram, bam string }{
		{"a.cram", "a.bam"}, {"sub/b.cram", "sub/b.bam"}, {"sub/b.cram", "blink.bam"},
	} {
		want := expectedBAM(t, filepath.Join(src, tc.cram))
		cst, err := os.Stat(filepath.Join(src, tc.cram))
		must(t, err)
		bst, err := os.Stat(filepath.Join(mnt, tc.bam))
		must(t, err)
		ist, err := os.Stat(filepath.Join(mnt, tc.bam+".bai"))
		must(t, err)
		if bst.Size() != want.Size() || ist.Size() != int64(len(want.index)) {
			t.Errorf("%s: sizes %d, %d; want %d, %d", tc.bam, bst.Size(), ist.Size(), want.Size(), len(want.index))
		}
		if bst.Mode() != 0o444 || ist.Mode() != 0o444 {
			t.Errorf("%s: modes %v %v, want -r--r--r--", tc.bam, bst.Mode(), ist.Mode())
		}
		if !bst.ModTime().Equal(cst.ModTime()) || !ist.ModTime().Equal(cst.ModTime()) {
			t.Errorf("%s: mtime %v, want the CRAM's %v", tc.bam, bst.ModTime(), cst.ModTime())
		}
		bsys, isys := bst.Sys().(*syscall.Stat_t), ist.Sys().(*syscall.Stat_t)
		csys := cst.Sys().(*syscall.Stat_t)
		if bsys.Uid != csys.Uid || bsys.Gid != csys.Gid {
			t.Errorf("%s: owner %d:%d, want %d:%d", tc.bam, bsys.Uid, bsys.Gid, csys.Uid, csys.Gid)
		}
		if bsys.Ino == isys.Ino || bsys.Ino <= 1 {
			t.Errorf("%s: inode numbers bam %d bai %d", tc.bam, bsys.Ino, isys.Ino)
		}
		got, err := os.ReadFile(filepath.Join(mnt, tc.bam))
		must(t, err)
		if !bytes.Equal(got, want.data) {
			t.Errorf("%s: content differs from the fake (len %d vs %d)", tc.bam, len(got), len(want.data))
		}
		got, err = os.ReadFile(filepath.Join(mnt, tc.bam+".bai"))
		must(t, err)
		if !bytes.Equal(got, want.index) {
			t.Errorf("%s.bai: content differs from the fake index", tc.bam)
		}
	}

	// Once opened, the index is listed under both names; bad.bam's never.
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{".", []string{"a.bai", "a.bam", "a.bam.bai", "bad.bam", "blink.bam", "blink.bam.bai", "link-in.txt", "readme.txt", "sub"}},
		{"sub", []string{"b.bai", "b.bam", "b.bam.bai", "deep", "deeplink", "loop"}},
	} {
		if got := readDirNames(t, filepath.Join(mnt, tc.dir)); !slices.Equal(got, tc.want) {
			t.Errorf("after opening, ReadDir(%s) = %q, want %q", tc.dir, got, tc.want)
		}
	}

	// Inode numbers are stable and agree with readdir.
	ents, err := os.ReadDir(mnt)
	must(t, err)
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			if e.Name() == "bad.bam" || e.Name() == "bad.bam.bai" {
				continue
			}
			t.Fatal(err)
		}
		st, err := os.Lstat(filepath.Join(mnt, e.Name()))
		must(t, err)
		if info.Sys().(*syscall.Stat_t).Ino != st.Sys().(*syscall.Stat_t).Ino {
			t.Errorf("%s: inode changed between stats", e.Name())
		}
	}

	// Pass-through files.
	for _, tc := range []struct{ name, src string }{
		{"readme.txt", "readme.txt"}, {"link-in.txt", "readme.txt"}, {"sub/deep/c.txt", "sub/deep/c.txt"},
		{"sub/deeplink/c.txt", "sub/deep/c.txt"}, {"sub/b.bai", "sub/b.bai"}, {"sub/loop/readme.txt", "readme.txt"},
	} {
		got, err := os.ReadFile(filepath.Join(mnt, tc.name))
		must(t, err)
		want, err := os.ReadFile(filepath.Join(src, tc.src))
		must(t, err)
		if !bytes.Equal(got, want) {
			t.Errorf("%s = %q, want %q", tc.name, got, want)
		}
		st, err := os.Stat(filepath.Join(mnt, tc.name))
		must(t, err)
		if st.Mode() != 0o444 || st.Size() != int64(len(want)) {
			t.Errorf("%s: mode %v size %d", tc.name, st.Mode(), st.Size())
		}
	}
	if st, err := os.Stat(filepath.Join(mnt, "sub")); err != nil || !st.IsDir() || st.Mode().Perm() != 0o555 {
		t.Errorf("Stat(sub) = %v, %v; want a 0555 directory", st, err)
	}
}

func TestReadOffsets(t *testing.T) {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "x.cram"), "offsets")
	mnt := mountT(t, src, &fakeOpener{}, Options{})
	want := expectedBAM(t, filepath.Join(src, "x.cram"))

	for _, name := range []string{"x.bam", "x.bam.bai"} {
		data := want.data
		if strings.HasSuffix(name, ".bai") {
			data = want.index
		}
		n := int64(len(data))
		f, err := os.Open(filepath.Join(mnt, name))
		must(t, err)
		r := rand.New(rand.NewPCG(1, 2))
		type span struct{ off, n int64 }
		spans := []span{{0, 1}, {0, n}, {n - 1, 1}, {n - 1, 10}, {n, 10}, {n + 4096, 10}, {4095, 2}, {65535, 70000}, {1 << 40, 1}}
		for range 200 {
			spans = append(spans, span{r.Int64N(n + 100), 1 + r.Int64N(300_000)})
		}
		for _, s := range spans {
			buf := make([]byte, s.n)
			got, err := f.ReadAt(buf, s.off)
			var exp []byte
			if s.off < n {
				exp = data[s.off:min(n, s.off+s.n)]
			}
			if got != len(exp) || !bytes.Equal(buf[:got], exp) {
				t.Fatalf("%s ReadAt(off %d, len %d) = %d bytes, %v; want %d bytes", name, s.off, s.n, got, err, len(exp))
			}
			if got < len(buf) && err != io.EOF {
				t.Fatalf("%s ReadAt(off %d, len %d) short read error %v, want io.EOF", name, s.off, s.n, err)
			}
		}
		must(t, f.Close())
	}
}

func TestConcurrentReaders(t *testing.T) {
	src := t.TempDir()
	names := []string{"p.cram", "q.cram", "r.cram"}
	for _, n := range names {
		writeFile(t, filepath.Join(src, n), "concurrent "+n)
	}
	op := &fakeOpener{}
	mnt := mountT(t, src, op, Options{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			cram := names[g%len(names)]
			want := expectedBAM(t, filepath.Join(src, cram))
			f, err := os.Open(filepath.Join(mnt, strings.TrimSuffix(cram, ".cram")+".bam"))
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			r := rand.New(rand.NewPCG(uint64(g), 7))
			for range 100 {
				off := r.Int64N(want.Size())
				buf := make([]byte, 1+r.IntN(200_000))
				n, err := f.ReadAt(buf, off)
				exp := want.data[off:min(want.Size(), off+int64(len(buf)))]
				if n != len(exp) || !bytes.Equal(buf[:n], exp) || (err != nil && err != io.EOF) {
					errs <- fmt.Errorf("reader %d: %s off %d: %d bytes, %v", g, cram, off, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	op.mu.Lock()
	opens := op.opens
	op.mu.Unlock()
	if opens != len(names) {
		t.Errorf("opener built %d BAMs, want %d (shared)", opens, len(names))
	}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestBrokenCRAM(t *testing.T) {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "bad.cram"), "BROKEN")
	writeFile(t, filepath.Join(src, "good.cram"), "good")
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	mnt := mountT(t, src, &fakeOpener{}, Options{Logger: logger})

	if got := readDirNames(t, mnt); !slices.Equal(got, []string{"bad.bam", "good.bam"}) {
		t.Errorf("ReadDir = %q", got)
	}
	for _, name := range []string{"bad.bam", "bad.bam.bai"} {
		if _, err := os.Stat(filepath.Join(mnt, name)); !errors.Is(err, syscall.EIO) {
			t.Errorf("Stat(%s) = %v, want EIO", name, err)
		}
		if _, err := os.ReadFile(filepath.Join(mnt, name)); !errors.Is(err, syscall.EIO) {
			t.Errorf("ReadFile(%s) = %v, want EIO", name, err)
		}
	}
	got, err := os.ReadFile(filepath.Join(mnt, "good.bam"))
	must(t, err)
	if !bytes.Equal(got, expectedBAM(t, filepath.Join(src, "good.cram")).data) {
		t.Error("good.bam content differs")
	}
	l := logs.String()
	if !strings.Contains(l, "file=bad.bam") || !strings.Contains(l, "corrupt container") || !strings.Contains(l, "errno=\"input/output error\"") {
		t.Errorf("log does not name the broken file and error:\n%s", l)
	}
	if strings.Contains(l, "good.bam") {
		t.Errorf("log mentions the good file:\n%s", l)
	}
}

func TestReadOnly(t *testing.T) {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "a.cram"), "ro")
	writeFile(t, filepath.Join(src, "plain.txt"), "plain")
	mnt := mountT(t, src, &fakeOpener{}, Options{})
	denied := func(err error) bool { return errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EACCES) }

	for _, name := range []string{"a.bam", "a.bam.bai", "plain.txt", "new.txt"} {
		p := filepath.Join(mnt, name)
		flags := []int{os.O_WRONLY, os.O_RDWR, os.O_WRONLY | os.O_CREATE | os.O_TRUNC, os.O_RDONLY | os.O_TRUNC}
		if name == "new.txt" {
			flags = []int{os.O_WRONLY | os.O_CREATE, os.O_RDWR | os.O_CREATE | os.O_EXCL}
		}
		for _, flag := range flags {
			f, err := os.OpenFile(p, flag, 0o644)
			if err == nil {
				f.Close()
				t.Errorf("OpenFile(%s, %#x) succeeded on a read-only mount", name, flag)
			} else if !denied(err) {
				t.Errorf("OpenFile(%s, %#x) = %v, want EROFS or EACCES", name, flag, err)
			}
		}
	}
	for what, err := range map[string]error{
		"mkdir":    os.Mkdir(filepath.Join(mnt, "d"), 0o755),
		"remove":   os.Remove(filepath.Join(mnt, "plain.txt")),
		"rename":   os.Rename(filepath.Join(mnt, "a.bam"), filepath.Join(mnt, "b.bam")),
		"chmod":    os.Chmod(filepath.Join(mnt, "a.bam"), 0o666),
		"symlink":  os.Symlink("x", filepath.Join(mnt, "l")),
		"truncate": os.Truncate(filepath.Join(mnt, "plain.txt"), 0),
	} {
		if !denied(err) {
			t.Errorf("%s = %v, want EROFS or EACCES", what, err)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(src, "plain.txt")); string(got) != "plain" {
		t.Errorf("source changed: %q", got)
	}
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestSourceChanges(t *testing.T) {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "a.cram"), "version 1")
	writeFile(t, filepath.Join(src, "gone.cram"), "to be removed")
	mnt := mountT(t, src, &fakeOpener{}, Options{})
	exists := func(name string) func() bool {
		return func() bool { _, err := os.Stat(filepath.Join(mnt, name)); return err == nil }
	}
	listed := func(name string) func() bool {
		return func() bool { return slices.Contains(readDirNames(t, mnt), name) }
	}

	// Look up names before the change, so negative and positive entries
	// are cached in the kernel.
	if exists("new.bam")() || exists("sub")() {
		t.Fatal("new.bam or sub exists before being created")
	}
	v1 := expectedBAM(t, filepath.Join(src, "a.cram"))
	old, err := os.Open(filepath.Join(mnt, "a.bam"))
	must(t, err)
	defer old.Close()
	_ = exists("gone.bam.bai")()

	start := time.Now()
	writeFile(t, filepath.Join(src, "new.cram"), "brand new")
	writeFile(t, filepath.Join(src, "sub", "n.txt"), "new sub file")
	must(t, os.Remove(filepath.Join(src, "gone.cram")))
	replaceFile(t, filepath.Join(src, "a.cram"), "version 2, longer content")
	v2 := expectedBAM(t, filepath.Join(src, "a.cram"))
	// Opening right away, while the kernel still caches the old entry,
	// gets ESTALE from the old node and makes the kernel look again.
	if got, err := os.ReadFile(filepath.Join(mnt, "a.bam")); err != nil || !bytes.Equal(got, v2.data) {
		t.Errorf("immediate re-open of replaced a.bam: %v, new content %v", err, bytes.Equal(got, v2.data))
	}

	eventually(t, "new.bam appears", exists("new.bam"))
	eventually(t, "new.bam listed", listed("new.bam"))
	eventually(t, "sub/n.txt appears", exists("sub/n.txt"))
	eventually(t, "gone.bam.bai vanishes", func() bool { return !exists("gone.bam.bai")() })
	eventually(t, "gone.bam unlisted", func() bool { return !slices.Contains(readDirNames(t, mnt), "gone.bam") })
	eventually(t, "a.bam serves version 2", func() bool {
		got, err := os.ReadFile(filepath.Join(mnt, "a.bam"))
		return err == nil && bytes.Equal(got, v2.data)
	})
	t.Logf("changes visible after %v", time.Since(start).Round(time.Millisecond))
	st, err := os.Stat(filepath.Join(mnt, "a.bam"))
	must(t, err)
	if st.Size() != v2.Size() {
		t.Errorf("a.bam size %d, want %d", st.Size(), v2.Size())
	}
	got, err := os.ReadFile(filepath.Join(mnt, "a.bam.bai"))
	if err != nil || !bytes.Equal(got, v2.index) {
		t.Errorf("a.bam.bai is not version 2's index: %v", err)
	}
	// A file opened before the replacement keeps serving version 1 only.
	buf, err := io.ReadAll(io.NewSectionReader(old, 0, 1<<30))
	must(t, err)
	if !bytes.Equal(buf, v1.data) {
		t.Errorf("old handle read %d bytes not equal to version 1 (%d bytes)", len(buf), len(v1.data))
	}
}

func TestMountErrors(t *testing.T) {
	corpus.RequireFUSE(t)
	src := t.TempDir()
	other := t.TempDir()
	must(t, os.Mkdir(filepath.Join(src, "inner"), 0o755))
	must(t, os.Mkdir(filepath.Join(other, "m"), 0o755))
	writeFile(t, filepath.Join(src, "file"), "x")
	busy := mountT(t, other, &fakeOpener{}, Options{})

	for _, tc := range []struct {
		name, src, mnt, want string
	}{
		{"mnt inside src", src, filepath.Join(src, "inner"), "inside the source"},
		{"mnt is src", src, src, "inside the source"},
		{"src inside mnt", filepath.Join(src, "inner"), src, "inside the mount point"},
		{"mnt missing", src, filepath.Join(other, "nope"), "does not exist"},
		{"mnt not dir", other, filepath.Join(src, "file"), "not a directory"},
		{"src missing", filepath.Join(src, "nope"), t.TempDir(), "does not exist"},
		{"mnt busy", src, busy, "busy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Mount(tc.src, tc.mnt, &fakeOpener{}, Options{})
			if err == nil {
				s.Unmount()
				t.Fatal("Mount succeeded")
			}
			if !errors.Is(err, ErrMount) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Mount error %q, want ErrMount mentioning %q", err, tc.want)
			}
		})
	}
	if _, err := Mount(src, t.TempDir(), nil, Options{}); !errors.Is(err, ErrMount) {
		t.Errorf("Mount with nil Opener = %v", err)
	}
}

// TestStaleMountHelper is the child process of TestStaleMount: it mounts,
// reports, and waits to be killed.
func TestStaleMountHelper(t *testing.T) {
	mnt := os.Getenv("CRAMFS_FS_STALE_MNT")
	if mnt == "" {
		t.Skip("helper process for TestStaleMount")
	}
	if _, err := Mount(os.Getenv("CRAMFS_FS_STALE_SRC"), mnt, &fakeOpener{}, Options{}); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("mounted")
	time.Sleep(time.Minute)
	os.Exit(2)
}

func TestStaleMount(t *testing.T) {
	corpus.RequireFUSE(t)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "s.cram"), "stale")
	mnt := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestStaleMountHelper$")
	cmd.Env = append(os.Environ(), "CRAMFS_FS_STALE_MNT="+mnt, "CRAMFS_FS_STALE_SRC="+src)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { _ = Unmount(mnt) })
	line, _ := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "mounted") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper: %q", line)
	}
	must(t, cmd.Process.Kill())
	_ = cmd.Wait()

	if _, err := os.ReadDir(mnt); !errors.Is(err, syscall.ENOTCONN) {
		t.Fatalf("ReadDir of the dead mount = %v, want ENOTCONN", err)
	}
	_, err = Mount(src, mnt, &fakeOpener{}, Options{})
	if !errors.Is(err, ErrStaleMount) || !errors.Is(err, ErrMount) || !strings.Contains(err.Error(), "cramfs unmount "+mnt) {
		t.Fatalf("Mount on a stale mount = %v, want ErrStaleMount with the unmount hint", err)
	}
	must(t, Unmount(mnt))
	m := mountT(t, src, &fakeOpener{}, Options{})
	if got := readDirNames(t, m); !slices.Equal(got, []string{"s.bam"}) {
		t.Errorf("after recovery ReadDir = %q", got)
	}
	s, err := Mount(src, mnt, &fakeOpener{}, Options{})
	if err != nil {
		t.Fatalf("Mount after Unmount: %v", err)
	}
	must(t, s.Unmount())
}

func TestUnmountFunc(t *testing.T) {
	corpus.RequireFUSE(t)
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "u.cram"), "u")
	mnt := t.TempDir()
	s, err := Mount(src, mnt, &fakeOpener{}, Options{})
	must(t, err)
	done := make(chan struct{})
	go func() { s.Wait(); close(done) }()
	// Busy: an open file makes the plain unmount fail, the lazy one works.
	f, err := os.Open(filepath.Join(mnt, "u.bam"))
	must(t, err)
	must(t, Unmount(mnt))
	f.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("server did not stop after Unmount")
	}
	if busy, err := isMountPoint(mnt); err != nil || busy {
		t.Errorf("still mounted after Unmount: %v %v", busy, err)
	}
	if err := Unmount(filepath.Join(src, "not-a-mount")); !errors.Is(err, ErrMount) {
		t.Errorf("Unmount of a non-mount = %v, want ErrMount", err)
	}
}

func TestToErrno(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dctx, dcancel := context.WithTimeout(context.Background(), 0)
	defer dcancel()
	_, statErr := os.Stat(filepath.Join(t.TempDir(), "absent"))
	for _, tc := range []struct {
		err  error
		want syscall.Errno
	}{
		{nil, 0},
		{ctx.Err(), syscall.EINTR},
		{fmt.Errorf("scan: %w", dctx.Err()), syscall.ETIMEDOUT},
		{statErr, syscall.ENOENT},
		{errHidden, syscall.ENOENT},
		{os.ErrPermission, syscall.EACCES},
		{fmt.Errorf("x: %w", syscall.EROFS), syscall.EROFS},
		{fmt.Errorf("decode: %w", errFakeCorrupt), syscall.EIO},
		{io.ErrUnexpectedEOF, syscall.EIO},
		{os.ErrClosed, syscall.EBADF},
	} {
		if got := toErrno(tc.err); got != tc.want {
			t.Errorf("toErrno(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		`/a/b`: "/a/b", `/a\040b`: "/a b", `/x\134y`: `/x\y`, `\0`: `\0`, `/t\011`: "/t\t", `/e\`: `/e\`,
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRootXattrs: the root answers the extended attributes of
// Options.RootXattrs (size query, value, ERANGE for a short buffer);
// every other node and name answers none, and nothing can be set.
func TestRootXattrs(t *testing.T) {
	src := t.TempDir()
	writeFile(t, filepath.Join(src, "a.cram"), "x")
	writeFile(t, filepath.Join(src, "sub", "plain.txt"), "plain")
	const name, value = "user.test.where", "/run/somewhere/status.sock"
	mnt := mountT(t, src, &fakeOpener{}, Options{RootXattrs: map[string]string{name: value}})
	if n, err := unix.Getxattr(mnt, name, nil); err != nil || n != len(value) {
		t.Errorf("size of %s: %d, %v; want %d", name, n, err, len(value))
	}
	buf := make([]byte, 256)
	if n, err := unix.Getxattr(mnt, name, buf); err != nil || string(buf[:n]) != value {
		t.Errorf("%s = %q, %v; want %q", name, buf[:n], err, value)
	}
	if _, err := unix.Getxattr(mnt, name, buf[:3]); !errors.Is(err, syscall.ERANGE) {
		t.Errorf("%s into 3 bytes: %v, want ERANGE", name, err)
	}
	for _, p := range []string{filepath.Join(mnt, "sub"), filepath.Join(mnt, "sub", "plain.txt"), filepath.Join(mnt, "a.bam")} {
		if _, err := unix.Getxattr(p, name, buf); !errors.Is(err, syscall.ENODATA) {
			t.Errorf("%s of %s: %v, want ENODATA", name, p, err)
		}
	}
	if _, err := unix.Getxattr(mnt, "user.other", buf); !errors.Is(err, syscall.ENODATA) {
		t.Errorf("user.other of the root: %v, want ENODATA", err)
	}
	if err := unix.Setxattr(mnt, name, []byte("x"), 0); !errors.Is(err, syscall.EROFS) {
		t.Errorf("setxattr: %v, want EROFS", err)
	}
}
