package decode

import (
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"github.com/cramfs/cramfs/internal/corpus"
)

// TestQualitiesViewTheQSBlock decodes testdata CRAMs that need no external
// reference (single-slice containers, QS stored EXTERNAL) and checks that
// the preserved qualities are views of the decompressed QS block rather
// than copies: the quality buffer is never used, and every record's Qual
// lies inside one of the slice's external blocks.
func TestQualitiesViewTheQSBlock(t *testing.T) {
	for _, name := range []string{"ce_1000.3.0-noref.cram", "ce_1000.3.0-embedref.cram"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(corpus.Root(), "testdata", "cram", name)
			fh, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer fh.Close()
			st, err := fh.Stat()
			if err != nil {
				t.Fatal(err)
			}
			f, err := Open(path, fh, st.Size(), OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			d := f.NewDecoder(DecoderOptions{})
			viewed := 0
			for i := range f.Containers {
				recs, err := d.Container(i)
				if err != nil {
					t.Fatal(err)
				}
				if !d.viewQuals {
					t.Fatalf("container %d: qualities are copied", i)
				}
				if len(d.quals) != 0 {
					t.Fatalf("container %d: %d quality bytes copied", i, len(d.quals))
				}
				for j := range recs {
					q := recs[j].Qual
					if len(q) == 0 {
						continue
					}
					inBlock := false
					at := uintptr(unsafe.Pointer(&q[0]))
					for _, x := range d.st.pool {
						if len(x.data) == 0 {
							continue
						}
						lo := uintptr(unsafe.Pointer(&x.data[0]))
						if at >= lo && at+uintptr(len(q)) <= lo+uintptr(len(x.data)) {
							inBlock = true
						}
					}
					if !inBlock {
						t.Fatalf("container %d record %d: qualities not in any external block", i, j)
					}
					viewed++
				}
			}
			if viewed == 0 {
				t.Fatal("no record has qualities")
			}
		})
	}
}
