package engine

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/engine/source"
)

// containerSpan is one container's build in a traced conversion.
type containerSpan struct {
	i          int
	start, end time.Duration // since the conversion started
	cpu        time.Duration // of the thread that built it
}

// tracedCRAM is a CRAM whose AppendContainerBlocks records a span.
type tracedCRAM struct {
	*cram.CRAM
	t0 time.Time

	mu    sync.Mutex // guards spans
	spans []containerSpan
}

// threadCPU returns the user and system time of the calling thread
// (getrusage RUSAGE_THREAD).
func threadCPU() time.Duration {
	const rusageThread = 1
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func (c *tracedCRAM) AppendContainerBlocks(ctx context.Context, i int, comp *bgzf.Compressor, dst []byte, opt source.BlockOptions) ([]byte, source.Blocks, error) {
	// The thread must not change while its CPU time is read.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, cpu := time.Since(c.t0), threadCPU()
	out, blocks, err := c.CRAM.AppendContainerBlocks(ctx, i, comp, dst, opt)
	s := containerSpan{i: i, start: start, end: time.Since(c.t0), cpu: threadCPU() - cpu}
	c.mu.Lock()
	c.spans = append(c.spans, s)
	c.mu.Unlock()
	return out, blocks, err
}

// BenchmarkBenchDataConvertTrace converts a CRAM of the benchmark dataset
// (see benchDataCRAM) at level 0 with two workers, as `cramfs convert -@
// 2 --level 0 -o /dev/null` does, and logs for each container of the last
// conversion when it started and ended and the CPU time of the thread
// that built it, then the totals: whether the workers stay busy to the
// end or wait at the start, the tail or the writer
// (bench/archive/CONVERT31.md). Run it with -benchtime 1x -v.
func BenchmarkBenchDataConvertTrace(b *testing.B) {
	c := benchDataCRAM(b)
	var last *tracedCRAM
	var wall, cpu time.Duration
	for b.Loop() {
		last = &tracedCRAM{CRAM: c, t0: time.Now()}
		before := cpuTime()
		if err := Convert(context.Background(), last, io.Discard, ConvertOptions{Threads: 2, Level: Stored}); err != nil {
			b.Fatal(err)
		}
		wall, cpu = time.Since(last.t0), cpuTime()-before
	}
	slices.SortFunc(last.spans, func(x, y containerSpan) int { return x.i - y.i })
	var sb strings.Builder
	var sum time.Duration
	for _, s := range last.spans {
		fmt.Fprintf(&sb, "c%-4d start %7.3f end %7.3f wall %6.3f cpu %6.3f\n", s.i, s.start.Seconds(), s.end.Seconds(), (s.end - s.start).Seconds(), s.cpu.Seconds())
		sum += s.cpu
	}
	fmt.Fprintf(&sb, "wall %.3f s, containers' CPU %.3f s, process CPU %.3f s: %.2f cores on average",
		wall.Seconds(), sum.Seconds(), cpu.Seconds(), cpu.Seconds()/wall.Seconds())
	b.Log("\n" + sb.String())
}
