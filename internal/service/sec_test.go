//go:build linux

package service

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cramfs/cramfs/engine"
	"github.com/cramfs/cramfs/engine/cram"
	cfs "github.com/cramfs/cramfs/fs"
	"github.com/cramfs/cramfs/internal/clitest"
)

// The tests in this file are a hostile user's attacks on a mount (issue
// 20): links and swapped directories that lead outside the source, FIFOs
// named like CRAMs, names too long to copy. Each runs on a real kernel
// mount; what the daemon opens is watched with inotify.

// openWatch records the opens and reads of a directory and the files in it
// (inotify IN_OPEN and IN_ACCESS), by any process: the daemon here, as
// the mounts are in-process.
type openWatch struct {
	fd  int
	dir string
}

func watchOpens(t *testing.T, dir string) *openWatch {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatalf("inotify_init1: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_OPEN|unix.IN_ACCESS); err != nil {
		t.Fatalf("inotify_add_watch %s: %v", dir, err)
	}
	return &openWatch{fd: fd, dir: dir}
}

// events returns what happened since the last call, as "open NAME" or
// "read NAME" (NAME the directory itself or a file in it).
func (w *openWatch) events(t *testing.T) []string {
	t.Helper()
	var out []string
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if errors.Is(err, unix.EAGAIN) {
			return out
		}
		if err != nil {
			t.Fatalf("reading inotify events: %v", err)
		}
		// struct inotify_event: wd, mask, cookie, len, then len bytes of name.
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+nameLen]), "\x00")
			what := "open"
			if mask&unix.IN_ACCESS != 0 {
				what = "read"
			}
			out = append(out, what+" "+filepath.Join(w.dir, name))
			off += unix.SizeofInotifyEvent + nameLen
		}
	}
}

// TestMountSymlinkSwapRace swaps a directory inside the source with a
// symbolic link to a directory outside it (renameat2 RENAME_EXCHANGE, in
// a loop) while readers look up, list and read the CRAM's BAM and index,
// and a pass-through file, through the mount, with kernel timeouts of 1 ms so that every access
// reaches the daemon. No byte read may come from the outside CRAM, and the
// daemon must never open anything outside the source.
func TestMountSymlinkSwapRace(t *testing.T) {
	requireMount(t)
	ref := []string{testdata("ref", "ce.fa")}
	top := t.TempDir()
	src, out := filepath.Join(top, "src"), filepath.Join(top, "out")
	for _, d := range []string{filepath.Join(src, "d"), out} {
		must(t, os.MkdirAll(d, 0o755))
	}
	inside, secret := testdata("cram", "ce_1000.3.0.cram"), testdata("cram", "ce_5b.3.0.cram")
	copyFile(t, inside, filepath.Join(src, "d", "x.cram"))
	copyFile(t, secret, filepath.Join(out, "x.cram"))
	must(t, os.Chmod(filepath.Join(out, "x.cram"), 0o600))
	must(t, os.WriteFile(filepath.Join(src, "d", "note.txt"), []byte("inside"), 0o644))
	must(t, os.WriteFile(filepath.Join(out, "note.txt"), []byte("SECRET"), 0o600))
	must(t, os.Symlink(out, filepath.Join(src, "swap")))
	m := mountT(t, src, mountConfig{refs: ref, timeout: time.Millisecond})
	wantBAM := convertAt(t, m.level, inside, ref)
	secretBAM := convertAt(t, m.level, secret, ref)
	if len(wantBAM) == len(secretBAM) {
		t.Fatal("fixture: the inside and outside BAMs have the same size")
	}
	wantBAI, err := os.ReadFile(filepath.Join(m.mnt, "d", "x.bam.bai"))
	must(t, err)
	w := watchOpens(t, out) // from here on, nothing may open a file there

	stop := make(chan struct{})
	var swaps atomic.Int64
	swapDone := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				swapDone <- nil
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, filepath.Join(src, "d"), unix.AT_FDCWD, filepath.Join(src, "swap"), unix.RENAME_EXCHANGE); err != nil {
				swapDone <- fmt.Errorf("renameat2: %w", err)
				return
			}
			swaps.Add(1)
		}
	}()
	var (
		mu                      sync.Mutex
		good, listings          int
		failed                  = map[string]int{} // by error
		escaped, mixed, badBAIs []string
	)
	deadline := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				for _, dir := range []string{"d", "swap"} {
					name := filepath.Join(dir, "x.bam")
					b, err := os.ReadFile(filepath.Join(m.mnt, name))
					bai, baiErr := os.ReadFile(filepath.Join(m.mnt, dir, []string{"x.bam.bai", "x.bai"}[i%2]))
					_, dirErr := os.ReadDir(filepath.Join(m.mnt, dir))
					note, noteErr := os.ReadFile(filepath.Join(m.mnt, dir, "note.txt"))
					mu.Lock()
					switch {
					case err != nil:
						failed[errors.Unwrap(err).Error()]++
					case bytes.Equal(b, wantBAM):
						good++
					case bytes.Equal(b, secretBAM):
						escaped = append(escaped, name)
					default:
						mixed = append(mixed, fmt.Sprintf("%s: %d bytes", name, len(b)))
					}
					if noteErr == nil && string(note) != "inside" {
						escaped = append(escaped, fmt.Sprintf("%s/note.txt: %q", dir, note))
					}
					if baiErr == nil && !bytes.Equal(bai, wantBAI) {
						badBAIs = append(badBAIs, fmt.Sprintf("%s: %d bytes", dir, len(bai)))
					}
					if dirErr == nil {
						listings++
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	if err := <-swapDone; err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(src, "d")); err != nil || !fi.IsDir() {
		must(t, unix.Renameat2(unix.AT_FDCWD, filepath.Join(src, "d"), unix.AT_FDCWD, filepath.Join(src, "swap"), unix.RENAME_EXCHANGE))
	}
	t.Logf("%d swaps; BAM reads: %d exact, failed: %v; %d listings", swaps.Load(), good, failed, listings)
	if len(escaped) > 0 {
		t.Errorf("%d reads served the CRAM outside the source (first: %s)", len(escaped), escaped[0])
	}
	if len(mixed) > 0 {
		t.Errorf("%d reads served other bytes (first: %s)", len(mixed), mixed[0])
	}
	if len(badBAIs) > 0 {
		t.Errorf("%d index reads served another index (first: %s)", len(badBAIs), badBAIs[0])
	}
	if ev := w.events(t); len(ev) > 0 {
		t.Errorf("the daemon opened or read %d times outside the source: %q", len(ev), ev[:min(len(ev), 5)])
	}
	if good == 0 || swaps.Load() == 0 {
		t.Errorf("the race did not run: %d swaps, %d exact reads", swaps.Load(), good)
	}
	// Once the race stopped, the inside file is served again.
	poll(t, "d/x.bam serves the inside CRAM after the race", 5*time.Second, func() error {
		b, err := os.ReadFile(filepath.Join(m.mnt, "d", "x.bam"))
		if err == nil && !bytes.Equal(b, wantBAM) {
			err = fmt.Errorf("%d bytes, not the inside BAM", len(b))
		}
		return err
	})
}

