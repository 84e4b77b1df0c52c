package decode_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/hostile"
)

// TestMissingEncoding removes a data series from the compression headers
// of fixtures (its key renamed to one no reader knows, CRCs recomputed),
// or takes a fixture written without it.
// Like htslib, a series that a record reads must have an encoding, and
// the error names it; a series that no record reads needs none, and the
// records are those of the intact file.
func TestMissingEncoding(t *testing.T) {
	for _, c := range []struct {
		file, series string
		read         bool // some record reads the series
	}{
		{"xx_tlen.3.0.cram", "MF", true},             // detached mates
		{"ce_5b.scramble-3.0-Ms50.cram", "RI", true}, // multi-reference slices
		{"ce_1000.3.0.cram", "CF", true},             // every record
		{"ce_unmap2.3.0.cram", "FN", true},           // mapped reads
		{"ce_1000.3.0.cram", "RI", false},            // single-reference slices
		{"corner_unmapped.3.0.cram", "FN", false},    // no mapped read: written without FN
	} {
		t.Run(c.file+"/"+c.series, func(t *testing.T) {
			orig, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata/cram", c.file))
			if err != nil {
				t.Fatal(err)
			}
			offs, err := decode.DataSeriesKeyOffsets(orig, c.series)
			if err != nil {
				t.Fatal(err)
			}
			if len(offs) == 0 && c.read {
				t.Fatalf("no raw compression header holds %s", c.series)
			}
			b := orig
			for _, off := range offs {
				if b, err = hostile.FlipAt(b, int(off), 0x15, true); err != nil {
					t.Fatal(err)
				}
			}
			want, err := containerDigests(orig, true)
			if err != nil {
				t.Fatal(err)
			}
			got, err := containerDigests(b, true)
			if err != nil {
				t.Fatal(err)
			}
			failed := 0
			for i := range got {
				if strings.HasPrefix(want[i], "error: ") {
					t.Fatalf("container %d of the intact file: %s", i, want[i])
				}
				if msg, ok := strings.CutPrefix(got[i], "error: "); ok {
					failed++
					if !c.read || !strings.Contains(msg, "data series "+c.series+" ") || !strings.Contains(msg, "no encoding") {
						t.Errorf("container %d: %s", i, msg)
					}
				} else if got[i] != want[i] {
					t.Errorf("container %d decodes to other records without %s", i, c.series)
				}
			}
			if c.read && failed == 0 {
				t.Errorf("%s removed, no container fails", c.series)
			}
		})
	}
	// The error is an ErrCorrupt.
	orig, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata/cram/ce_1000.3.0.cram"))
	if err != nil {
		t.Fatal(err)
	}
	offs, err := decode.DataSeriesKeyOffsets(orig, "CF")
	if err != nil || len(offs) == 0 {
		t.Fatal(offs, err)
	}
	b, err := hostile.FlipAt(orig, int(offs[0]), 0x15, true)
	if err != nil {
		t.Fatal(err)
	}
	f, err := decode.Open("x.cram", bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.NewDecoder(fakeOpt).Container(0); !errors.Is(err, decode.ErrCorrupt) {
		t.Errorf("CF removed: %v, want ErrCorrupt", err)
	}
}
