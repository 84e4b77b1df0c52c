package engine

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cramfs/cramfs/encode/bgzf"
)

// TestSegmentDigest checks that the digest a rebuilt segment is compared
// with tells apart what a reader would see differently (data, block
// boundaries) at every level, and agrees for equal segments.
func TestSegmentDigest(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	raw := make([]byte, 3*bgzf.MaxBlockData+1234)
	for i := range raw {
		raw[i] = "ACGT"[r.IntN(4)]
	}
	for _, level := range []int{0, 1, 6} {
		c, err := bgzf.NewCompressor(level)
		if err != nil {
			t.Fatal(err)
		}
		build := func(parts ...[]byte) []byte {
			var seg []byte
			for _, p := range parts {
				if seg, err = c.AppendBlocks(seg, p); err != nil {
					t.Fatal(err)
				}
			}
			return seg
		}
		digest := func(seg []byte) uint32 {
			d, err := segmentDigest(seg)
			if err != nil {
				t.Fatalf("level %d: %v", level, err)
			}
			return d
		}
		base := digest(build(raw))
		if again := digest(build(bytes.Clone(raw))); again != base {
			t.Errorf("level %d: equal segments give %08x and %08x", level, base, again)
		}
		changed := bytes.Clone(raw)
		changed[2*bgzf.MaxBlockData+5] ^= 1
		if d := digest(build(changed)); d == base {
			t.Errorf("level %d: one changed data byte keeps the digest %08x", level, d)
		}
		// The same data cut into other blocks moves virtual offsets.
		k := bgzf.MaxBlockData / 2
		if d := digest(build(raw[:k], raw[k:])); d == base {
			t.Errorf("level %d: other block boundaries keep the digest %08x", level, d)
		}
		if d := digest(nil); d != 0 {
			t.Errorf("level %d: empty segment digest %08x", level, d)
		}
		seg := build(raw)
		if _, err := segmentDigest(seg[:len(seg)-1]); !errors.Is(err, ErrInvalid) {
			t.Errorf("level %d: truncated segment: %v, want ErrInvalid", level, err)
		}
	}
}
