package cram

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/encode/bam"
	"github.com/cramfs/cramfs/encode/bgzf"
)

// timingRunner runs a slice's tasks in turn, timing each: the work a
// split build shares out, measured on one goroutine so that the figures
// hold on a loaded machine.
type timingRunner struct {
	late       int             // the last call's late task, -1 for none
	ref        int             // the last call's reference task, -1 for none
	taskTimes  []time.Duration // of the last call, by task
	slices     int
	lateSlices int
}

func (r *timingRunner) RunBlocks(tasks []decode.BlockTask, late int) {
	r.late, r.ref = late, -1
	r.taskTimes = r.taskTimes[:0]
	r.slices++
	if late >= 0 {
		r.lateSlices++
	}
	for k := range tasks {
		if tasks[k].Reference() {
			r.ref = k
		}
		t0 := time.Now()
		tasks[k].Decompress()
		r.taskTimes = append(r.taskTimes, time.Since(t0))
	}
}

func (r *timingRunner) Wait() {}

// BenchmarkBuildCriticalPath measures, for the first 40 containers of
// each CRAM of the benchmark dataset, the work of a build on one
// goroutine by phase (block tasks, record decoding, BAM and BGZF
// encoding) and reports the critical path of a build that waits for it
// in three schedules: unsplit (all in turn), split (the tasks largest
// first on two goroutines, then the records) and late (the reading of
// the reference, then the QS task on the borrowed worker beside the
// other tasks and the record decoding).
// Per container, in ms summed over the containers.
// $CRAMFS_BENCH_CRAM, when set, names the one CRAM to measure.
func BenchmarkBuildCriticalPath(b *testing.B) {
	names := []string{"sample.v30.cram", "sample.v31.cram", "sample-qbin.v31.cram", "longread.v31.cram"}
	if name := os.Getenv("CRAMFS_BENCH_CRAM"); name != "" {
		names = []string{name}
	}
	for _, name := range names {
		b.Run(strings.TrimSuffix(name, ".cram"), func(b *testing.B) {
			b.Setenv("CRAMFS_BENCH_CRAM", name)
			c := benchDataCRAM(b)
			st, err := c.acquire()
			if err != nil {
				b.Fatal(err)
			}
			defer c.release(st)
			d := st.f.NewDecoder(st.rebuildOpt)
			comp, err := bgzf.NewCompressor(0)
			if err != nil {
				b.Fatal(err)
			}
			n := min(c.NumContainers(), 40)
			var unsplit, split, late, tasks, records, encode time.Duration
			run := &timingRunner{}
			var buf []byte
			for b.Loop() {
				unsplit, split, late, tasks, records, encode = 0, 0, 0, 0, 0, 0
				for i := range n {
					var t1 time.Time
					buf = comp.Begin(buf[:0])
					t0 := time.Now()
					err := d.ContainerFuncWith(i, run, func(j int, r *decode.Record) error {
						if j == 0 {
							t1 = time.Now()
						}
						var err error
						if buf, err = bam.AppendRecord(buf, r); err != nil {
							return err
						}
						buf, err = comp.Cut(buf)
						return err
					})
					if err != nil {
						b.Fatal(err)
					}
					if buf, _, err = comp.End(buf); err != nil {
						b.Fatal(err)
					}
					t2 := time.Now()
					var sum, lateT, refT time.Duration
					for k, d := range run.taskTimes {
						sum += d
						switch k {
						case run.late:
							lateT = d
						case run.ref:
							refT = d
						}
					}
					rec := t1.Sub(t0) - sum // one slice a container here
					enc := t2.Sub(t1)
					tasks, records, encode = tasks+sum, records+rec, encode+enc
					unsplit += sum + rec + enc
					split += twoWay(run.taskTimes) + rec + enc
					if run.late >= 0 {
						// The build's goroutine runs the other tasks
						// (the helper joins them after QS, ignored) and
						// the records, the helper the reference, then
						// QS meanwhile.
						early := max(sum-lateT-refT, refT)
						late += max(early+rec, refT+lateT) + enc
					} else {
						late += twoWay(run.taskTimes) + rec + enc
					}
				}
			}
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
			b.ReportMetric(ms(tasks), "tasks-ms")
			b.ReportMetric(ms(records), "records-ms")
			b.ReportMetric(ms(encode), "encode-ms")
			b.ReportMetric(ms(unsplit), "unsplit-ms")
			b.ReportMetric(ms(split), "split-ms")
			b.ReportMetric(ms(late), "late-ms")
			b.ReportMetric(float64(run.lateSlices)/float64(max(run.slices, 1)), "late-slices")
		})
	}
}

// twoWay is the time two goroutines take over tasks of these durations,
// each taking the largest left when free.
func twoWay(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.SortFunc(s, func(a, b time.Duration) int { return int(b - a) })
	var a, c time.Duration
	for _, d := range s {
		if a <= c {
			a += d
		} else {
			c += d
		}
	}
	return max(a, c)
}