// TestMountListingOpensNothingOutside lists and looks up links that lead
// outside the source (absolute, relative, to a device, to a directory):
// they are hidden, and nothing outside the source is opened to decide it.
func TestMountListingOpensNothingOutside(t *testing.T) {
	requireMount(t)
	ref := []string{testdata("ref", "ce.fa")}
	top := t.TempDir()
	src, out := filepath.Join(top, "src"), filepath.Join(top, "out")
	must(t, os.MkdirAll(src, 0o755))
	must(t, os.MkdirAll(out, 0o755))
	copyFile(t, testdata("cram", "ce_1000.3.0.cram"), filepath.Join(src, "in.cram"))
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), filepath.Join(out, "secret.cram"))
	links := map[string]string{
		"abs.cram":  filepath.Join(out, "secret.cram"),
		"rel.cram":  "../out/secret.cram",
		"zero.cram": "/dev/zero",
		"outdir":    out,
		"up":        "..",
	}
	for name, target := range links {
		must(t, os.Symlink(target, filepath.Join(src, name)))
	}
	m := mountT(t, src, mountConfig{refs: ref})
	w := watchOpens(t, out)
	for range 2 {
		if got := readNames(t, m.mnt); got != "in.bam" {
			t.Errorf("listing %q, want %q", got, "in.bam")
		}
	}
	for _, n := range []string{"abs.bam", "abs.bam.bai", "abs.bai", "rel.bam", "rel.bai", "zero.bam", "zero.bam.bai", "outdir", "outdir/secret.bam", "up"} {
		if _, err := os.Stat(filepath.Join(m.mnt, n)); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("stat %s: %v, want ENOENT", n, err)
		}
	}
	if ev := w.events(t); len(ev) > 0 {
		t.Errorf("listing and lookups opened files outside the source: %q", ev)
	}
}

