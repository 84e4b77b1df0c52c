package cram

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/internal/corpus"
)

// lender is a source.Helpers that lends a worker whenever asked, up to
// max at once, and counts what it lent and got back.
type lender struct {
	max            int32
	out, lent, got atomic.Int32
}

func (l *lender) TryAcquire() bool {
	if l.out.Add(1) > l.max {
		l.out.Add(-1)
		return false
	}
	l.lent.Add(1)
	return true
}

func (l *lender) Release() {
	l.out.Add(-1)
	l.got.Add(1)
}

// TestSplitBuildsMatch builds every container of every testdata CRAM
// (split however small) with and without Helpers, from goroutines at
// once that share the lender, and checks that the BGZF bytes and what
// they hold are the same and that every worker lent was given back.
func TestSplitBuildsMatch(t *testing.T) {
	old := minSplitBytes
	minSplitBytes = 0
	defer func() { minSplitBytes = old }()
	root := filepath.Join(corpus.Root(), "testdata")
	lent := int32(0)
	for _, e := range corpus.CRAMManifest(t, filepath.Join(root, "cram", "manifest.tsv")) {
		if e.RC != "0" || strings.Contains(e.Path, "truncated") {
			continue
		}
		t.Run(e.Path, func(t *testing.T) {
			var fastas []string
			if e.Ref != "" {
				fastas = []string{filepath.Join(root, e.Ref)}
			}
			l := &lender{max: 1}
			splitMatches(t, filepath.Join(root, e.Path), fastas, l)
			lent += l.lent.Load()
			if l.lent.Load() != l.got.Load() || l.out.Load() != 0 {
				t.Fatalf("%d workers lent, %d given back, %d out", l.lent.Load(), l.got.Load(), l.out.Load())
			}
		})
	}
	if lent == 0 {
		t.Fatal("no build borrowed a worker")
	}
}

// splitMatches builds each container of the CRAM at path unsplit and, on
// two goroutines at once, with l as Helpers, and fails t unless all give
// the same bytes.
func splitMatches(t *testing.T, path string, fastas []string, l *lender) {
	t.Helper()
	store, err := reference.Open(fastas, reference.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c, err := Open(path, Path(path), Options{Reference: store, AllowMissingEOF: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < c.NumContainers(); i++ {
		want, wb, werr := buildBlocks(c, i, nil)
		var wg sync.WaitGroup
		var got [2][]byte
		var gb [2]source.Blocks
		var gerr [2]error
		for k := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				got[k], gb[k], gerr[k] = buildBlocks(c, i, l)
			}()
		}
		wg.Wait()
		for k := range got {
			if (werr == nil) != (gerr[k] == nil) || werr != nil && werr.Error() != gerr[k].Error() {
				t.Fatalf("container %d: unsplit build fails with %v, split with %v", i, werr, gerr[k])
			}
			if !bytes.Equal(got[k], want) || gb[k] != wb {
				t.Fatalf("container %d: split build gives %d bytes (%+v), unsplit %d (%+v)", i, len(got[k]), gb[k], len(want), wb)
			}
		}
	}
}

// buildBlocks builds container i of c as level-1 BGZF blocks, with h as
// Helpers when not nil.
func buildBlocks(c *CRAM, i int, h source.Helpers) ([]byte, source.Blocks, error) {
	comp, err := bgzf.NewCompressor(1)
	if err != nil {
		return nil, source.Blocks{}, err
	}
	opt := source.BlockOptions{}
	if h != nil {
		opt.Helpers = h
	}
	return c.AppendContainerBlocks(context.Background(), i, comp, nil, opt)
}

// BenchmarkBuildSplit builds the first 40 containers of each CRAM of the
// benchmark dataset as level-0 BGZF, rebuild checks, on one goroutine
// (unsplit) and with a worker always lent (split): the latency of a
// build a reader waits for while the other worker idles. Rebuilds skip
// the MD5s, as the mount's builds of segments of known digest do.
func BenchmarkBuildSplit(b *testing.B) {
	for _, name := range []string{"sample.v30.cram", "sample.v31.cram", "sample-qbin.v31.cram", "longread.v31.cram"} {
		for _, split := range []bool{false, true} {
			mode := "unsplit"
			if split {
				mode = "split"
			}
			b.Run(strings.TrimSuffix(name, ".cram")+"/"+mode, func(b *testing.B) {
				b.Setenv("CRAMFS_BENCH_CRAM", name)
				c := benchDataCRAM(b)
				n := min(c.NumContainers(), 40)
				opt := source.BlockOptions{Rebuild: true}
				if split {
					opt.Helpers = &lender{max: 1}
				}
				comp, err := bgzf.NewCompressor(0)
				if err != nil {
					b.Fatal(err)
				}
				var buf []byte
				var raw int64
				for b.Loop() {
					raw = 0
					for i := range n {
						var bl source.Blocks
						if buf, bl, err = c.AppendContainerBlocks(context.Background(), i, comp, buf[:0], opt); err != nil {
							b.Fatal(err)
						}
						raw += bl.Raw
					}
				}
				b.SetBytes(raw)
				b.ReportAllocs()
			})
		}
	}
}
