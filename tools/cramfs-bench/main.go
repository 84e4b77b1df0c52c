// Command cramfs-bench runs cramfs and two samtools (the oracle, 1.16,
// and the newest, 1.23) side by side on the benchmark dataset
// (/work/shared/bench/make-data.sh) or on a plain directory of CRAMs, and
// reports the median time of each side, their ratio and the peak RSS as
// markdown tables, one per samtools, with the project's performance targets
// (targets.go) checked against the newest (OUT/BENCHMARKS.md), an SVG bar chart of the ratios
// per samtools (OUT/ratios-VERSION.svg) and every sample
// (OUT/results.tsv), into which a run of some cases (-only) merges.
//
// Run it from tools/ (its own module, so that the product's dependencies
// and `go test ./...` stay free of it). Every round runs each command of a case once, in turn, so that drift on
// a shared machine hits all sides alike.
//
//	go run ./cramfs-bench -data /tmp/cramfs-bench/data -rounds 3
//	go run ./cramfs-bench -data /tmp/cramfs-bench/data -rounds 3 -only '^first-access/'
//	go run ./cramfs-bench -data testdata/cram -ref testdata/ref/ce.fa -only 'ce_1000' -out /tmp/b
//
// With -codecs it instead times the Go codec decoders (decode/codec/...)
// against htscodecs' C decoders (../shared/bench/htscodecs-bench.c, built
// with gcc and run with SCALAR=1) on the codec vectors of the conformance
// corpus and, with -blocks, on real blocks (internal/cmd/blockdump output),
// and writes OUT/CODECS.md with Go MB/s, C MB/s and Go/C per codec family:
//
//	go run ./cramfs-bench -codecs -blocks /tmp/blocks -rounds 3
package main

