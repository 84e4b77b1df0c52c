package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The cases of cramfs serve: a sequential read and region queries of the
// served BAM over HTTP, against samtools reading the CRAM (with its .crai)
// from a plain static HTTP server on the same machine (net/http's file
// server, with range requests, in this process).

// staticServer serves dir over HTTP on loopback until ctx ends, and
// returns its root URL.
func staticServer(ctx context.Context, dir string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(dir)), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	go func() { <-ctx.Done(); srv.Close() }()
	return "http://" + ln.Addr().String() + "/", nil
}

// freePort returns a loopback address no one listens on now.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// throughServe starts cramfs serve of the flavour's directory (warm
// index, cold block cache), waits for it to answer, times read(url of the
// BAM), and reports the server's peak RSS.
func (b *bench) throughServe(f flavour, read func(url string) command) func(ctx context.Context) (sample, error) {
	return func(ctx context.Context) (sample, error) {
		return b.withServe(ctx, filepath.Dir(f.CRAM), func(root string, _ int) (sample, error) {
			return timeRun(ctx, read(root+f.Stem()+".bam"))
		})
	}
}

// withServe starts cramfs serve of src (warm index, cold block cache),
// waits for it to answer, runs measure(root URL, server pid), and returns
// its sample with the server's peak RSS.
func (b *bench) withServe(ctx context.Context, src string, measure func(root string, pid int) (sample, error)) (sample, error) {
	addr, err := freePort()
	if err != nil {
		return sample{}, err
	}
	c := b.cfs("serve", "--listen", addr, "-T", b.data.Ref, "--cache-dir", b.warmCache, "--cache-size", cacheSize,
		"-@", b.th(), "--level", b.lv(), src)
	root := "http://" + addr + "/"
	s, err := startServe(ctx, c, root)
	defer s.close()
	if err != nil {
		return sample{}, err
	}
	got, err := measure(root, s.cmd.Process.Pid)
	if err != nil {
		return sample{}, err
	}
	rss, err := s.stop()
	if err != nil {
		return sample{}, err
	}
	got.RSSKB = rss
	return got, nil
}

// startServe starts c, a cramfs serve, and waits until url answers.
func startServe(ctx context.Context, c command, url string) (*mountSession, error) {
	m := &mountSession{done: make(chan struct{})}
	m.cmd = c.exec(context.WithoutCancel(ctx))
	m.cmd.Stderr = &m.stderr
	if err := m.cmd.Start(); err != nil {
		close(m.done)
		return m, fmt.Errorf("%s: %w", c, err)
	}
	go func() { m.err = m.cmd.Wait(); close(m.done) }()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return m, nil
		}
		select {
		case <-m.done:
			return m, fmt.Errorf("%s exited before it answered: %v\n%s", c, m.err, m.stderr.String())
		default:
		}
	}
	return m, fmt.Errorf("%s: %s did not answer within 60 s\n%s", c, url, m.stderr.String())
}

