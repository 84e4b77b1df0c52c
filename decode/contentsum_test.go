package decode_test

import (
	"hash/crc32"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/internal/corpus"
)

// TestContentSumIsOfTheContainerRead: with DecoderOptions.ContentSum,
// ContainerFunc and ContainerShapes report the CRC-32C of the bytes of
// each container's data in the file (what its records come from); without
// it, 0.
func TestContentSumIsOfTheContainerRead(t *testing.T) {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for _, name := range []string{"ce_1000.3.0-multislice.cram", "ce_1000.3.0-sps1.cram", "ce_1000.2.1.cram"} {
		t.Run(name, func(t *testing.T) {
			f, b := openFile(t, filepath.Join(corpus.Root(), "testdata", "cram", name))
			opt := fakeOpt
			opt.ContentSum = true
			d, plain := f.NewDecoder(opt), f.NewDecoder(fakeOpt)
			for i, h := range f.Containers {
				want := crc32.Checksum(b[h.DataOffset():h.End()], castagnoli)
				if err := d.ContainerFunc(i, func(int, *decode.Record) error { return nil }); err != nil {
					t.Fatal(err)
				}
				if got := d.ContentSum(); got != want {
					t.Fatalf("container %d: ContainerFunc's sum %08x, the file's bytes %08x", i, got, want)
				}
				if err := d.ContainerShapes(i, func(int, *decode.Shape) error { return nil }); err != nil {
					t.Fatal(err)
				}
				if got := d.ContentSum(); got != want {
					t.Fatalf("container %d: ContainerShapes' sum %08x, the file's bytes %08x", i, got, want)
				}
				if err := plain.ContainerFunc(i, func(int, *decode.Record) error { return nil }); err != nil || plain.ContentSum() != 0 {
					t.Fatalf("container %d without the option: sum %08x, %v", i, plain.ContentSum(), err)
				}
			}
			if len(f.Containers) == 0 {
				t.Fatal("no data container")
			}
		})
	}
}
