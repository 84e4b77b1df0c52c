package engine

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/internal/corpus"
)

// TestDecoderPoolAcrossFiles decodes the containers of several testdata
// CRAMs in turn through one pool holding a single decoder, so that every
// container is decoded by a decoder that last served another file (other
// codecs, another reference, names generated from another file name), and
// checks each against the same file decoded with a pool of its own.
func TestDecoderPoolAcrossFiles(t *testing.T) {
	dir := filepath.Join(corpus.Root(), "testdata")
	store, err := reference.Open([]string{filepath.Join(dir, "ref", "ce.fa")}, reference.Options{RefPath: "/nonexistent", RefCache: "/nonexistent"})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	names := []string{"ce_1000.3.1-archive.cram", "ce_1000.3.0-lossynames.cram", "ce_1000.3.0-multislice.cram", "ce_1000.2.1.cram", "ce_1000.3.1-small.cram", "ce_1000.3.0-noref.cram"}
	shared := NewDecoderPool(1)
	var own, pooled []*CRAM
	for _, n := range names {
		for _, list := range []*[]*CRAM{&own, &pooled} {
			opt := CRAMOptions{Reference: store}
			if list == &pooled {
				opt.Decoders = shared
			}
			c, err := OpenCRAM(filepath.Join(dir, "cram", n), opt)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			*list = append(*list, c)
		}
	}
	ctx := context.Background()
	for i := 0; ; i++ {
		any := false
		for f := range names {
			if i >= own[f].NumContainers() {
				continue
			}
			any = true
			want, err := own[f].AppendContainer(ctx, i, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pooled[f].AppendContainer(ctx, i, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s container %d: a decoder reused from another file gives %d bytes that differ from a fresh decoder's %d", names[f], i, len(got), len(want))
			}
		}
		if !any {
			break
		}
	}
}
