package engine

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/internal/corpus"
)

// FuzzWalk frames arbitrary bytes as BGZF blocks (walkBlocks), as BAM
// records (walkRecords) and as a BAM header (parseNRef): no panic, and
// what is accepted lies within the input.
func FuzzWalk(f *testing.F) {
	store, err := reference.Open([]string{filepath.Join(corpus.Root(), "testdata", "ref", "ce.fa")}, reference.Options{NoEnv: true})
	if err != nil {
		f.Fatal(err)
	}
	defer store.Close()
	for _, name := range []string{"ce_5b.3.0.cram", "ce_supp.3.1-archive.cram"} {
		src, err := cram.Open(filepath.Join(corpus.Root(), "testdata", "cram", name), cram.Path(filepath.Join(corpus.Root(), "testdata", "cram", name)), cram.Options{Reference: store})
		if err != nil {
			continue
		}
		if h, err := src.Header(); err == nil {
			f.Add(h)
		}
		if raw, err := src.AppendContainer(context.Background(), 0, nil); err == nil {
			f.Add(raw)
		}
		var bgzf bytes.Buffer
		if err := Convert(context.Background(), src, &bgzf, ConvertOptions{Threads: 1, Level: 1}); err == nil {
			f.Add(bgzf.Bytes())
		}
		src.Close()
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		blocks, err := walkBlocks(nil, b)
		if _, derr := segmentDigest(b); (derr == nil) != (err == nil) {
			t.Fatalf("walkBlocks: %v, segmentDigest: %v", err, derr)
		}
		if err == nil {
			var u int64
			for _, bl := range blocks {
				if bl.cOff < 0 || bl.cOff >= int64(len(b)) || bl.uOff != u || bl.uLen < 0 || bl.uLen > 1<<16 {
					t.Fatalf("block %+v out of place", bl)
				}
				u += bl.uLen
			}
		}
		if recs, err := walkRecords(nil, b); err == nil {
			for _, r := range recs {
				if r.uStart < 0 || r.uEnd > int64(len(b)) || r.uStart >= r.uEnd {
					t.Fatalf("record %+v outside %d bytes", r, len(b))
				}
			}
		}
		if n, err := parseNRef(b); err == nil && (n < 0 || n > len(b)) {
			t.Fatalf("n_ref %d from %d bytes", n, len(b))
		}
	})
}