import (
	"context"
	"debug/buildinfo"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type config struct {
	data, ref, cramfs, out, only string
	scratch                      string
	cramfsRev                    string
	samtools, samtoolsNew        string
	rounds, threads, nRegions    int
	serveLevel                   int
	reportOnly                   bool

	// -codecs mode
	codecs            bool
	blocks, corpus    string
	cBench, cBenchSrc string
	codecTime         time.Duration
	prefaultGiB       int
}

func main() {
	if os.Getenv(floorEnv) != "" {
		if err := floorMain(os.Args[1:]); err != nil {
			fmt.Fprintf(os.Stderr, "cramfs-bench: %v\n", err)
			os.Exit(1)
		}
		return
	}
	if v := os.Getenv(prefaultEnv); v != "" {
		gib, err := strconv.Atoi(v)
		if err == nil {
			_, err = prefault(gib)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "cramfs-bench: %s=%s: %v\n", prefaultEnv, v, err)
			os.Exit(1)
		}
		return
	}
	var c config
	flag.StringVar(&c.data, "data", "", "dataset directory (make-data.sh output, or any directory of CRAMs)")
	flag.StringVar(&c.ref, "ref", "", "reference FASTA (default DATA/ref.fa)")
	flag.StringVar(&c.cramfs, "cramfs", "", "cramfs binary (default: go build ./cmd/cramfs into a temporary directory)")
	flag.StringVar(&c.cramfsRev, "cramfs-rev", "", "commit of the measured cramfs for the report (default: the module's git HEAD when the bench builds cramfs, else the binary's build info)")
	flag.StringVar(&c.samtools, "samtools", "samtools", "samtools binary of the oracle (1.16); the output checks and the dataset setup use it")
	flag.StringVar(&c.samtoolsNew, "samtools-new", filepath.Join(moduleRoot(), "..", "shared", "tools", "samtools-1.23", "samtools"),
		"newest samtools binary: every row is run against it too, and the targets are checked against it (\"\" for none)")
	flag.StringVar(&c.out, "out", "bench", "directory for BENCHMARKS.md, results.tsv and ratios-VERSION.svg, or CODECS.md with -codecs (\"\" to write nothing)")
	flag.StringVar(&c.only, "only", "", "run only the cases whose id matches this regular expression and merge their rows into OUT/results.tsv "+
		"(ids: convert/FLAVOUR/levelN, first-access/FLAVOUR, seq-read/FLAVOUR, seq-read-x4/v30, regions/FLAVOUR, regions-count/FLAVOUR, "+
		"serve-seq/FLAVOUR, serve-regions/FLAVOUR, floor-dd/v30, floor-view/v30, readers8/v30, serve-cpu/v30, serve8/v30, "+
		"first-access-x16/v30, seq-read-x16/v30, regions-x16/v30; "+
		"the small-slice flavours are v30-sps1 and v30-s1S50); with -codecs, the streams whose family or file name matches")
	flag.StringVar(&c.scratch, "scratch", "", "scratch directory, kept after the run, where later runs use the ×16 file again and make everything else anew (default: a temporary directory, removed)")
	flag.IntVar(&c.rounds, "rounds", 5, "rounds per case")
	flag.IntVar(&c.threads, "threads", 2, "threads for both tools (-@)")
	flag.IntVar(&c.nRegions, "regions", 20, "number of region queries")
	flag.IntVar(&c.prefaultGiB, "prefault-gib", 0, "touch this many GiB of memory once before the cases (0: none), so that a VM whose host backs memory on first use serves the mount's page cache as in its steady state")
	flag.IntVar(&c.serveLevel, "serve-level", 0, "BGZF level of the mount and of first access (the mount's default is 0: stored blocks)")
	flag.BoolVar(&c.reportOnly, "report-only", false, "run nothing: write OUT/BENCHMARKS.md and the charts again from OUT/results.tsv")
	flag.BoolVar(&c.codecs, "codecs", false, "time the Go codec decoders against htscodecs' C decoders instead (writes OUT/CODECS.md); -data is not used")
	flag.StringVar(&c.blocks, "blocks", "", "with -codecs: also time the real blocks in DIR/<codec>/<name> (r4x8, r4x16, arith, fqzcomp, tok3; internal/cmd/blockdump output)")
	flag.StringVar(&c.corpus, "corpus", defaultCorpus(), "with -codecs: conformance corpus holding codec_vectors_manifest.tsv (\"\" for none; default $CRAMFS_CORPUS or ../shared/corpus from the module root)")
	flag.StringVar(&c.cBench, "htscodecs-bench", "", "with -codecs: prebuilt C timer (default: build -htscodecs-bench-src with gcc)")
	flag.StringVar(&c.cBenchSrc, "htscodecs-bench-src", filepath.Join(moduleRoot(), "..", "shared", "bench", "htscodecs-bench.c"), "with -codecs: source of the C timer")
	flag.DurationVar(&c.codecTime, "codec-time", 200*time.Millisecond, "with -codecs: minimum timed duration per stream, side and round")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintf(os.Stderr, "cramfs-bench: %v\n", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if c.codecs {
		return runCodecMode(c)
	}
	if c.data == "" || c.rounds < 1 || c.threads < 1 || flag.NArg() != 0 {
		flag.Usage()
		return errors.New("want -data DIR, -rounds >= 1, -threads >= 1 and no positional arguments")
	}
	only, err := regexp.Compile(c.only)
	if err != nil {
		return fmt.Errorf("-only: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	b, cleanup, err := setup(ctx, c)
	defer cleanup()
	if err != nil {
		return err
	}
	all := b.cases()
	if c.reportOnly {
		return writeOutputs(c, b, all, nil)
	}
	if c.prefaultGiB > 0 {
		d, err := prefaultChild(c.prefaultGiB)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "cramfs-bench: touched %d GiB of memory in %.1f s\n", c.prefaultGiB, d.Seconds())
	}
	var selected []benchCase
	for _, k := range all {
		switch {
		case !only.MatchString(k.ID):
		case k.Skip != "":
			fmt.Fprintf(os.Stderr, "cramfs-bench: skipping %s: %s\n", k.ID, k.Skip)
		default:
			selected = append(selected, k)
		}
	}
	if len(selected) == 0 {
		return fmt.Errorf("-only %q matches no case", c.only)
	}
	slices.SortStableFunc(selected, func(a, b benchCase) int { return a.Late - b.Late })
	run := runInfo{Date: time.Now().UTC().Format("2006-01-02 15:04"), CramfsRev: b.cramfsRev, Threads: c.threads,
		Command: "cramfs-bench " + shellQuote(os.Args[1:])}
	// The report is written after every case, so that a run stopped
	// before its end leaves the rows it measured (marked partial).
	save := func(sofar []result) error { return writeOutputs(c, b, all, sofar) }
	results, failed := runCases(ctx, selected, c.rounds, run, save)
	if err := writeTables(os.Stdout, results, nil); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d cases failed (their rows are not in the report): %s", len(failed), len(selected), strings.Join(failed, "; "))
	}
	return nil
}

// runCases runs each case in turn, going on after a case fails (so that
// an unattended run reports what it could measure) but not after an
// interrupt, and calls save (if not nil) with the rows so far after each
// case; it returns the rows measured and what failed.
func runCases(ctx context.Context, cases []benchCase, rounds int, run runInfo, save func([]result) error) ([]result, []string) {
	var results []result
	var failed []string
	start := time.Now()
	for i, k := range cases {
		if ctx.Err() != nil {
			failed = append(failed, fmt.Sprintf("%d cases not run: %v", len(cases)-i, ctx.Err()))
			break
		}
		t0 := time.Now()
		fmt.Fprintf(os.Stderr, "[%d/%d] %s\n", i+1, len(cases), k.ID)
		load0, loadErr := machineLoad()
		rs, err := runCase(ctx, k, rounds)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cramfs-bench: %s: %v\n", k.ID, err)
			failed = append(failed, fmt.Sprintf("%s: %v", k.ID, firstLineOf(err.Error())))
			continue
		}
		load1, err1 := machineLoad()
		for j := range rs {
			rs[j].Run = run
			if loadErr == nil && err1 == nil {
				rs[j].Load = []float64{load0, load1}
			}
		}
		results = append(results, rs...)
		if save != nil {
			if err := save(results); err != nil {
				failed = append(failed, fmt.Sprintf("writing the report after %s: %v", k.ID, err))
				break
			}
		}
		fmt.Fprintf(os.Stderr, "  %s took %.0f s (%.0f s so far)\n", k.ID, time.Since(t0).Seconds(), time.Since(start).Seconds())
	}
	return results, failed
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// runCodecMode runs -codecs; -only then selects the streams whose family
// or file name matches.
func runCodecMode(c config) error {
	if flag.NArg() != 0 {
		flag.Usage()
		return errors.New("-codecs takes no positional arguments")
	}
	cc := codecConfig{
		blocks: c.blocks, corpus: c.corpus, cBench: c.cBench, cSrc: c.cBenchSrc, out: c.out,
		rounds: c.rounds, target: c.codecTime,
		cmdline: "go run ./cramfs-bench " + shellQuote(os.Args[1:]),
	}
	if c.only != "" {
		re, err := regexp.Compile(c.only)
		if err != nil {
			return fmt.Errorf("-only: %w", err)
		}
		cc.only = re
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runCodecs(ctx, cc, os.Stdout, os.Stderr)
}

// keptScratch is what a -scratch directory keeps from one run to the
// next: the ×16 file, the slowest input to make, which depends on the
// dataset and samtools only. Everything else there (warm indexes, copies
// with their indexes, the floor's BAM) depends on the cramfs measured and
// is made again.
var keptScratch = fmt.Sprintf("x%d", bigCopies)

// scratchDir returns the run's scratch directory: dir, made if missing,
// emptied of all but keptScratch, and kept; or a temporary one that
// cleanup removes. cleanup is never nil.
func scratchDir(dir string) (string, func(), error) {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "cramfs-bench-")
		if err != nil {
			return "", func() {}, err
		}
		return tmp, func() { os.RemoveAll(tmp) }, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", func() {}, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", func() {}, err
	}
	for _, e := range entries {
		if e.Name() == keptScratch {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return "", func() {}, err
		}
	}
	return dir, func() {}, nil
}

