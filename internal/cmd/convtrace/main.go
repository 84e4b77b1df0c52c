// Command convtrace runs engine.Convert on one CRAM and prints, for each
// container, when a worker started and ended it (seconds since the start)
// and the CPU time (user+sys) of the thread that built it, then the
// process's totals: enough to tell whether a conversion keeps every
// worker busy to its end or waits at its start, its tail or its writer.
//
//	go run ./internal/cmd/convtrace -T ref.fa -t 2 -o /dev/null x.cram
//
// The output is the BAM at level 0 (`cramfs convert --level 0`), or at
// -level. Linux only (per-thread CPU time from getrusage).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/engine/source"
)

// span is one container's build.
type span struct {
	i          int
	start, end time.Duration // since the conversion started
	cpu        time.Duration // of the building thread
}

// timedCRAM is a CRAM whose AppendContainerBlocks records a span.
type timedCRAM struct {
	*cram.CRAM
	t0 time.Time

	mu    sync.Mutex // guards spans
	spans []span
}

// rusageThread is getrusage's RUSAGE_THREAD.
const rusageThread = 1

// threadCPU returns the user and system time of the calling thread.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (c *timedCRAM) AppendContainerBlocks(ctx context.Context, i int, comp *bgzf.Compressor, dst []byte, opt source.BlockOptions) ([]byte, source.Blocks, error) {
	// The thread must not change while its CPU time is read.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, cpu := time.Since(c.t0), threadCPU()
	out, blocks, err := c.CRAM.AppendContainerBlocks(ctx, i, comp, dst, opt)
	s := span{i: i, start: start, end: time.Since(c.t0), cpu: threadCPU() - cpu}
	c.mu.Lock()
	c.spans = append(c.spans, s)
	c.mu.Unlock()
	return out, blocks, err
}

// timedWriter counts the Write calls to w and the time spent in them.
type timedWriter struct {
	w       io.Writer
	n       int
	total   time.Duration
	longest time.Duration
}

func (t *timedWriter) Write(b []byte) (int, error) {
	s := time.Now()
	n, err := t.w.Write(b)
	d := time.Since(s)
	t.n++
	t.total += d
	t.longest = max(t.longest, d)
	return n, err
}

func main() {
	ref := flag.String("T", "", "reference FASTA")
	threads := flag.Int("t", 2, "workers")
	level := flag.Int("level", 0, "BGZF level, 0 to 9")
	out := flag.String("o", "/dev/null", "output BAM")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: convtrace [-T ref.fa] [-t N] [-level L] [-o out.bam] x.cram")
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *ref, *out, *threads, *level); err != nil {
		fmt.Fprintln(os.Stderr, "convtrace:", err)
		os.Exit(1)
	}
}

func run(in, ref, out string, threads, level int) error {
	lv, err := engine.LevelOf(level)
	if err != nil {
		return err
	}
	var refs []string
	if ref != "" {
		refs = []string{ref}
	}
	store, err := reference.Open(refs, reference.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	t0 := time.Now()
	c, err := cram.Open(in, cram.Path(in), cram.Options{Reference: store})
	if err != nil {
		return err
	}
	defer c.Close()
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	src := &timedCRAM{CRAM: c, t0: t0}
	w := &timedWriter{w: f}
	if err := engine.Convert(context.Background(), src, w, engine.ConvertOptions{Threads: threads, Level: lv}); err != nil {
		return err
	}
	total := time.Since(t0)
	slices.SortFunc(src.spans, func(a, b span) int { return a.i - b.i })
	var sum time.Duration
	for _, s := range src.spans {
		fmt.Printf("c%-4d start %7.3f end %7.3f wall %6.3f cpu %6.3f\n", s.i, s.start.Seconds(), s.end.Seconds(), (s.end - s.start).Seconds(), s.cpu.Seconds())
		sum += s.cpu
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return err
	}
	user, sys := time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
	fmt.Printf("writes %d in %.3f s, longest %.3f s\n", w.n, w.total.Seconds(), w.longest.Seconds())
	fmt.Printf("wall %.3f s; containers' CPU %.3f s; process CPU %.3f s (user %.3f, sys %.3f), %.2f cores on average\n",
		total.Seconds(), sum.Seconds(), (user + sys).Seconds(), user.Seconds(), sys.Seconds(), (user+sys).Seconds()/total.Seconds())
	return nil
}