// serveCases are the cramfs serve rows of flavour f: its sequential read
// and its region queries, each against samtools reading the CRAM over
// HTTP from a static server.
func (b *bench) serveCases(f flavour) []benchCase {
	var static string
	setup := func(ctx context.Context) error {
		if err := b.warmIndex(f)(ctx); err != nil {
			return err
		}
		var err error
		static, err = staticServer(ctx, filepath.Dir(f.CRAM))
		return err
	}
	cramURL := func() string { return static + filepath.Base(f.CRAM) }
	seq := benchCase{ID: "serve-seq/" + f.ID, Group: "serve: sequential read", Flavour: f.Name, Variant: "view -c", Late: 2,
		Setup: setup, CheckOut: "record count"}
	regions := benchCase{ID: "serve-regions/" + f.ID, Group: "serve: region queries", Flavour: f.Name,
		Variant: fmt.Sprintf("%d regions", len(b.regions)), Late: 2, Setup: setup}
	var noHTTP []string
	for _, t := range b.tools {
		if !readsHTTP(t) {
			noHTTP = append(noHTTP, t.Version)
			continue
		}
		readBAM := func(url string) command { return b.samWith(t, "view", "-@", b.th(), "-c", url) }
		c := seq.add(side{Label: "serve + view -c URL", Desc: "cramfs serve SRC; " + readBAM("URL").String(), Run: b.throughServe(f, readBAM)})
		p := seq.add(side{Label: "view -u CRAM-URL | view -c -", Desc: "static HTTP server; samtools view -u -T REF CRAM-URL | samtools view -c -",
			Run: func(ctx context.Context) (sample, error) {
				return timePipe(ctx, b.samWith(t, "view", "-@", b.th(), "-u", "-T", b.data.Ref, cramURL()), b.samWith(t, "view", "-@", b.th(), "-c", "-"))
			}})
		seq.Pairs = append(seq.Pairs, pair{Cramfs: c, Baseline: p, Tool: t.Version, Measure: measureRecords})

		view := func(file string, extra ...string) command {
			args := append(append([]string{"view", "-@", b.th(), "-u", "-o", "/dev/null"}, extra...), file)
			return b.samWith(t, append(args, b.regions...)...)
		}
		rc := regions.add(side{Label: "serve + .bai, view -u", Desc: "cramfs serve SRC; " + view("URL").String(), Run: b.throughServe(f, func(url string) command { return view(url) })})
		rd := regions.add(side{Label: "CRAM-URL + .crai, view -u", Desc: "static HTTP server; " + view("CRAM-URL", "-T", b.data.Ref).String(),
			Run: func(ctx context.Context) (sample, error) { return timeRun(ctx, view(cramURL(), "-T", b.data.Ref)) }})
		regions.Pairs = append(regions.Pairs, pair{Cramfs: rc, Baseline: rd, Tool: t.Version, Measure: measureRecords})
	}
	if len(seq.Pairs) == 0 {
		seq.Skip = fmt.Sprintf("no samtools here reads http:// (built without libcurl: %v)", noHTTP)
		regions.Skip = seq.Skip
	}
	if !f.HasCRAI() {
		regions.Skip = f.CRAM + " has no .crai"
	}
	return []benchCase{seq, regions}
}

// readsHTTP reports whether the samtools t was built with libcurl, and
// so reads http:// URLs (its --version lists libcurl=yes).
func readsHTTP(t samtool) bool {
	out, err := exec.Command(t.Path, "--version").Output()
	return err == nil && strings.Contains(string(out), "libcurl=yes")
}

// Group and measure of the serve CPU rows.
const (
	groupServeCPU    = "serve: CPU per GiB of BAM"
	measureCPUPerGiB = "CPU s (user+sys) per GiB of BAM"
)

// serveLoadCases are the serve rows of f under load: the server's CPU per
// GiB of BAM over a whole-BAM GET, and eight clients at once.
func (b *bench) serveLoadCases(f flavour) []benchCase {
	var static string
	cpuSetup := func(ctx context.Context) error {
		if err := b.warmIndex(f)(ctx); err != nil {
			return err
		}
		var err error
		static, err = staticServer(ctx, filepath.Dir(f.CRAM))
		return err
	}
	copies := b.copiesSetup(f)
	var staticCopies string
	eightSetup := func(ctx context.Context) error {
		if err := copies(ctx); err != nil {
			return err
		}
		var err error
		staticCopies, err = staticServer(ctx, b.copiesDir(f))
		return err
	}
	cpu := benchCase{ID: "serve-cpu/" + f.ID, Group: groupServeCPU, Flavour: f.Name, Variant: "whole-BAM GET, cold cache", Late: 2, Setup: cpuSetup}
	eight := benchCase{ID: "serve8/" + f.ID, Group: "serve: 8 clients at once", Flavour: f.Name,
		Variant: fmt.Sprintf("%d copies, view -c URL", readersAtOnce), Late: 2, Setup: eightSetup, CheckOut: "record counts"}
	c := cpu.add(side{Label: "serve, whole-BAM GET", Desc: "cramfs serve SRC; CPU of the server over: " + curlGet("URL").String(),
		Run: func(ctx context.Context) (sample, error) {
			return b.withServe(ctx, filepath.Dir(f.CRAM), func(root string, pid int) (sample, error) {
				return serverCPUPerGiB(ctx, pid, curlGet(root+f.Stem()+".bam"))
			})
		}})
	var noHTTP []string
	for _, t := range b.tools {
		if !readsHTTP(t) {
			noHTTP = append(noHTTP, t.Version)
			continue
		}
		produce := func(url string) command {
			return b.samWith(t, append(append([]string{"view", "-@", b.th(), "-T", b.data.Ref, "--no-PG"}, b.samServe()...), url)...)
		}
		s := cpu.add(side{Label: "view -u CRAM-URL (its CPU)", Desc: "static HTTP server; CPU of: " + produce("CRAM-URL").String() + " > counter",
			Run: func(ctx context.Context) (sample, error) {
				return producerCPUPerGiB(ctx, produce(static+filepath.Base(f.CRAM)))
			}})
		cpu.Pairs = append(cpu.Pairs, pair{Cramfs: c, Baseline: s, Tool: t.Version, Measure: measureCPUPerGiB})

		readers := func(root string) [][]command {
			var jobs [][]command
			for _, stem := range copyStems(f) {
				jobs = append(jobs, []command{b.samWith(t, "view", "-@", b.th(), "-c", root+stem+".bam")})
			}
			return jobs
		}
		ec := eight.add(side{Label: "serve + 8 × view -c URL", Desc: "cramfs serve COPIES; 8 at once: " + readers("URL/")[0][0].String(),
			Run: func(ctx context.Context) (sample, error) {
				return b.withServe(ctx, b.copiesDir(f), func(root string, _ int) (sample, error) { return timeAtOnce(ctx, readers(root)) })
			}})
		pipeDesc := b.decodePipes(t, f, func(stem string) string { return "CRAM-URL" })[0]
		es := eight.add(side{Label: "8 × view -u CRAM-URL | view -c -", Desc: "static HTTP server; 8 at once: " + pipeDesc[0].String() + " | " + pipeDesc[1].String(),
			Run: func(ctx context.Context) (sample, error) {
				return timeAtOnce(ctx, b.decodePipes(t, f, func(stem string) string { return staticCopies + stem + ".cram" }))
			}})
		eight.Pairs = append(eight.Pairs, atOncePairs(ec, es, t.Version)...)
	}
	if len(cpu.Pairs) == 0 {
		cpu.Skip = fmt.Sprintf("no samtools here reads http:// (built without libcurl: %v)", noHTTP)
		eight.Skip = cpu.Skip
	}
	return []benchCase{cpu, eight}
}