// TestMountListingReadsNoCRAM lists a directory of CRAMs and checks, with
// inotify on the source, that no CRAM was opened to answer (a CRAM's
// header can take a minute to parse); looking up x.bam then opens it,
// which shows that the watch sees the daemon's opens.
func TestMountListingReadsNoCRAM(t *testing.T) {
	requireMount(t)
	ref := []string{testdata("ref", "ce.fa")}
	src := t.TempDir()
	copyFile(t, testdata("cram", "ce_1000.3.0.cram"), filepath.Join(src, "x.cram"))
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), filepath.Join(src, "y.cram"))
	m := mountT(t, src, mountConfig{refs: ref})
	w := watchOpens(t, src)
	for range 2 {
		if got := readNames(t, m.mnt); got != "x.bam y.bam" {
			t.Errorf("listing %q, want %q", got, "x.bam y.bam")
		}
	}
	var opened []string
	for _, ev := range w.events(t) {
		if strings.HasSuffix(ev, ".cram") {
			opened = append(opened, ev)
		}
	}
	if len(opened) > 0 {
		t.Errorf("listing the directory opened CRAMs: %q", opened)
	}
	if _, err := os.Stat(filepath.Join(m.mnt, "x.bam")); err != nil {
		t.Fatal(err)
	}
	if ev := w.events(t); !slices.Contains(ev, "open "+filepath.Join(src, "x.cram")) {
		t.Errorf("the watch did not see the lookup open x.cram: %q", ev)
	}
}

// fifoBound runs f, which must not block on the FIFO fifo, and fails when
// it does not return within 10 s; the FIFO is then opened for writing
// until f returns, so that the blocked opens and the mount end.
func fifoBound(t *testing.T, what, fifo string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("%s: %v", what, err)
		}
		return
	case <-time.After(10 * time.Second):
	}
	for {
		if fd, err := unix.Open(fifo, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(fd)
		}
		select {
		case <-done:
			t.Fatalf("%s: blocked on the FIFO %s for 10 s", what, fifo)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestMountFIFONamedCRAM puts a FIFO named a.cram, and a link b.cram to
// it, next to CRAMs: listing and lookups return at once and hide them,
// and --index-on-mount goes past them to index the CRAMs, the one the link
// c.cram leads to included.
func TestMountFIFONamedCRAM(t *testing.T) {
	requireMount(t)
	ref := []string{testdata("ref", "ce.fa")}
	src := t.TempDir()
	fifo := filepath.Join(src, "a.cram")
	must(t, unix.Mkfifo(fifo, 0o644))
	must(t, os.Symlink("a.cram", filepath.Join(src, "b.cram")))
	copyFile(t, testdata("cram", "ce_1000.3.0.cram"), filepath.Join(src, "z.cram"))
	must(t, os.Mkdir(filepath.Join(src, "store"), 0o755))
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), filepath.Join(src, "store", "blob"))
	must(t, os.Symlink("store/blob", filepath.Join(src, "c.cram")))
	m := mountT(t, src, mountConfig{refs: ref})
	fifoBound(t, "listing", fifo, func() error {
		ents, err := os.ReadDir(m.mnt)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		// c.cram leads to a name without .cram, which gives no c.bam to
		// lead to: hidden (see TestSharedMountLinks in fs).
		if want := []string{"store", "z.bam"}; err == nil && !slices.Equal(names, want) {
			err = fmt.Errorf("listed %q, want %q", names, want)
		}
		return err
	})
	fifoBound(t, "lookups", fifo, func() error {
		for _, n := range []string{"a.bam", "a.bam.bai", "a.bai", "b.bam", "b.bam.bai", "a.cram", "b.cram"} {
			if _, err := os.Stat(filepath.Join(m.mnt, n)); !errors.Is(err, syscall.ENOENT) {
				return fmt.Errorf("stat %s: %v, want ENOENT", n, err)
			}
		}
		_, err := os.Stat(filepath.Join(m.mnt, "z.bam"))
		return err
	})

	// --index-on-mount walks what the mount shows: it meets a.cram and
	// b.cram (hidden, never opened), c.cram (a link the mount hides, not
	// followed) and indexes z.cram.
	bin := buildCramfs(t)
	cache := t.TempDir()
	p := startMount(t, bin, src, "--cache-dir", cache, "--index-on-mount")
	fifoBound(t, "--index-on-mount", fifo, func() error {
		for end := time.Now().Add(8 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			idx, err := filepath.Glob(filepath.Join(cache, "*.idx"))
			if err != nil || len(idx) == 1 {
				return err
			}
			if time.Now().After(end) {
				return fmt.Errorf("%d layout indexes in the cache dir, want 1 (z.cram's): %q", len(idx), idx)
			}
		}
	})
	time.Sleep(300 * time.Millisecond) // the walk has nothing else to index
	if idx, _ := filepath.Glob(filepath.Join(cache, "*.idx")); len(idx) != 1 {
		t.Errorf("%d layout indexes after the walk, want z.cram's only: %q", len(idx), idx)
	}
	must(t, p.Cmd.Process.Signal(syscall.SIGTERM))
	if rc := p.Wait(t); rc != 0 {
		t.Errorf("exit %d, want 0; stderr:\n%s", rc, p.Stderr.String())
	}
}