// setup resolves the tools and the dataset and makes the scratch
// directories; cleanup removes them and is never nil.
func setup(ctx context.Context, c config) (*bench, func(), error) {
	scratch, cleanup, err := scratchDir(c.scratch)
	if err != nil {
		return nil, cleanup, err
	}
	d, err := openDataset(c.data, c.ref)
	if err != nil {
		return nil, cleanup, err
	}
	b := &bench{data: d, threads: c.threads, serveLevel: c.serveLevel, scratch: scratch, warmCache: filepath.Join(scratch, "warm-cache")}
	for _, path := range []string{c.samtools, c.samtoolsNew} {
		if path == "" {
			continue
		}
		t, err := findSamtools(path)
		if err != nil {
			return nil, cleanup, err
		}
		if slices.ContainsFunc(b.tools, func(u samtool) bool { return u.Version == t.Version }) {
			return nil, cleanup, fmt.Errorf("-samtools and -samtools-new are both samtools %s", t.Version)
		}
		b.tools = append(b.tools, t)
	}
	if len(b.tools) == 0 {
		return nil, cleanup, errors.New("want -samtools")
	}
	if b.cramfs, err = buildCramfs(ctx, c.cramfs, scratch); err != nil {
		return nil, cleanup, err
	}
	switch {
	case c.cramfsRev != "":
		b.cramfsRev = c.cramfsRev
	case c.cramfs == "":
		b.cramfsRev = gitRevision(ctx, moduleRoot())
	default:
		b.cramfsRev = revision(b.cramfs)
	}
	if contigs, err := readFai(d.Ref + ".fai"); err == nil {
		b.regions = pickRegions(contigs, c.nRegions)
	} else {
		return nil, cleanup, fmt.Errorf("region list: %w", err)
	}
	return b, cleanup, nil
}

