//go:build linux

package cram

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/engine/states"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/cramtest"
)

// TestOpenThroughRootConfined opens CRAMs through a root: links inside it are
// followed, names and links leading outside it are refused, and the file
// outside is never what is opened.
func TestOpenThroughRootConfined(t *testing.T) {
	top := t.TempDir()
	src, out := filepath.Join(top, "src"), filepath.Join(top, "out")
	cramtest.CopyCRAM(t, "ce_1000.3.0-noref.cram", filepath.Join(src, "sub", "x.cram"))
	cramtest.CopyCRAM(t, "ce_5b.3.0-noref.cram", filepath.Join(out, "x.cram"))
	for link, target := range map[string]string{"in.cram": "sub/x.cram", "esc": out, "rel": "../out"} {
		if err := os.Symlink(target, filepath.Join(src, link)); err != nil {
			t.Fatal(err)
		}
	}
	root := cramtest.OpenRoot(t, src)
	want, err := os.Stat(filepath.Join(src, "sub", "x.cram"))
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"sub/x.cram", "in.cram"} {
		c, err := Open("display/"+rel, atRoot(root, rel), Options{})
		if err != nil {
			t.Fatalf("through the root %s: %v", rel, err)
		}
		if !os.SameFile(c.Stat(), want) || c.Name() != "display/"+rel {
			t.Errorf("through the root %s: opened %v named %q, want sub/x.cram named display/%s", rel, c.Stat(), c.Name(), rel)
		}
		c.Close()
	}
	for _, rel := range []string{"esc/x.cram", "rel/x.cram", "../out/x.cram", filepath.Join(out, "x.cram")} {
		if c, err := Open(rel, atRoot(root, rel), Options{}); err == nil {
			c.Close()
			t.Errorf("through the root %s: opened %d bytes outside the root", rel, c.Stat().Size())
		}
	}
}

