// Command cramfs-bench runs cramfs and samtools side by side on the
// benchmark dataset (/work/shared/bench/make-data.sh) or on a plain
// directory of CRAMs, and reports the median time of each side, their
// ratio and the peak RSS as a markdown table (OUT/BENCHMARKS.md) and an
// SVG bar chart of the ratios (OUT/ratios.svg).
//
// The two sides of every pair run alternately (cramfs, samtools, cramfs,
// ...) so that drift on a shared machine hits both alike.
//
//	go run ./cmd/cramfs-bench -data /tmp/cramfs-bench/data -rounds 3
//	go run ./cmd/cramfs-bench -data testdata/cram -ref testdata/ref/ce.fa -only 'ce_1000'
//
// With -codecs it instead times the Go codec decoders (decode/codec/...)
// against htscodecs' C decoders (../shared/bench/htscodecs-bench.c, built
// with gcc and run with SCALAR=1) on the codec vectors of the conformance
// corpus and, with -blocks, on real blocks (internal/cmd/blockdump output),
// and writes OUT/CODECS.md with Go MB/s, C MB/s and Go/C per codec family:
//
//	go run ./cmd/cramfs-bench -codecs -blocks /tmp/blocks -rounds 3
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"time"
)

type config struct {
	data, ref, cramfs, samtools, out, only string
	rounds, threads, nRegions              int
	serveLevel                             int

	// -codecs mode
	codecs            bool
	blocks, corpus    string
	cBench, cBenchSrc string
	codecTime         time.Duration
}

func main() {
	var c config
	flag.StringVar(&c.data, "data", "", "dataset directory (make-data.sh output, or any directory of CRAMs)")
	flag.StringVar(&c.ref, "ref", "", "reference FASTA (default DATA/ref.fa)")
	flag.StringVar(&c.cramfs, "cramfs", "", "cramfs binary (default: go build ./cmd/cramfs into a temporary directory)")
	flag.StringVar(&c.samtools, "samtools", "samtools", "samtools binary")
	flag.StringVar(&c.out, "out", "bench", "directory for BENCHMARKS.md and ratios.svg, or CODECS.md with -codecs (\"\" to write nothing)")
	flag.StringVar(&c.only, "only", "", "run only the cases whose id matches this regular expression (ids: convert/FLAVOUR/levelN, first-access/FLAVOUR, seq-read/FLAVOUR, seq-read-plain/FLAVOUR, seq-read-x4/v30, regions/FLAVOUR; the small-slice flavours are v30-sps1 and v30-s1S50); with -codecs, the streams whose family or file name matches")
	flag.IntVar(&c.rounds, "rounds", 5, "rounds per pair")
	flag.IntVar(&c.threads, "threads", 2, "threads for both tools (-@)")
	flag.IntVar(&c.nRegions, "regions", 20, "number of region queries")
	flag.IntVar(&c.serveLevel, "serve-level", 0, "BGZF level of the mount and of first access (the mount's default is 0: stored blocks)")
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
	var selected []benchCase
	for _, k := range b.cases() {
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
	var results []result
	for i, k := range selected {
		fmt.Fprintf(os.Stderr, "[%d/%d] %s\n", i+1, len(selected), k.ID)
		rs, err := runCase(ctx, k, c.rounds)
		if err != nil {
			return fmt.Errorf("%s: %w", k.ID, err)
		}
		results = append(results, rs...)
	}
	if err := writeTable(os.Stdout, results); err != nil {
		return err
	}
	return writeOutputs(c, b, selected, results)
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
		cmdline: "go run ./cmd/cramfs-bench " + shellQuote(os.Args[1:]),
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

// setup resolves the tools and the dataset and makes the scratch
// directories; cleanup removes them and is never nil.
func setup(ctx context.Context, c config) (*bench, func(), error) {
	scratch, err := os.MkdirTemp("", "cramfs-bench-")
	if err != nil {
		return nil, func() {}, err
	}
	cleanup := func() { os.RemoveAll(scratch) }
	d, err := openDataset(c.data, c.ref)
	if err != nil {
		return nil, cleanup, err
	}
	b := &bench{data: d, threads: c.threads, serveLevel: c.serveLevel, scratch: scratch, warmCache: filepath.Join(scratch, "warm-cache")}
	if b.samtools, err = exec.LookPath(c.samtools); err != nil {
		return nil, cleanup, err
	}
	if b.cramfs, err = buildCramfs(ctx, c.cramfs, scratch); err != nil {
		return nil, cleanup, err
	}
	if contigs, err := readFai(d.Ref + ".fai"); err == nil {
		b.regions = pickRegions(contigs, c.nRegions)
	} else {
		return nil, cleanup, fmt.Errorf("region list: %w", err)
	}
	return b, cleanup, nil
}

// buildCramfs returns path if given, else builds ./cmd/cramfs into dir.
func buildCramfs(ctx context.Context, path, dir string) (string, error) {
	if path != "" {
		return filepath.Abs(path)
	}
	out := filepath.Join(dir, "cramfs")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "github.com/cramfs/cramfs/cmd/cramfs")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build cramfs: %w", err)
	}
	return out, nil
}

