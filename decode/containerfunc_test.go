package decode_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/internal/corpus"
)

// TestContainerFuncMatchesContainer decodes every testdata CRAM both ways
// (lossy names, multi-slice, no reference, embedded reference, every 3.1
// profile) and checks that ContainerFunc hands over exactly the records
// Container returns, in order, and that an error from the callback stops
// it and comes back unwrapped.
func TestContainerFuncMatchesContainer(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(corpus.Root(), "testdata", "cram", "*.cram"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata CRAMs: %v", err)
	}
	opt := decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			f, err := decode.Open(p, bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			whole, each := f.NewDecoder(opt), f.NewDecoder(opt)
			for i := range f.Containers {
				want, werr := whole.Container(i)
				if werr != nil {
					// A damaged container fails the same way both ways.
					gerr := each.ContainerFunc(i, func(int, *decode.Record) error { return nil })
					var we, ge *decode.Error
					if !errors.As(werr, &we) || !errors.As(gerr, &ge) || we.Offset != ge.Offset || we.ContentID != ge.ContentID {
						t.Fatalf("container %d: Container fails with %v, ContainerFunc with %v", i, werr, gerr)
					}
					continue
				}
				n := 0
				err = each.ContainerFunc(i, func(j int, r *decode.Record) error {
					if j != n || j >= len(want) {
						t.Fatalf("container %d: record %d handed over as %d of %d", i, n, j, len(want))
					}
					if w := &want[j]; !sameRecord(r, w) {
						t.Fatalf("container %d record %d: ContainerFunc gives %+v, Container %+v", i, j, *r, *w)
					}
					n++
					return nil
				})
				if err != nil || n != len(want) {
					t.Fatalf("container %d: %d records, %v; want %d", i, n, err, len(want))
				}
			}
			if _, err := whole.Container(0); err != nil {
				return
			}
			stop := errors.New("stop")
			calls := 0
			err = each.ContainerFunc(0, func(int, *decode.Record) error { calls++; return stop })
			if err != stop || calls != 1 {
				t.Fatalf("callback error: ContainerFunc returned %v after %d calls, want the callback's error after 1", err, calls)
			}
		})
	}
}

func sameRecord(a, b *decode.Record) bool {
	return bytes.Equal(a.Name, b.Name) && a.Flags == b.Flags && a.RefID == b.RefID && a.Pos == b.Pos &&
		a.MapQ == b.MapQ && slices.Equal(a.Cigar, b.Cigar) && a.MateRefID == b.MateRefID &&
		a.MatePos == b.MatePos && a.TemplateLength == b.TemplateLength && bytes.Equal(a.Seq, b.Seq) &&
		bytes.Equal(a.Qual, b.Qual) && bytes.Equal(a.Aux, b.Aux)
}
