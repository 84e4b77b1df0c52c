package decode

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/hostile"
)

// acgtRef is a ReferenceSource whose bases repeat ACGT.
type acgtRef struct{}

func (acgtRef) Bases(dst []byte, _ int, start, end int64) ([]byte, error) {
	for p := start; p < end; p++ {
		dst = append(dst, "ACGT"[p%4])
	}
	return dst, nil
}
func (acgtRef) Length(int) int64 { return -1 }

// TestLeanDefersFixedTags checks the deferred tags of the lean pass
// (leanTagLine) on a fixture whose integer tags lie in blocks of their
// own: the pass defers them, and a slice whose tag block holds fewer
// bytes than its records move through still fails, at the slice's end,
// as it failed at the record that ran past the block; one holding more
// does not fail (reads past never check that a block is used up).
func TestLeanDefersFixedTags(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata", "cram", "ce_1000.3.0.cram"))
	if err != nil {
		t.Fatal(err)
	}
	measure := func(b []byte) (*Decoder, error) {
		f, err := Open("x.cram", bytes.NewReader(b), int64(len(b)), OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d := f.NewDecoder(DecoderOptions{Reference: acgtRef{}, IgnoreMD5: true})
		return d, d.ContainerShapes(0, func(int, *Shape) error { return nil })
	}
	d, err := measure(orig)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(d.f.Containers[0].Landmarks); n != 1 {
		t.Fatalf("container 0 has %d slices, want 1", n)
	}
	// The block of a tag AS, and the bytes the records move through it.
	var cid int32 = -1
	moves := map[int32]int64{}
	for _, line := range d.lean.lines {
		for _, tag := range line.deferred {
			moves[tag.val.ContentID] += int64(tag.n * line.recs)
			if tag.key[0] == 'A' && tag.key[1] == 'S' && line.recs > 0 {
				cid = tag.val.ContentID
			}
		}
	}
	moved := moves[cid]
	if cid < 0 || moved == 0 {
		t.Fatalf("AS is not deferred (block %d, %d bytes)", cid, moved)
	}
	for _, c := range []struct {
		raw  int64
		fail bool
	}{{moved, false}, {moved + 100, false}, {moved - 1, true}, {0, true}} {
		b, err := hostile.DeclareBlockRawSize(orig, cid, c.raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := measure(b); (err != nil) != c.fail {
			t.Errorf("AS block of %d bytes for %d: error %v, want failure %v", c.raw, moved, err, c.fail)
		}
	}
}
