package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// writeOutputs writes OUT/results.tsv, OUT/BENCHMARKS.md (context,
// targets, tables, legend) and OUT/ratios-VERSION.svg per samtools. With
// -only, the rows measured replace their cases' rows of the existing
// results.tsv; a full run replaces the file.
func writeOutputs(c config, b *bench, cases []benchCase, fresh []result) error {
	if c.out == "" {
		return nil
	}
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	var old []result
	if c.only != "" || c.reportOnly {
		var err error
		if old, err = loadResults(filepath.Join(c.out, "results.tsv")); err != nil {
			return err
		}
	}
	ids := make([]string, len(cases))
	for i, k := range cases {
		ids[i] = k.ID
	}
	rs := mergeResults(old, fresh, ids) // also puts a full run's rows in table order
	var tsv strings.Builder
	if err := writeResults(&tsv, rs); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.out, "results.tsv"), []byte(tsv.String()), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	runs := runsOf(rs)
	writePreamble(&md, c, b, rs, runs, notMeasured(cases, rs))
	cs, err := loadCauses(filepath.Join(c.out, causesFile))
	if err != nil {
		return err
	}
	if err := writeTargets(&md, rs, cs); err != nil {
		return err
	}
	md.WriteString("\n## Results\n\n")
	if err := writeTables(&md, rs, runs); err != nil {
		return err
	}
	writeLegend(&md, b, cases, rs)
	if err := os.WriteFile(filepath.Join(c.out, "BENCHMARKS.md"), []byte(md.String()), 0o644); err != nil {
		return err
	}
	if err := writeScalingFile(c.out, b, rs); err != nil {
		return err
	}
	for _, tool := range toolsOf(rs) {
		var sel []result
		for _, r := range rs {
			if r.Tool == tool {
				sel = append(sel, r)
			}
		}
		var svg strings.Builder
		title := fmt.Sprintf("cramfs vs samtools %s: median time ratio (%d threads)", tool, c.threads)
		if err := writeSVG(&svg, title, sel); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(c.out, "ratios-"+tool+".svg"), []byte(svg.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// notMeasured lists the ids of cases without a row in rs.
func notMeasured(cases []benchCase, rs []result) []string {
	var out []string
	for _, k := range cases {
		if !slices.ContainsFunc(rs, func(r result) bool { return r.ID == k.ID }) {
			out = append(out, k.ID)
		}
	}
	return out
}

func writePreamble(w io.Writer, c config, b *bench, rs []result, runs []runInfo, missing []string) {
	fmt.Fprintf(w, "# cramfs vs samtools benchmarks\n\n")
	fmt.Fprintf(w, "Written by `cramfs-bench %s` on %s from the rows of the runs below, kept in [results.tsv](results.tsv).\n\n",
		shellQuote(os.Args[1:]), time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "- machine: %s, %d CPUs visible, %s\n", cpuModel(), runtime.NumCPU(), runtime.Version())
	for i, t := range b.tools {
		role := "the oracle; checks and dataset setup use it"
		if i > 0 {
			role = "the newest; the targets are against it"
		}
		fmt.Fprintf(w, "- samtools %s: %s (%s, `%s`)\n", t.Version, t.Line, role, t.Path)
	}
	for _, r := range runs {
		fmt.Fprintf(w, "- run %s: %s UTC, cramfs at commit %s, %d threads, %s: `%s`\n",
			runName(runs, r), r.Date, r.CramfsRev, r.Threads, loadSummary(rs, r), r.Command)
	}
	fmt.Fprintf(w, "- dataset: %s (reference %s)\n", b.data.Dir, filepath.Base(b.data.Ref))
	for _, f := range b.data.Flavours {
		if st, err := os.Stat(f.CRAM); err == nil {
			fmt.Fprintf(w, "  - %s: %s, %.2f MiB\n", f.Name, filepath.Base(f.CRAM), float64(st.Size())/(1<<20))
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(w, "\n**Partial**: these cases have no rows: %s.\n", strings.Join(missing, ", "))
	}
	fmt.Fprintf(w, "\nEvery round runs each command of a case once, in order: cramfs, then the samtools commands it is compared with, "+
		"per samtools; times are medians of wall-clock seconds over the rounds, ratio = cramfs / samtools (below 1: cramfs faster). "+
		"Both tools get `-@ %d`; a samtools reading the mount is the samtools of the row. "+
		"The measure column says what both sides do: *reads records* decodes every field of every record on both sides "+
		"(`view -c` of the mounted BAM against `view -u CRAM | view -c -`; `view -u -o /dev/null` of the regions), "+
		"*count only* is `view -c` of the CRAM, which samtools 1.17 and later answer without decoding most fields. "+
		"The *to /dev/null* rows of convert at level 0 and of first access run the same commands with the BAM written to /dev/null "+
		"(for first access only samtools' side: `view -u -o /dev/null` is a full decode), so that no time of either side is spent writing a file. "+
		"Peak RSS is ru_maxrss, the largest over the rounds; for the mount rows it is the mount process's, read after the query and unmount; "+
		"for the pipe the sum of its two processes'. "+
		"Mount rows: the layout index is built once beforehand (warm index), every round mounts afresh (cold block cache), "+
		"with --cache-size %dM, and only the samtools read through the mount is timed. "+
		"The \"file ×4\" row reads a CRAM made of four copies of the 3.0 file (samtools cat, re-encoded by samtools view -C) "+
		"through the mount: its peak RSS beside the 3.0 row's shows whether memory grows with the file. "+
		"The \"3.0, %dk reads\" rows convert the first %d reads of the 3.0 file written in slices of one read "+
		"(samtools head, then samtools view -C or scramble), as other writers and settings make them. "+
		"The \"file ×%d\" rows run first access, the sequential read and the regions on %d copies of the 3.0 file merged in coordinate order "+
		"(samtools merge, with its .crai); the targets section compares their time and RSS with the 1× rows'. "+
		"Rows whose measure says CPU give CPU seconds (user+sys), not wall-clock: the floor rows the CPU of the server process "+
		"(the cramfs mount, with a --cache-size that holds the file, or the go-fuse floor serving the same BAM from memory) over a second read "+
		"of the file, after a first read and posix_fadvise DONTNEED of its pages (checked with mincore); the serve CPU rows the CPU of cramfs serve "+
		"over a whole-BAM GET per GiB served, against the CPU of samtools view writing the BAM of the CRAM read from a static HTTP server, per GiB written. "+
		"The \"8 readers\" and \"8 clients\" rows read %d copies of the 3.0 file (distinct files, which cramfs caches apart) at once, "+
		"through one mount or one cramfs serve at --cache-size %dM, against as many samtools pipes: the time until all ended, "+
		"and the slowest and the fastest reader's own time; their RSS is the mount's, or the sum of the pipes'.\n\n",
		c.threads, cacheBudgetMiB, smallSliceReads/1000, smallSliceReads, bigCopies, bigCopies, readersAtOnce, cacheBudgetMiB)
	for _, t := range slices.Backward(b.tools) {
		fmt.Fprintf(w, "![ratios against samtools %s](ratios-%s.svg)\n", t.Version, t.Version)
	}
	fmt.Fprintln(w)
}

// writeLegend lists the commands of every case with rows in rs, once per
// group, variant and measure, each samtools path shown as `samtools`.
func writeLegend(w io.Writer, b *bench, cases []benchCase, rs []result) {
	fmt.Fprintf(w, "\n## Commands\n\n")
	fmt.Fprintf(w, "Every command runs with REF_PATH=/nonexistent REF_CACHE=/nonexistent; $DATA is %s, $TMP a scratch directory; "+
		"`samtools` is in turn each samtools above.\n\n", b.data.Dir)
	// Longest and most specific first: the replacer tries its pairs in order.
	pairs := []string{b.cramfs, "cramfs", b.scratch, "$TMP"}
	for _, t := range b.tools {
		pairs = append(pairs, t.Path, "samtools")
	}
	pairs = append(pairs, b.data.Dir, "$DATA")
	if len(b.regions) > 0 {
		pairs = append(pairs, strings.Join(b.regions, " "), "REGIONS...")
	}
	short := strings.NewReplacer(pairs...)
	seen := map[string]bool{}
	for _, k := range cases {
		if !slices.ContainsFunc(rs, func(r result) bool { return r.ID == k.ID }) || len(k.Pairs) == 0 {
			continue
		}
		key := k.Group + "/" + k.Variant + "/" + k.Pairs[0].Measure
		if seen[key] {
			continue
		}
		seen[key] = true
		fmt.Fprintf(w, "%s, %s, %s (shown for %s):\n\n", k.Group, k.Variant, k.Pairs[0].Measure, k.Flavour)
		var lines []string
		for _, s := range k.Sides {
			line := fmt.Sprintf("- %s: `%s`", s.Label, short.Replace(s.Desc))
			if !slices.Contains(lines, line) {
				lines = append(lines, line)
			}
		}
		fmt.Fprintf(w, "%s\n\n", strings.Join(lines, "\n"))
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

// loadSummary gives the range of the 1-minute load average over the
// starts and ends of the cases of run, as its rows recorded it.
func loadSummary(rs []result, run runInfo) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range rs {
		if r.Run != run {
			continue
		}
		for _, v := range r.Load {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if lo > hi {
		return "load not recorded"
	}
	return fmt.Sprintf("load average (1 min) %.1f-%.1f", lo, hi)
}
