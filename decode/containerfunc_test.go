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
	eachTestdataCRAM(t, func(t *testing.T, f *decode.File) {
		bothWays(t, f)
		if _, err := f.NewDecoder(fakeOpt).Container(0); err != nil {
			return
		}
		stop := errors.New("stop")
		calls := 0
		err := f.NewDecoder(fakeOpt).ContainerFunc(0, func(int, *decode.Record) error { calls++; return stop })
		if err != stop || calls != 1 {
			t.Fatalf("callback error: ContainerFunc returned %v after %d calls, want the callback's error after 1", err, calls)
		}
	})
}

// eachTestdataCRAM runs fn in a subtest for every testdata CRAM, opened.
func eachTestdataCRAM(t *testing.T, fn func(t *testing.T, f *decode.File)) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(corpus.Root(), "testdata", "cram", "*.cram"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata CRAMs: %v", err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			f, _ := openFile(t, p)
			fn(t, f)
		})
	}
}

// fakeOpt decodes against fakeRef, without MD5 checks.
var fakeOpt = decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true}

// openFile opens the CRAM at path, read into memory, and returns it with
// its bytes.
func openFile(t *testing.T, path string) (*decode.File, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := decode.Open(path, bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return f, b
}

// bothWays decodes every container of f with Container and with
// ContainerFunc and fails t unless they give the same records in the same
// order, or fail on the same block of the same container.
func bothWays(t *testing.T, f *decode.File) {
	t.Helper()
	whole, each := f.NewDecoder(fakeOpt), f.NewDecoder(fakeOpt)
	for i := range f.Containers {
		want, werr := whole.Container(i)
		n := 0
		gerr := each.ContainerFunc(i, func(j int, r *decode.Record) error {
			if werr == nil && (j != n || j >= len(want) || !sameRecord(r, &want[j])) {
				t.Fatalf("container %d: record %d handed over as %d differs from Container's", i, n, j)
			}
			n++
			return nil
		})
		if werr != nil {
			var we, ge *decode.Error
			if !errors.As(werr, &we) || !errors.As(gerr, &ge) || we.Offset != ge.Offset || we.ContentID != ge.ContentID {
				t.Fatalf("container %d: Container fails with %v, ContainerFunc with %v", i, werr, gerr)
			}
			continue
		}
		if gerr != nil || n != len(want) {
			t.Fatalf("container %d: ContainerFunc gives %d records, %v; Container %d", i, n, gerr, len(want))
		}
	}
}

func sameRecord(a, b *decode.Record) bool {
	return bytes.Equal(a.Name, b.Name) && a.Flags == b.Flags && a.RefID == b.RefID && a.Pos == b.Pos &&
		a.MapQ == b.MapQ && slices.Equal(a.Cigar, b.Cigar) && a.MateRefID == b.MateRefID &&
		a.MatePos == b.MatePos && a.TemplateLength == b.TemplateLength && bytes.Equal(a.Seq, b.Seq) &&
		bytes.Equal(a.Qual, b.Qual) && bytes.Equal(a.Aux, b.Aux)
}
