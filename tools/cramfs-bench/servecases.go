package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
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
		addr, err := freePort()
		if err != nil {
			return sample{}, err
		}
		c := b.cfs("serve", "--listen", addr, "-T", b.data.Ref, "--cache-dir", b.warmCache, "--cache-size", cacheSize,
			"-@", b.th(), "--level", b.lv(), filepath.Dir(f.CRAM))
		s, err := startServe(ctx, c, "http://"+addr+"/")
		defer s.close()
		if err != nil {
			return sample{}, err
		}
		got, err := timeRun(ctx, read("http://"+addr+"/"+f.Stem()+".bam"))
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