// TestMountIndexNames checks the names of the synthesized index: x.bam.bai
// and x.bai, listed once the CRAM was opened and never for a CRAM without
// an index, never a name longer than NAME_MAX; every name listed can be
// looked up, on a fresh mount too (`ls -l` used to fail on the first
// listing); a real x.bai is shown instead of the synthetic one; the index
// is no older than the BAM.
func TestMountIndexNames(t *testing.T) {
	requireMount(t)
	var sam strings.Builder
	sam.WriteString("@HD\tVN:1.6\tSO:unsorted\n@SQ\tSN:c1\tLN:100000\n")
	for i := range 50 {
		fmt.Fprintf(&sam, "r%d\t0\tc1\t%d\t60\t10M\t*\t0\t0\tACGTACGTAC\tIIIIIIIIII\n", i, 1+(i*7919)%90000)
	}
	_, src, _ := cramFromSAM(t, "u", sam.String())
	ref := []string{testdata("ref", "ce.fa")}
	long := strings.Repeat("n", 250) // long.cram is 255 bytes, long.bam.bai 258
	copyFile(t, testdata("cram", "ce_1000.3.0.cram"), filepath.Join(src, "s.cram"))
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), filepath.Join(src, "long.tmp"))
	must(t, os.Rename(filepath.Join(src, "long.tmp"), filepath.Join(src, long+".cram")))
	must(t, os.WriteFile(filepath.Join(src, "s.bai"), []byte("a real s.bai, shown"), 0o644))
	m := mountT(t, src, mountConfig{refs: ref})

	statListed := func(when string) []string {
		t.Helper()
		ents, err := os.ReadDir(m.mnt)
		must(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
			if _, err := os.Stat(filepath.Join(m.mnt, e.Name())); err != nil {
				t.Errorf("%s: %s is listed but stat fails: %v", when, e.Name(), err)
			}
			if len(e.Name()) > 255 {
				t.Errorf("%s: listed a name of %d bytes", when, len(e.Name()))
			}
		}
		return names
	}
	// The first listing names no index; its stats open every BAM.
	if got, want := statListed("fresh mount"), []string{long + ".bam", "s.bai", "s.bam", "u.bam"}; !slices.Equal(got, want) {
		t.Errorf("fresh listing %q, want %q", got, want)
	}
	want := []string{long + ".bai", long + ".bam", "s.bai", "s.bam", "s.bam.bai", "u.bam"}
	if got := statListed("after opening"); !slices.Equal(got, want) {
		t.Errorf("listing after opening %q, want %q", got, want)
	}
	for _, n := range []string{"u.bam.bai", "u.bai", "s.bam.csi", "s.csi"} {
		if _, err := os.Stat(filepath.Join(m.mnt, n)); !errors.Is(err, syscall.ENOENT) {
			t.Errorf("stat %s: %v, want ENOENT", n, err)
		}
	}
	if _, err := os.Stat(filepath.Join(m.mnt, long+".bam.bai")); err == nil {
		t.Errorf("%d-byte name %s.bam.bai can be looked up", len(long)+8, long)
	}
	bam, err := os.Stat(filepath.Join(m.mnt, "s.bam"))
	must(t, err)
	bai, err := os.ReadFile(filepath.Join(m.mnt, "s.bam.bai"))
	must(t, err)
	if b, err := os.ReadFile(filepath.Join(m.mnt, "s.bai")); err != nil || string(b) != "a real s.bai, shown" {
		t.Errorf("s.bai = %q, %v; want the real file", b, err)
	}
	for _, n := range []string{"s.bam.bai"} {
		b, err := os.ReadFile(filepath.Join(m.mnt, n))
		must(t, err)
		if !bytes.Equal(b, bai) || len(b) < 8 || string(b[:4]) != "BAI\x01" {
			t.Errorf("%s: %d bytes, not the index of s.bam", n, len(b))
		}
		st, err := os.Stat(filepath.Join(m.mnt, n))
		must(t, err)
		if st.ModTime().Before(bam.ModTime()) {
			t.Errorf("%s: mtime %v older than s.bam's %v", n, st.ModTime(), bam.ModTime())
		}
	}
	for _, n := range []string{long + ".bai", long + ".bam"} {
		if _, err := os.ReadFile(filepath.Join(m.mnt, n)); err != nil {
			t.Errorf("reading %s (%d bytes): %v", n[240:], len(n), err)
		}
	}
	// htslib finds the index of the mount's BAM (x.bam.bai first).
	if out, err := samtools("idxstats", filepath.Join(m.mnt, "s.bam")); err != nil || !bytes.HasPrefix(out, []byte("CHROMOSOME_I")) {
		t.Errorf("samtools idxstats through the mount: %v\n%s", err, out)
	}
}

