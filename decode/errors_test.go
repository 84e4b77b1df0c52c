package decode_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/hostile"
)

// TestBlockErrorOnce damages the compressed data of external blocks
// (CRCs recomputed, so the codec sees the damage): a block that fails to
// decompress gives one *Error, whose ContentID is the block's and whose
// message names the file, the container and the content id once each.
func TestBlockErrorOnce(t *testing.T) {
	name := filepath.Join(corpus.Root(), "testdata/cram/ce_1000.3.0.cram")
	orig, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	vs, err := hostile.Variants(orig, 3, hostile.Options{PerKind: 100000})
	if err != nil {
		t.Fatal(err)
	}
	dataOf := regexp.MustCompile(`block \d+ \(external (\d+)\) data byte`)
	checked := 0
	for _, v := range vs {
		m := dataOf.FindStringSubmatch(v.Name)
		if v.Kind != hostile.FlipFixed || m == nil {
			continue
		}
		id, _ := strconv.Atoi(m[1])
		f, err := decode.Open("x.cram", bytes.NewReader(v.Data), int64(len(v.Data)), decode.OpenOptions{})
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		d := f.NewDecoder(decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true})
		for i := range f.Containers {
			_, err := d.Container(i)
			if err == nil || !strings.Contains(err.Error(), "decompress") && !strings.Contains(err.Error(), "gzip") {
				continue
			}
			n := 0
			for e := err; e != nil; e = errors.Unwrap(e) {
				if _, ok := e.(*decode.Error); ok {
					n++
				}
			}
			var de *decode.Error
			if !errors.As(err, &de) || n != 1 {
				t.Fatalf("%s: %d *decode.Error in %q, want 1", v.Name, n, err)
			}
			if de.ContentID != id || de.File != "x.cram" || de.Offset != f.Containers[i].Offset {
				t.Errorf("%s: Error{File %q, Offset %d, ContentID %d}, want x.cram, %d, %d", v.Name, de.File, de.Offset, de.ContentID, f.Containers[i].Offset, id)
			}
			msg := err.Error()
			if c := strings.Count(msg, "content id"); c != 1 || !strings.Contains(msg, "content id "+m[1]+":") {
				t.Errorf("%s: %q names the content id %d times, want once (%d)", v.Name, msg, c, id)
			}
			if strings.Count(msg, "x.cram") != 1 || strings.Count(msg, "container at byte") != 1 {
				t.Errorf("%s: %q: the file and container are not named once", v.Name, msg)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no damaged block failed to decompress")
	}
	t.Logf("%d block errors checked", checked)
}
