package engine

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/encode/bai"
	"github.com/cramfs/cramfs/encode/csi"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/engine/layout"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/internal/bamtest"
	"github.com/cramfs/cramfs/internal/corpus"
)

// indexByRecord builds the index of a whole BAM file as samtools index
// reads it: each record added to a Builder in turn, with the virtual
// offsets bgzf_tell gives. It returns the index (a CSI when useCSI), or
// the error of the first record refused and the record's number.
func indexByRecord(tb testing.TB, file []byte, useCSI bool) ([]byte, int, error) {
	tb.Helper()
	f := bamtest.Read(tb, file)
	var b indexBuilder = bai.NewBuilder(f.NRef)
	if useCSI {
		b = csi.NewBuilder(f.NRef, f.MaxLen)
	}
	for i, r := range f.Recs {
		if err := b.Add(r.RefID, r.Beg, r.End, r.Flags&4 != 0, r.VBeg, r.VEnd); err != nil {
			return nil, i, err
		}
	}
	out, err := b.Finish(f.Final)
	return out, len(f.Recs), err
}

// checkScanIndex reads v whole and compares the index its scan built with
// the one built record by record from the bytes read.
func checkScanIndex(t *testing.T, v *VirtualBAM) {
	t.Helper()
	whole := readAll(t, v, 1<<20)
	want, _, err := indexByRecord(t, whole, v.IndexExt() == ".csi")
	switch got := v.Index(); {
	case err != nil && got != nil:
		t.Fatalf("the scan built an index (%s), record by record it is refused: %v", v.IndexExt(), err)
	case err == nil && !bytes.Equal(got, want):
		t.Fatalf("%s from the scan (%d bytes) differs from the one built record by record (%d bytes)", v.IndexExt(), len(got), len(want))
	}
}

// TestScanIndexEqualsRecordByRecord: for every fixture and every CRAM of
// the corpus and of testdata that samtools reads, the index the scan
// merges from its workers' fragments is the index built record by record
// from the virtual BAM (or, for an unsorted file, neither exists).
func TestScanIndexEqualsRecordByRecord(t *testing.T) {
	for _, name := range []string{"synth", "small", "unsorted"} {
		t.Run(name, func(t *testing.T) {
			m, _ := newTestManager(t, Options{})
			checkScanIndex(t, openT(t, m, newFakeSource(fixture(t, name), "")))
		})
	}
	dirs := []struct{ dir, manifest string }{
		{corpus.Dir(t), "cram_manifest.tsv"},
		{filepath.Join(corpus.Root(), "testdata"), filepath.Join("cram", "manifest.tsv")},
	}
	m, _ := newTestManager(t, Options{Level: Stored})
	for _, d := range dirs {
		for _, e := range corpus.CRAMManifest(t, filepath.Join(d.dir, d.manifest)) {
			if e.RC != "0" || strings.Contains(e.Path, "truncated") {
				continue
			}
			t.Run(e.Path, func(t *testing.T) {
				var fastas []string
				if e.Ref != "" {
					fastas = []string{filepath.Join(d.dir, e.Ref)}
				}
				store, err := reference.Open(fastas, reference.Options{NoEnv: true})
				if err != nil {
					t.Fatal(err)
				}
				defer store.Close()
				src, err := cram.Open(filepath.Join(d.dir, e.Path), cram.Path(filepath.Join(d.dir, e.Path)), cram.Options{Reference: store, AllowMissingEOF: true})
				if err != nil {
					t.Fatal(err)
				}
				defer src.Close()
				checkScanIndex(t, openT(t, m, src))
			})
		}
	}
}

// TestScanConsumerMergesFragments: the scan's in-order consumer builds the
// index from the fragments its workers made, without going through the
// records again: with every record the workers returned made unindexable
// after the workers finished, the consumer still gives the index built
// record by record. (Adding the records one by one, as the consumer did,
// gives no index.) Both kinds of source: a fake one, and a CRAM, whose
// level-0 scan may take another path through the workers.
func TestScanConsumerMergesFragments(t *testing.T) {
	t.Run("fake", func(t *testing.T) {
		checkConsumerMerges(t, newFakeSource(fixture(t, "synth"), ""))
	})
	t.Run("cram", func(t *testing.T) {
		dir := filepath.Join(corpus.Root(), "testdata")
		store, err := reference.Open([]string{filepath.Join(dir, "ref", "ce.fa")}, reference.Options{NoEnv: true})
		if err != nil {
			corpus.Missing(t, "testdata reference: %v", err)
		}
		defer store.Close()
		src, err := cram.Open(filepath.Join(dir, "cram", "ce_1000.3.0-sps1.cram"), cram.Path(filepath.Join(dir, "cram", "ce_1000.3.0-sps1.cram")), cram.Options{Reference: store})
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		if src.NumContainers() < 10 {
			t.Fatalf("%d containers: the test needs many", src.NumContainers())
		}
		checkConsumerMerges(t, src)
	})
}

