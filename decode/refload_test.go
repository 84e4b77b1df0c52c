package decode_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/decode/reference"
)

// countingRef is a ReferenceSource that counts the bases it hands out.
type countingRef struct {
	*storeRef
	loaded int64
}

func (r *countingRef) Bases(dst []byte, id int, start, end int64) ([]byte, error) {
	n := len(dst)
	out, err := r.storeRef.Bases(dst, id, start, end)
	r.loaded += int64(len(out) - n)
	return out, err
}

// refEnd is the 0-based exclusive end of r on the reference.
func refEnd(r *decode.Record) int64 {
	end := r.Pos
	for _, c := range r.Cigar {
		switch c & 0xf {
		case 0, 2, 3, 7, 8: // M D N = X
			end += int64(c >> 4)
		}
	}
	return max(end, r.Pos+1)
}

// TestReferenceLoadFollowsSpan decodes files of tiny (multi-reference)
// slices on a 1 Mb contig and checks that the reference bases loaded for
// each container stay proportional to the bases its reads cover: at most
// twice the span of the container's reads on each contig plus a few KiB,
// not a fixed window per slice.
func TestReferenceLoadFollowsSpan(t *testing.T) {
	const slack = 4 << 10 // per contig a container touches
	dir := filepath.Join("..", "testdata")
	for _, name := range []string{"ce_1000.scramble-3.0-s1S50", "ce_1000.3.0-sps1", "ce_5b.scramble-3.0-Ms50", "ce_1000.3.0-multislice"} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(dir, "cram", name+".cram")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			store, err := reference.Open([]string{filepath.Join(dir, "ref", "ce.fa")}, reference.Options{NoEnv: true})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			f, err := decode.Open(p, bytes.NewReader(data), int64(len(data)), decode.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			src := &countingRef{storeRef: newStoreRef(t, store, f.Refs)}
			opt := decode.DecoderOptions{Reference: src}
			d := f.NewDecoder(opt)
			var total, covered int64
			for i := range f.Containers {
				// As engine's decoder pool does: nothing is kept from the
				// previous container.
				d.Reset(f, opt)
				src.loaded = 0
				lo, hi := map[int32]int64{}, map[int32]int64{}
				err := d.ContainerFunc(i, func(_ int, r *decode.Record) error {
					if r.RefID < 0 || r.Flags&4 != 0 {
						return nil
					}
					if v, ok := lo[r.RefID]; !ok || r.Pos < v {
						lo[r.RefID] = r.Pos
					}
					hi[r.RefID] = max(hi[r.RefID], refEnd(r))
					return nil
				})
				if err != nil {
					t.Fatalf("container %d: %v", i, err)
				}
				var span int64
				for id, v := range lo {
					span += hi[id] - v
				}
				if limit := 2*span + slack*int64(len(lo)); src.loaded > limit {
					t.Fatalf("container %d: %d reference bases loaded for reads spanning %d bases on %d contigs (limit %d)",
						i, src.loaded, span, len(lo), limit)
				}
				total += src.loaded
				covered += span
			}
			t.Logf("%d containers: %d bases loaded, reads span %d", len(f.Containers), total, covered)
		})
	}
}