// runCase runs the setup, then rounds of cramfs and every baseline in
// turn, and returns one result per baseline.
func runCase(ctx context.Context, k benchCase, rounds int) ([]result, error) {
	if k.Setup != nil {
		if err := k.Setup(ctx); err != nil {
			return nil, fmt.Errorf("setup: %w", err)
		}
	}
	sides := append([]side{k.Cramfs}, k.Baselines...)
	samples := make([][]sample, len(sides))
	for r := 0; r < rounds; r++ {
		round := make([]sample, len(sides))
		for i, s := range sides {
			x, err := s.Run(ctx)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", r+1, s.Label, err)
			}
			fmt.Fprintf(os.Stderr, "  round %d %-28s %8.3f s  %6.0f MiB\n", r+1, s.Label, x.Secs, float64(x.RSSKB)/1024)
			round[i] = x
			samples[i] = append(samples[i], x)
		}
		if k.AfterRound != nil {
			if err := k.AfterRound(ctx, r, round); err != nil {
				return nil, err
			}
		}
	}
	out := make([]result, len(k.Baselines))
	for i, bl := range k.Baselines {
		out[i] = result{Group: k.Group, Flavour: k.Flavour, Variant: k.Variant, Baseline: bl.Label,
			Cramfs: samples[0], Samtools: samples[i+1]}
	}
	return out, nil
}

// writeOutputs writes OUT/BENCHMARKS.md (context, table, legend) and
// OUT/ratios.svg.
func writeOutputs(c config, b *bench, cases []benchCase, rs []result) error {
	if c.out == "" {
		return nil
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	var md strings.Builder
	writePreamble(&md, c, b)
	if err := writeTable(&md, rs); err != nil {
		return err
	}
	writeLegend(&md, b, cases)
	if err := os.WriteFile(filepath.Join(c.out, "BENCHMARKS.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(c.out, "ratios.svg"))
	if err != nil {
		return err
	}
	title := fmt.Sprintf("cramfs vs samtools: median time ratio (%d rounds, %d threads)", c.rounds, c.threads)
	if err := writeSVG(f, title, rs); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writePreamble(w io.Writer, c config, b *bench) {
	fmt.Fprintf(w, "# cramfs vs samtools benchmarks\n\n")
	fmt.Fprintf(w, "Generated by `go run ./cmd/cramfs-bench -data %s -rounds %d -threads %d -serve-level %d", b.data.Dir, c.rounds, c.threads, c.serveLevel)
	if c.only != "" {
		fmt.Fprintf(w, " -only '%s'", c.only)
	}
	fmt.Fprintf(w, "` on %s.\n\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "- machine: %s, %d CPUs visible, %s\n", cpuModel(), runtime.NumCPU(), runtime.Version())
	fmt.Fprintf(w, "- samtools: %s\n", firstLine(b.samtools, "--version"))
	fmt.Fprintf(w, "- dataset: %s (reference %s)\n", b.data.Dir, filepath.Base(b.data.Ref))
	for _, f := range b.data.Flavours {
		if st, err := os.Stat(f.CRAM); err == nil {
			fmt.Fprintf(w, "  - %s: %s, %.2f MiB\n", f.Name, filepath.Base(f.CRAM), float64(st.Size())/(1<<20))
		}
	}
	fmt.Fprintf(w, "\nEach pair runs alternately, cramfs first, for %d rounds; times are medians of wall-clock seconds, "+
		"ratio = cramfs / samtools (below 1: cramfs faster). Peak RSS is ru_maxrss, the largest over the rounds; "+
		"for the mount rows it is the mount process's, read after the query and unmount. "+
		"Mount rows: the layout index is built once beforehand (warm index), every round mounts afresh (cold block cache) "+
		"and only the samtools read through the mount is timed. "+
		"The \"file ×4\" row reads a CRAM made of four copies of the 3.0 file (samtools cat, re-encoded by samtools view -C) "+
		"through the mount: its peak RSS beside the 3.0 row's shows whether memory grows with the file. "+
		"The \"3.0, %dk reads\" rows convert the first %d reads of the 3.0 file written in slices of one read "+
		"(samtools head, then samtools view -C or scramble), as other writers and settings make them.\n\n", c.rounds, smallSliceReads/1000, smallSliceReads)
	fmt.Fprintf(w, "![ratios](ratios.svg)\n\n")
}

func writeLegend(w io.Writer, b *bench, cases []benchCase) {
	fmt.Fprintf(w, "\n## Commands\n\n")
	fmt.Fprintf(w, "Every command runs with REF_PATH=/nonexistent REF_CACHE=/nonexistent; $DATA is %s, $TMP a scratch directory.\n\n", b.data.Dir)
	// Longest and most specific first: the replacer tries its pairs in order.
	pairs := []string{b.cramfs, "cramfs", b.scratch, "$TMP", b.samtools, "samtools", b.data.Dir, "$DATA"}
	if len(b.regions) > 0 {
		pairs = append(pairs, strings.Join(b.regions, " "), "REGIONS...")
	}
	short := strings.NewReplacer(pairs...)
	seen := map[string]bool{}
	for _, k := range cases {
		key := k.Group + "/" + k.Variant
		if seen[key] {
			continue
		}
		seen[key] = true
		fmt.Fprintf(w, "%s, %s (shown for %s):\n\n", k.Group, k.Variant, k.Flavour)
		fmt.Fprintf(w, "- cramfs: `%s`\n", short.Replace(k.Cramfs.Desc))
		for _, bl := range k.Baselines {
			fmt.Fprintf(w, "- %s: `%s`\n", bl.Label, short.Replace(bl.Desc))
		}
		fmt.Fprintln(w)
	}
	if len(b.regions) > 0 {
		fmt.Fprintf(w, "REGIONS (%d): %s\n", len(b.regions), strings.Join(b.regions, " "))
	}
}

func firstLine(cmd string, args ...string) string {
	out, err := exec.Command(cmd, args...).Output()
	if err != nil {
		return "unknown"
	}
	line, _, _ := strings.Cut(string(out), "\n")
	return line
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