// TestConvertIndexRefuseFIFO gives `cramfs convert` and `cramfs index` a
// FIFO named x.cram (user-given paths are opened by name): both fail at
// once naming it, and `cramfs index DIR` leaves it out and indexes the
// CRAM beside it.
func TestConvertIndexRefuseFIFO(t *testing.T) {
	bin := buildCramfs(t)
	src := t.TempDir()
	fifo := filepath.Join(src, "x.cram")
	must(t, unix.Mkfifo(fifo, 0o644))
	copyFile(t, testdata("cram", "ce_1000.3.0-noref.cram"), filepath.Join(src, "y.cram"))
	for _, args := range [][]string{
		{"convert", "-o", filepath.Join(t.TempDir(), "x.bam"), fifo},
		{"index", "--cache-dir", t.TempDir(), fifo},
	} {
		fifoBound(t, args[0], fifo, func() error {
			rc, stderr, _, err := clitest.Exec(bin, args...)
			if err != nil || rc == 0 || !strings.Contains(stderr, "not a regular file") || !strings.Contains(stderr, fifo) {
				return fmt.Errorf("exit %d (%v), want non-zero with a message naming the FIFO:\n%s", rc, err, stderr)
			}
			return nil
		})
	}
	cache := t.TempDir()
	fifoBound(t, "index DIR", fifo, func() error {
		if rc, stderr, _, err := clitest.Exec(bin, "index", "--cache-dir", cache, src); err != nil || rc != 0 {
			return fmt.Errorf("exit %d (%v):\n%s", rc, err, stderr)
		}
		if idx, err := filepath.Glob(filepath.Join(cache, "*.idx")); err != nil || len(idx) != 1 {
			return fmt.Errorf("layout indexes %q (%v), want y.cram's", idx, err)
		}
		return nil
	})
}

// TestOpenerFileSwappedForFIFO asks the opener for a CRAM version that a
// FIFO replaced since its lstat (as in a lookup racing a rename): the
// answer is fs.ErrChanged at once, which makes the filesystem look again,
// and it is not remembered: once the file is back, it opens when looked up
// again (the renames set its ctime, so it is a new version to the opener).
func TestOpenerFileSwappedForFIFO(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.cram")
	copyFile(t, testdata("cram", "ce_1000.3.0-noref.cram"), p)
	root, err := os.OpenRoot(dir)
	must(t, err)
	defer root.Close()
	ref := cramRef(t, root, "x.cram")
	mgr := engine.NewManager(engine.Options{Threads: 1, CacheDir: t.TempDir()}, nil)
	defer mgr.Close()
	op := newOpener(mgr, nil, cram.Options{}, slog.New(slog.DiscardHandler))
	defer op.Close()

	must(t, os.Rename(p, p+".keep"))
	must(t, unix.Mkfifo(p, 0o644))
	fifoBound(t, "OpenBAM of a FIFO", p, func() error {
		if _, err := op.OpenBAM(t.Context(), ref); !errors.Is(err, cfs.ErrChanged) || !errors.Is(err, cram.ErrNotRegular) {
			return fmt.Errorf("OpenBAM: %v, want fs.ErrChanged and cram.ErrNotRegular", err)
		}
		return nil
	})
	must(t, os.Rename(p+".keep", p))
	if _, err := op.OpenBAM(t.Context(), ref); !errors.Is(err, cfs.ErrChanged) {
		t.Errorf("OpenBAM of the lstat before the renames: %v, want fs.ErrChanged", err)
	}
	if _, err := op.OpenBAM(t.Context(), cramRef(t, root, "x.cram")); err != nil {
		t.Errorf("OpenBAM once the file is back: %v", err)
	}
}