// notBlocking runs f, which must return within 10 s although fifo has no
// writer; on timeout the FIFO is opened for writing until f returns.
func notBlocking(t *testing.T, what, fifo string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
	}
	for {
		if fd, err := syscall.Open(fifo, syscall.O_WRONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0); err == nil {
			syscall.Close(fd)
		}
		select {
		case <-done:
			t.Fatalf("%s blocked on the FIFO for 10 s", what)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestOpenCRAMRefusesNonRegular opens a FIFO, a link to it, a directory
// and a device as CRAMs, through a root and by path: each is refused with
// ErrNotRegular at once (the FIFO has no writer: a blocking open would
// wait for one).
func TestOpenCRAMRefusesNonRegular(t *testing.T) {
	src := t.TempDir()
	fifo := filepath.Join(src, "f.cram")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f.cram", filepath.Join(src, "l.cram")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(src, "d.cram"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := cramtest.OpenRoot(t, src)
	type opening struct {
		what string
		open func() (*CRAM, error)
	}
	var cases []opening
	for _, rel := range []string{"f.cram", "l.cram", "d.cram"} {
		cases = append(cases,
			opening{"through the root " + rel, func() (*CRAM, error) { return Open(rel, atRoot(root, rel), Options{}) }},
			opening{"by path " + rel, func() (*CRAM, error) { return Open(filepath.Join(src, rel), Path(filepath.Join(src, rel)), Options{}) }})
	}
	cases = append(cases, opening{"by path /dev/null", func() (*CRAM, error) { return Open("/dev/null", Path("/dev/null"), Options{}) }})
	for _, c := range cases {
		err := notBlocking(t, c.what, fifo, func() error {
			f, err := c.open()
			if err == nil {
				f.Close()
			}
			return err
		})
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("%s: %v, want ErrNotRegular", c.what, err)
		}
	}
}

// TestCRAMReopen has a CRAM's descriptor closed by its states.FileStates (which
// keep one) and the CRAM read again: the same version is opened again the
// way it was first (through the root) and served; a file replaced by
// rename or truncated in place is refused with source.ErrChanged.
func TestCRAMReopen(t *testing.T) {
	src := t.TempDir()
	p := filepath.Join(src, "x.cram")
	cramtest.CopyCRAM(t, "ce_1000.3.0-noref.cram", p)
	cramtest.CopyCRAM(t, "ce_1000.3.0-noref.cram", filepath.Join(src, "other.cram"))
	root := cramtest.OpenRoot(t, src)
	fileStates := states.NewFileStates(1<<30, 1)
	opt := Options{States: fileStates}
	ctx := context.Background()
	c, err := Open(p, atRoot(root, "x.cram"), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want, err := c.AppendContainer(ctx, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	evictByOther(t, c, root, opt)
	if got, err := c.AppendContainer(ctx, 0, nil); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read again, unchanged: %d bytes (%v), want the %d first read", len(got), err, len(want))
	}
	if fi := c.File(); fi == nil {
		t.Fatal("no file structure after opening again")
	}
	checkCRAM(t, c, true)

	evictByOther(t, c, root, opt)
	cramtest.CopyCRAM(t, "ce_5b.3.0-noref.cram", p+".new")
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AppendContainer(ctx, 0, nil); !errors.Is(err, source.ErrChanged) {
		t.Errorf("read again after a replacement: %v, want source.ErrChanged", err)
	}
	c2, err := Open(p, atRoot(root, "x.cram"), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.mu.Lock()
	st := c2.st
	c2.mu.Unlock()
	fileStates.Remove(st)
	st.Drop()
	if err := os.Truncate(p, c2.Stat().Size()-100); err != nil {
		t.Fatal(err)
	}
	if _, err := c2.AppendContainer(ctx, 0, nil); !errors.Is(err, source.ErrChanged) {
		t.Errorf("read again after truncation in place: %v, want source.ErrChanged", err)
	}
	checkCRAM(t, c, true)
	checkCRAM(t, c2, true)
}

// TestManagerPinsCRAMByDescriptor opens a CRAM whose display name does not
// exist: the Manager must still persist its layout, keyed by an identity
// read from the descriptor, never by opening the name.
func TestManagerPinsCRAMByDescriptor(t *testing.T) {
	src := t.TempDir()
	cramtest.CopyCRAM(t, "ce_1000.3.0-noref.cram", filepath.Join(src, "x.cram"))
	root := cramtest.OpenRoot(t, src)
	c, err := Open(filepath.Join(t.TempDir(), "absent", "x.cram"), atRoot(root, "x.cram"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cache := t.TempDir()
	m := engine.NewManager(engine.Options{Threads: 1, CacheDir: cache}, nil)
	defer m.Close()
	if _, err := m.Open(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	idx, err := filepath.Glob(filepath.Join(cache, "*.idx"))
	if err != nil || len(idx) != 1 {
		t.Fatalf("layout indexes in the cache dir: %q (%v), want one", idx, err)
	}
}

// TestCRAMIdentityAfterDescriptorClosed: the identity of a CRAM whose
// descriptor its states.FileStates closed is read from the descriptor opened
// again (the same identity as first taken), and a file replaced by rename
// meanwhile gives source.ErrChanged, never the new file's identity.
func TestCRAMIdentityAfterDescriptorClosed(t *testing.T) {
	src := t.TempDir()
	p := filepath.Join(src, "x.cram")
	cramtest.CopyCRAM(t, "ce_1000.3.0-noref.cram", p)
	cramtest.CopyCRAM(t, "ce_1000.3.0-noref.cram", filepath.Join(src, "other.cram"))
	root := cramtest.OpenRoot(t, src)
	opt := Options{States: states.NewFileStates(1<<30, 1)}
	c, err := Open(p, atRoot(root, "x.cram"), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want, err := c.Identity()
	if err != nil {
		t.Fatal(err)
	}
	evictByOther(t, c, root, opt)
	if got, err := c.Identity(); err != nil || got != want {
		t.Fatalf("identity after the descriptor was closed: %+v (%v), want %+v", got, err, want)
	}
	evictByOther(t, c, root, opt)
	cramtest.CopyCRAM(t, "ce_5b.3.0-noref.cram", p+".new")
	if err := os.Rename(p+".new", p); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Identity(); !errors.Is(err, source.ErrChanged) {
		t.Fatalf("identity after a replacement: %+v (%v), want source.ErrChanged", got, err)
	}
}

// TestCRAMStateCountsURLookups: a CRAM's state counts the @SQ UR: values
// its reference lookups use, once per distinct value (the @SQ lines
// share it), besides the header text they come from.
func TestCRAMStateCountsURLookups(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.cram")
	cramtest.CopyCRAM(t, "corner_header.3.0.cram", p)
	store, err := reference.Open([]string{filepath.Join(corpus.Root(), "testdata", "ref", "ce.fa")}, reference.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	opt := Options{Reference: store, States: states.NewFileStates(1<<30, 4)}
	c, err := Open(p, Path(p), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	f := c.File()
	want := int64(len(f.HeaderText))
	distinct := map[string]bool{}
	for _, r := range f.Refs {
		if r.UR != "" && !distinct[r.UR] {
			distinct[r.UR] = true
			want += int64(len(r.UR))
		}
	}
	if len(distinct) == 0 {
		t.Fatal("the fixture's header has no UR: tags")
	}
	if n, _ := opt.States.Stats(); n < want {
		t.Errorf("state of %d bytes: less than the %d of the header text and its %d UR: values", n, want, len(distinct))
	}
}

// evictByOther opens other.cram of root with opt, whose states.FileStates holds
// one descriptor: that drops c's state, which it checks.
func evictByOther(t *testing.T, c *CRAM, root *os.Root, opt Options) {
	t.Helper()
	o, err := Open("other.cram", atRoot(root, "other.cram"), opt)
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st != nil {
		t.Fatal("the CRAM's state was not dropped by a states.FileStates of one descriptor")
	}
}
