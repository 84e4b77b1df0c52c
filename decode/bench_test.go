package decode_test

import (
	"bytes"
	"hash"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/encode/bam"
	"github.com/cramfs/cramfs/internal/corpus"
)

// storeRef adapts a reference store to decode.ReferenceSource by @SQ name.
type storeRef struct {
	refs    []decode.RefSeq
	contigs []*reference.Contig
}

func newStoreRef(b testing.TB, s *reference.Store, refs []decode.RefSeq) *storeRef {
	r := &storeRef{refs: refs}
	for _, q := range refs {
		c, err := s.Resolve(reference.SQ{Name: q.Name, Length: q.Length, M5: q.M5})
		if err != nil {
			b.Fatal(err)
		}
		r.contigs = append(r.contigs, c)
	}
	return r
}

func (r *storeRef) Bases(dst []byte, id int, start, end int64) ([]byte, error) {
	return r.contigs[id].Bases(dst, start, min(end, r.contigs[id].Len()))
}
func (r *storeRef) Length(int) int64 { return -1 }

// scanRef is a storeRef that is also a decode.ReferenceScanner, as the
// engine's reference is: the lean pass then reads the bases in place.
type scanRef struct{ *storeRef }

func (r scanRef) ScanBases(id int, start, end int64, h hash.Hash, runs [][2]int64) (int64, [][2]int64, error) {
	c := r.contigs[id]
	end = min(end, c.Len())
	start = min(start, end)
	runs, err := c.Scan(start, end, h, runs)
	return end - start, runs, err
}

// BenchmarkDecode decodes every container of testdata files; bytes are the
// CRAM file's size.
func BenchmarkDecode(b *testing.B) {
	root := filepath.Join(corpus.Root(), "testdata")
	for _, name := range []string{"ce_1000.3.0", "ce_1000.3.1-normal", "ce_1000.3.1-archive", "ce_1000.2.1", "ce_1000.scramble-3.0-s1S50", "ce_1000.3.0-sps1"} {
		b.Run(name, func(b *testing.B) {
			p := filepath.Join(root, "cram", name+".cram")
			data, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			store, err := reference.Open([]string{filepath.Join(root, "ref/ce.fa")}, reference.Options{NoEnv: true})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			f, err := decode.Open(p, bytes.NewReader(data), int64(len(data)), decode.OpenOptions{})
			if err != nil {
				b.Fatal(err)
			}
			d := f.NewDecoder(decode.DecoderOptions{Reference: newStoreRef(b, store, f.Refs)})
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				for i := range f.Containers {
					if _, err := d.Container(i); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// benchDataFile opens a CRAM of the benchmark dataset (directory in
// $CRAMFS_BENCH_DATA, file in $CRAMFS_BENCH_CRAM, default
// longread.v31.cram), read into memory, with the dataset's reference,
// closed when b ends; size is the file's bytes.
func benchDataFile(b *testing.B) (f *decode.File, store *reference.Store, size int64) {
	b.Helper()
	dir := os.Getenv("CRAMFS_BENCH_DATA")
	if dir == "" {
		b.Skip("CRAMFS_BENCH_DATA is not set (see ../shared/bench/make-data.sh)")
	}
	name := os.Getenv("CRAMFS_BENCH_CRAM")
	if name == "" {
		name = "longread.v31.cram"
	}
	p := filepath.Join(dir, name)
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	store, err = reference.Open([]string{filepath.Join(dir, "ref.fa")}, reference.Options{NoEnv: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	f, err = decode.Open(p, bytes.NewReader(data), int64(len(data)), decode.OpenOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return f, store, int64(len(data))
}

// BenchmarkBenchData decodes every container of a CRAM of the benchmark
// dataset (directory in $CRAMFS_BENCH_DATA, file in $CRAMFS_BENCH_CRAM,
// default longread.v31.cram) on one goroutine and encodes each record as
// BAM into a reused buffer, as a level-0 convert does without its
// scheduling; bytes are the CRAM file's size.
func BenchmarkBenchData(b *testing.B) {
	f, store, size := benchDataFile(b)
	d := f.NewDecoder(decode.DecoderOptions{Reference: newStoreRef(b, store, f.Refs)})
	var out []byte
	each := func(_ int, r *decode.Record) error {
		var err error
		out, err = bam.AppendRecord(out[:0], r)
		return err
	}
	loopContainers(b, size, len(f.Containers), func(i int) error { return d.ContainerFunc(i, each) })
}

// cpuTime returns the user and system CPU time the process has used: on
// a shared machine it varies less than the wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkBenchDataShapes is BenchmarkBenchData for the lean pass
// (ContainerShapes, as a first access measures records), against a
// reference read in place; bytes are the CRAM file's size.
func BenchmarkBenchDataShapes(b *testing.B) {
	f, store, size := benchDataFile(b)
	d := f.NewDecoder(decode.DecoderOptions{Reference: scanRef{newStoreRef(b, store, f.Refs)}})
	var total int64
	each := func(_ int, s *decode.Shape) error {
		n, _, err := bam.ShapeLayout(s)
		total += n
		return err
	}
	loopContainers(b, size, len(f.Containers), func(i int) error { return d.ContainerShapes(i, each) })
}

// loopContainers runs container(i) for each of n containers per iteration
// of b, whose bytes are size, and reports the process's CPU time per
// iteration beside the wall time.
func loopContainers(b *testing.B, size int64, n int, container func(i int) error) {
	b.SetBytes(size)
	b.ReportAllocs()
	var cpu time.Duration
	for b.Loop() {
		before := cpuTime()
		for i := range n {
			if err := container(i); err != nil {
				b.Fatal(err)
			}
		}
		cpu += cpuTime() - before
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}
