package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/cramtest"
	"github.com/cramfs/cramfs/internal/hostile"
)

// TestContainerOverMemoryLimitRefused opens a CRAM whose block declares
// 1 GiB of decoded data with the container limit of a 16 MiB cache: the
// scan refuses it with a message naming the file, the container, the block
// and the --cache-size that would allow it, having allocated nothing of
// that size (decoding it took 2.7 GiB before). The unchanged file opens.
func TestContainerOverMemoryLimitRefused(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata", "cram", "ce_1000.3.0.cram"))
	if err != nil {
		t.Fatal(err)
	}
	big, cid, err := hostile.DeclareRawSize(orig, 1<<30)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, b := range map[string][]byte{"big.cram": big, "orig.cram": orig} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	store := cramtest.Reference(t)
	m, _ := newTestManager(t, Options{CacheSize: 16 << 20, Threads: 2})
	limit := m.Options().ContainerMemory()
	if limit != MinContainerMemory {
		t.Fatalf("a 16 MiB cache lets a container take %d bytes, want the minimum %d", limit, MinContainerMemory)
	}
	open := func(name string) (*cram.CRAM, error) {
		c, err := cram.Open(filepath.Join(dir, name), cram.Path(filepath.Join(dir, name)), cram.Options{Reference: store, MaxContainerMemory: limit})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_, err = m.Open(context.Background(), c)
		return c, err
	}
	if _, err := open("orig.cram"); err != nil {
		t.Fatalf("the unchanged file: %v", err)
	}

	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	c, err := open("big.cram")
	runtime.ReadMemStats(&after)
	if !errors.Is(err, decode.ErrTooLarge) {
		t.Fatalf("a container with a 1 GiB block under a %d-byte limit: %v, want decode.ErrTooLarge", limit, err)
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{
		filepath.Join(dir, "big.cram"),
		fmt.Sprintf("container at byte %d", c.ContainerOffset(0)),
		fmt.Sprintf("content id %d, holds %d bytes", cid, 1<<30),
		fmt.Sprintf("limit of %d", limit),
		"--cache-size 4097M",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<20 {
		t.Errorf("refusing the file allocated %d bytes", n)
	}
}

// TestContainerMemoryFollowsTheCache checks the limit: a worker's share of
// half the cache, never below MinContainerMemory, and the cache size the
// error message proposes gives at least what a container needs.
func TestContainerMemoryFollowsTheCache(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want int64
	}{
		{Options{CacheSize: 16 << 20, Threads: 2}, MinContainerMemory},
		{Options{CacheSize: -1, Threads: 4}, MinContainerMemory},
		{Options{CacheSize: 4 << 30, Threads: 2}, 1 << 30},
		{Options{CacheSize: 4 << 30, Threads: 8}, 256 << 20},
	} {
		if got := tc.o.ContainerMemory(); got != tc.want {
			t.Errorf("%+v: %d, want %d", tc.o, got, tc.want)
		}
		need := int64(3<<30 + 12345)
		o := tc.o
		o.CacheSize = o.cacheSizeFor(need)
		if o.ContainerMemory() < need {
			t.Errorf("%+v: the proposed cache size %d gives %d, less than %d", tc.o, o.CacheSize, o.ContainerMemory(), need)
		}
	}
}

// TestFileStatesDroppedAndReadAgain serves two CRAMs from a Manager that
// keeps one descriptor and no cache, dropping every file state between
// reads: the layouts come back from the persisted indexes, the headers'
// blocks and containers are built again from descriptors opened again,
// and every byte and index is what the first read gave.
func TestFileStatesDroppedAndReadAgain(t *testing.T) {
	store := cramtest.Reference(t)
	m, _ := newTestManager(t, Options{CacheSize: -1, Readahead: -1, MaxOpenFiles: 1})
	var vs []*VirtualBAM
	var want, wantIdx [][]byte
	for _, name := range []string{"ce_1000.3.0.cram", "ce_5b.3.0.cram"} {
		c, err := cram.Open(filepath.Join(corpus.Root(), "testdata", "cram", name), cram.Path(filepath.Join(corpus.Root(), "testdata", "cram", name)), cram.Options{Reference: store, States: m.States()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		v := openT(t, m, c)
		vs = append(vs, v)
		want = append(want, readAll(t, v, 1<<16))
		wantIdx = append(wantIdx, v.Index())
	}
	for round := range 3 {
		for i, v := range vs {
			m.states.DropAll()
			if got := readAll(t, v, 7000); !bytes.Equal(got, want[i]) {
				t.Fatalf("round %d, file %d read again: %d bytes differ from the %d first read", round, i, len(got), len(want[i]))
			}
			m.checkInvariants(t, vs...) // with the CRAM's state held
			m.states.DropAll()
			if got := v.Index(); !bytes.Equal(got, wantIdx[i]) {
				t.Fatalf("round %d, file %d: index read again differs", round, i)
			}
			if _, files := m.States().Stats(); files > 1 {
				t.Fatalf("%d descriptors held, bound 1", files)
			}
		}
	}
	m.checkInvariants(t, vs...)
}