// checkConsumerMerges runs the scan of src step by step (the workers'
// part, then the consumer's), spoiling the records between the two.
func checkConsumerMerges(t *testing.T, src source.Source) {
	m, _ := newTestManager(t, Options{Level: Stored})
	want, _, err := indexByRecord(t, readAll(t, openT(t, m, src), 1<<20), false)
	if err != nil {
		t.Fatal(err)
	}
	hdrRaw, err := headerOf(src)
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.getComp()
	if err != nil {
		t.Fatal(err)
	}
	_, hdrSeg, err := compressHeader(c, src, nil, hdrRaw)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	n := src.NumContainers()
	r := &scanRun{m: m, src: src, g: g, gctx: gctx, cancel: cancel, slots: make(chan struct{}, n), res: make([]chan *builtSegment, n)}
	r.lean = m.leanScanner(src) // the workers' path the scan takes
	if _, ok := src.(source.LayoutScanner); ok && r.lean == nil {
		t.Fatal("a level-0 scan of a LayoutScanner does not measure it")
	}
	r.newIndex(hdrRaw)
	recs := 0
	for i := range n { // the workers' part, one container at a time
		r.res[i] = make(chan *builtSegment, 1)
		if err := m.acquire(ctx, &r.party, 0); err != nil {
			t.Fatal(err)
		}
		r.slots <- struct{}{}
		if err := r.build(i); err != nil {
			t.Fatal(err)
		}
		bs := <-r.res[i]
		for k := range bs.recs {
			bs.recs[k].refID = -2 // outside [-1, n_ref): Add refuses it
		}
		for k := range bs.layouts {
			bs.layouts[k].RefID = -2
		}
		recs += bs.numRecords()
		r.res[i] <- bs
	}
	if recs == 0 {
		t.Fatal("the source has no records")
	}
	segs, off, err := r.consume(hdrSeg.CompLen)
	if err != nil || len(segs) != n {
		t.Fatalf("consumed %d of %d containers: %v", len(segs), n, err)
	}
	if r.bld == nil {
		t.Fatal("the consumer gave up the index: it added the records, not the workers' fragments")
	}
	got, err := r.bld.Finish(uint64(off) << 16)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("index from the consumer (%d bytes) differs from the one built record by record (%d bytes)", len(got), len(want))
	}
}

// TestScanRefusesIndexAsAdd: an index that adding the records one by one
// refuses is refused by the scan too, with the same error logged, whether
// the disorder lies within a container (its fragment fails) or between
// two containers each sorted (the merge refuses the second).
func TestScanRefusesIndexAsAdd(t *testing.T) {
	tests := []struct {
		name    string
		fixture string
		swap    [2]int // containers exchanged
	}{
		{"within a container", "unsorted", [2]int{}},
		{"between containers", "synth", [2]int{4, 12}},
		{"reference left and revisited", "synth", [2]int{1, 80}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := newFakeSource(fixture(t, tc.fixture), "")
			a, b := tc.swap[0], tc.swap[1]
			src.conts[a], src.conts[b] = src.conts[b], src.conts[a]
			m, lc := newTestManager(t, Options{Level: Stored})
			v := openT(t, m, src)
			if v.Index() != nil {
				t.Fatal("index built for unsorted records")
			}
			whole := readAll(t, v, 1<<20)
			_, k, err := indexByRecord(t, whole, false)
			if err == nil {
				t.Fatal("records one by one are indexed: the test's disorder is none")
			}
			i := containerOfRecord(t, v.Layout(), whole, k)
			t.Logf("record %d of container %d: %v", k, i, err)
			if want := fmt.Sprintf("err=container %d: %v", i, err); !strings.Contains(lc.text(), want) {
				t.Fatalf("logged %q, want %q", lc.text(), want)
			}
		})
	}
}

// containerOfRecord is the number of the container holding record k of a
// virtual BAM.
func containerOfRecord(t *testing.T, l layout.Layout, whole []byte, k int) int {
	t.Helper()
	f := bamtest.Read(t, whole)
	coff := int64(f.Recs[k].VBeg >> 16)
	for i, s := range l.Segments {
		if s.Offset <= coff && coff < s.End() {
			return i
		}
	}
	t.Fatalf("record %d at %d is in no segment", k, coff)
	return -1
}