// findSamtools resolves path and reads its version from --version.
func findSamtools(path string) (samtool, error) {
	p, err := exec.LookPath(path)
	if err != nil {
		return samtool{}, err
	}
	if p, err = filepath.Abs(p); err != nil {
		return samtool{}, err
	}
	line := firstLine(p, "--version")
	v, ok := strings.CutPrefix(line, "samtools ")
	if !ok {
		return samtool{}, fmt.Errorf("%s --version printed %q, want \"samtools VERSION\"", p, line)
	}
	v, _, _ = strings.Cut(v, "-")
	return samtool{Path: p, Version: v, Line: line}, nil
}

// gitRevision is the HEAD commit of the git checkout dir (12 digits,
// "+dirty" when it has uncommitted changes), or "unknown".
func gitRevision(ctx context.Context, dir string) string {
	out, err := exec.CommandContext(ctx, "git", "-C", dir, "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	rev := strings.TrimSpace(string(out))
	rev = rev[:min(12, len(rev))]
	if st, err := exec.CommandContext(ctx, "git", "-C", dir, "status", "--porcelain", "--untracked-files=no").Output(); err != nil || len(st) > 0 {
		rev += "+dirty"
	}
	return rev
}

// revision is the commit a Go binary was built from (its build info's
// vcs.revision, 12 digits, "+dirty" when the tree had changes), or
// "unknown".
func revision(bin string) string {
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "unknown"
	}
	rev, dirty := "", false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "unknown"
	}
	rev = rev[:min(12, len(rev))]
	if dirty {
		rev += "+dirty"
	}
	return rev
}

// buildCramfs returns path if given, else builds ./cmd/cramfs into dir.
func buildCramfs(ctx context.Context, path, dir string) (string, error) {
	if path != "" {
		return filepath.Abs(path)
	}
	out := filepath.Join(dir, "cramfs")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/cramfs/cramfs/cmd/cramfs")
	cmd.Dir = moduleRoot()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // the static binary the README installs
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build cramfs: %w", err)
	}
	return out, nil
}

// runCase runs the setup, then rounds of every side in turn, and returns
// one result per pair.
func runCase(ctx context.Context, k benchCase, rounds int) ([]result, error) {
	if k.Setup != nil {
		if err := k.Setup(ctx); err != nil {
			return nil, fmt.Errorf("setup: %w", err)
		}
	}
	samples := make([][]sample, len(k.Sides))
	for r := 0; r < rounds; r++ {
		round := make([]sample, len(k.Sides))
		for i, s := range k.Sides {
			x, err := s.Run(ctx)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", r+1, s.Label, err)
			}
			fmt.Fprintf(os.Stderr, "  round %d %-32s %8.3f s  %6.0f MiB\n", r+1, s.Label, x.Secs, float64(x.RSSKB)/1024)
			round[i] = x
			samples[i] = append(samples[i], x)
		}
		if k.AfterRound != nil {
			if err := k.AfterRound(ctx, r); err != nil {
				return nil, err
			}
		}
		if err := k.checkOut(r, round); err != nil {
			return nil, err
		}
	}
	out := make([]result, len(k.Pairs))
	for i, p := range k.Pairs {
		out[i] = result{ID: k.ID, Group: k.Group, Flavour: k.Flavour, Variant: k.Variant, Measure: p.Measure,
			Tool: p.Tool, Baseline: k.Sides[p.Baseline].Label, Cramfs: p.Stat.of(samples[p.Cramfs]), Samtools: p.Stat.of(samples[p.Baseline])}
	}
	return out, nil
}

// checkOut fails when the two sides of a pair printed different output in
// a round (with CheckOut set).
func (k benchCase) checkOut(round int, s []sample) error {
	if k.CheckOut == "" {
		return nil
	}
	for _, p := range k.Pairs {
		if s[p.Cramfs].Out != s[p.Baseline].Out {
			return fmt.Errorf("round %d: %s differs: %s %q, samtools %s %s %q", round+1, k.CheckOut,
				k.Sides[p.Cramfs].Label, s[p.Cramfs].Out, p.Tool, k.Sides[p.Baseline].Label, s[p.Baseline].Out)
		}
	}
	return nil
}
