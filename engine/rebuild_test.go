package engine

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/internal/corpus"
)

// otherReference writes a copy of testdata's ce.fa with every A and C
// swapped: the same contigs and lengths, other bases.
func otherReference(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata", "ref", "ce.fa"))
	if err != nil {
		t.Fatal(err)
	}
	inName := false
	for i, c := range b {
		switch {
		case c == '>':
			inName = true
		case c == '\n':
			inName = false
		case !inName && c == 'A':
			b[i] = 'C'
		case !inName && c == 'C':
			b[i] = 'A'
		}
	}
	path := filepath.Join(t.TempDir(), "other.fa")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func openTestCRAM(t *testing.T, name, ref string) *cram.CRAM {
	t.Helper()
	store, err := reference.Open([]string{ref}, reference.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	c, err := cram.Open(filepath.Join(corpus.Root(), "testdata", "cram", name), cram.Path(filepath.Join(corpus.Root(), "testdata", "cram", name)), cram.Options{Reference: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRebuildSkipsOnlyMD5 checks what RebuildContainerBlocks leaves out:
// with the right reference it gives AppendContainerBlocks' bytes; with a
// reference of other bases AppendContainerBlocks fails its slice MD5 check
// while the rebuild decodes (other bytes, which the digest then rejects).
func TestRebuildSkipsOnlyMD5(t *testing.T) {
	const name = "ce_1000.3.0.cram"
	right := openTestCRAM(t, name, filepath.Join(corpus.Root(), "testdata", "ref", "ce.fa"))
	wrong := openTestCRAM(t, name, otherReference(t))
	ctx := context.Background()
	comp, err := bgzf.NewCompressor(0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range right.NumContainers() {
		want, _, err := right.AppendContainerBlocks(ctx, i, comp, nil, source.BlockOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := right.AppendContainerBlocks(ctx, i, comp, nil, source.BlockOptions{Rebuild: true})
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("container %d: rebuild gives %d bytes, %v; want the %d bytes of a checked build", i, len(got), err, len(want))
		}
		if _, _, err := wrong.AppendContainerBlocks(ctx, i, comp, nil, source.BlockOptions{}); !errors.Is(err, decode.ErrReference) {
			t.Fatalf("container %d: checked build with another reference: %v, want ErrReference", i, err)
		}
		got, _, err = wrong.AppendContainerBlocks(ctx, i, comp, nil, source.BlockOptions{Rebuild: true})
		if err != nil || bytes.Equal(got, want) {
			t.Fatalf("container %d: rebuild with another reference: %d bytes equal to the right ones: %v, error %v", i, len(got), bytes.Equal(got, want), err)
		}
	}
}

// TestRebuildWithOtherReferenceNamesIt reads, through a layout made with
// the right reference, a file opened with another one (a mount given
// another -T than the one its persisted layout was scanned with): the
// rebuilt segment differs from the layout and the read fails with the
// slice MD5 error that names the reference, not only ErrMismatch.
func TestRebuildWithOtherReferenceNamesIt(t *testing.T) {
	const name = "ce_1000.3.0.cram"
	dir := t.TempDir()
	ctx := context.Background()
	opts := Options{CacheDir: dir, Level: Stored, Readahead: -1}
	m := NewManager(opts, nil)
	v, err := m.Open(ctx, openTestCRAM(t, name, filepath.Join(corpus.Root(), "testdata", "ref", "ce.fa")))
	if err != nil {
		t.Fatal(err)
	}
	size := v.Size()
	m.Close()

	m = NewManager(opts, nil)
	defer m.Close()
	v, err = m.Open(ctx, openTestCRAM(t, name, otherReference(t)))
	if err != nil {
		t.Fatal(err)
	}
	if v.Size() != size {
		t.Fatalf("size %d with the persisted layout, %d before", v.Size(), size)
	}
	_, err = v.ReadAt(make([]byte, 4096), v.Layout().Segments[0].Offset)
	if !errors.Is(err, decode.ErrReference) {
		t.Fatalf("read with another reference: %v, want decode.ErrReference", err)
	}
}
