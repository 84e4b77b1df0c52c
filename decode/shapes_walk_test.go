package decode_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/hostile"
)

// leanRefOptions are the options the engine's lean pass runs with for f:
// the references of store read in place (scanRef, marks views) when it
// has every one of f's, else fakeRef (copied views) without MD5 checks.
func leanRefOptions(f *decode.File, store *reference.Store) decode.DecoderOptions {
	r := &storeRef{refs: f.Refs}
	for _, q := range f.Refs {
		c, err := store.Resolve(reference.SQ{Name: q.Name, Length: q.Length, M5: q.M5})
		if err != nil {
			return decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true}
		}
		r.contigs = append(r.contigs, c)
	}
	return decode.DecoderOptions{Reference: scanRef{r}}
}

// TestLeanWalkerEveryFixture checks the lean pass's feature walker
// (leanWalker) against the full decode's (featureWalker) on every CRAM
// fixture: the same CIGAR counts, alignment ends, MD and NM lengths, with
// the fixtures' own references where they resolve (the Ns of the
// reference count in MD and NM) and a made-up one elsewhere.
func TestLeanWalkerEveryFixture(t *testing.T) {
	root := filepath.Join(corpus.Root(), "testdata")
	store, err := reference.Open([]string{filepath.Join(root, "ref", "ce.fa"), filepath.Join(root, "ref", "xx.fa")}, reference.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	names, err := filepath.Glob(filepath.Join(root, "cram", "*.cram"))
	if err != nil {
		t.Fatal(err)
	}
	compared, withRef := 0, 0
	for _, p := range names {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := decode.Open("x.cram", bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
		if err != nil || f.Def.Major >= 4 {
			continue // damaged on purpose, or a version the lean pass leaves to the full decode
		}
		opt := leanRefOptions(f, store)
		if _, ok := opt.Reference.(scanRef); ok {
			withRef++
		}
		t.Run(filepath.Base(p), func(t *testing.T) { compared += compareShapes(t, b, opt) })
	}
	if compared < 200 || withRef < 50 {
		t.Fatalf("only %d containers compared, %d files with their reference", compared, withRef)
	}
}

// TestLeanWalkerBenchData is TestLeanWalkerEveryFixture on the benchmark
// dataset (CRAMFS_BENCH_DATA), whose long reads have millions of features.
func TestLeanWalkerBenchData(t *testing.T) {
	dir := os.Getenv("CRAMFS_BENCH_DATA")
	if dir == "" || testing.Short() {
		t.Skip("CRAMFS_BENCH_DATA is not set (see ../shared/bench/make-data.sh)")
	}
	store, err := reference.Open([]string{filepath.Join(dir, "ref.fa")}, reference.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, name := range []string{"longread.v31.cram", "sample-qbin.v31.cram"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		f, err := decode.Open(name, bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		opt := leanRefOptions(f, store)
		if _, ok := opt.Reference.(scanRef); !ok {
			t.Fatalf("%s: references not found in ref.fa", name)
		}
		if n := compareShapes(t, b, opt); n != len(f.Containers) {
			t.Fatalf("%s: %d of %d containers compared", name, n, len(f.Containers))
		}
	}
}

// FuzzLeanWalker is FuzzContainerShapes with the fixtures' own reference
// read in place, as the engine reads it: the lean walker's fast run
// (marks views only) then meets the damage too.
func FuzzLeanWalker(f *testing.F) {
	root := filepath.Join(corpus.Root(), "testdata")
	store, err := reference.Open([]string{filepath.Join(root, "ref", "ce.fa")}, reference.Options{NoEnv: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { store.Close() })
	// corner_long's reads of thousands of insertions and deletions take
	// the fast run's rules for every class of feature.
	names := []string{"ce_1000.3.0.cram", "ce_1000.3.1-normal.cram", "ce_1000.3.0-multislice.cram", "corner_long.3.0.cram"}
	origs := make([][]byte, len(names))
	for i, name := range names {
		if origs[i], err = os.ReadFile(filepath.Join(root, "cram", name)); err != nil {
			f.Fatal(err)
		}
		f.Add(uint8(i), uint32(0), uint8(0))
		f.Add(uint8(i), uint32(len(origs[i])/2), uint8(0x10))
		f.Add(uint8(i), uint32(len(origs[i])*3/4), uint8(0x01))
	}
	f.Fuzz(func(t *testing.T, which uint8, off uint32, mask byte) {
		orig := origs[int(which)%len(origs)]
		b, err := hostile.FlipAt(orig, int(off%uint32(len(orig))), mask, true)
		if err != nil {
			return
		}
		file, err := decode.Open("x.cram", bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
		if err != nil {
			return
		}
		compareShapes(t, b, leanRefOptions(file, store))
	})
}