// curlGet GETs url whole, printing the bytes received.
func curlGet(url string) command {
	return command{Path: "curl", Args: []string{"-sf", "-o", "/dev/null", "-w", "%{size_download}", url}}
}

// serverCPUPerGiB runs get, a curl that prints the bytes it received,
// and returns the CPU the server pid spent meanwhile per GiB received.
func serverCPUPerGiB(ctx context.Context, pid int, get command) (sample, error) {
	before, err := processCPU(pid)
	if err != nil {
		return sample{}, err
	}
	got, err := timeRun(ctx, get)
	if err != nil {
		return sample{}, err
	}
	after, err := processCPU(pid)
	if err != nil {
		return sample{}, err
	}
	n, err := strconv.ParseInt(got.Out, 10, 64)
	if err != nil {
		return sample{}, fmt.Errorf("%s printed %q, want the bytes received", get, got.Out)
	}
	per, err := perGiB(after-before, n)
	if err != nil {
		return sample{}, fmt.Errorf("%s: %w", get, err)
	}
	fmt.Fprintf(os.Stderr, "    %d bytes in %.3f s wall, server CPU %.3f s\n", n, got.Secs, (after - before).Seconds())
	return sample{Secs: per, Out: got.Out}, nil
}

// producerCPUPerGiB runs c, counting the bytes it writes, and returns its
// user+sys CPU per GiB written, with its peak RSS.
func producerCPUPerGiB(ctx context.Context, c command) (sample, error) {
	cmd := c.exec(ctx)
	var n countingWriter
	var stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = &n, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return sample{}, fmt.Errorf("%s: %w\n%s", c, err, stderr.String())
	}
	cpu := childCPU(cmd.ProcessState)
	per, err := perGiB(cpu, int64(n))
	if err != nil {
		return sample{}, fmt.Errorf("%s: %w", c, err)
	}
	fmt.Fprintf(os.Stderr, "    %d bytes in %.3f s wall, CPU %.3f s\n", n, time.Since(start).Seconds(), cpu.Seconds())
	return sample{Secs: per, RSSKB: maxRSS(cmd.ProcessState), Out: strconv.FormatInt(int64(n), 10)}, nil
}

// countingWriter counts and discards what is written to it.
type countingWriter int64

func (w *countingWriter) Write(p []byte) (int, error) {
	*w += countingWriter(len(p))
	return len(p), nil
}
