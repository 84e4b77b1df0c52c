package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
)

// The results file (OUT/results.tsv) keeps every row's samples, so that a
// run of some cases (-only) can replace their rows and the report be
// written again from all of them. One line per row, tab-separated, lists
// of samples comma-separated in round order.
var resultsHeader = []string{
	"id", "group", "flavour", "variant", "measure", "samtools", "baseline",
	"date", "cramfs_rev", "threads", "command",
	"cramfs_s", "samtools_s", "cramfs_rss_kib", "samtools_rss_kib", "load1",
}

// oldResultsFields is the number of fields of a results file written
// before the load column, which is read with no load.
const oldResultsFields = 15

// writeResults writes rs in the results format.
func writeResults(w io.Writer, rs []result) error {
	var b strings.Builder
	b.WriteString(strings.Join(resultsHeader, "\t") + "\n")
	for _, r := range rs {
		fields := []string{r.ID, r.Group, r.Flavour, r.Variant, r.Measure, r.Tool, r.Baseline,
			r.Run.Date, r.Run.CramfsRev, strconv.Itoa(r.Run.Threads), r.Run.Command,
			joinSamples(r.Cramfs, secsText), joinSamples(r.Samtools, secsText),
			joinSamples(r.Cramfs, rssText), joinSamples(r.Samtools, rssText), loadText(r.Load)}
		for i, f := range fields {
			if strings.ContainsAny(f, "\t\n") {
				return fmt.Errorf("results: row %s: %s %q holds a tab or newline", r.ID, resultsHeader[i], f)
			}
		}
		b.WriteString(strings.Join(fields, "\t") + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func secsText(s sample) string { return strconv.FormatFloat(s.Secs, 'f', 6, 64) }
func rssText(s sample) string  { return strconv.FormatInt(s.RSSKB, 10) }

func loadText(load []float64) string {
	parts := make([]string, len(load))
	for i, v := range load {
		parts[i] = strconv.FormatFloat(v, 'f', 2, 64)
	}
	return strings.Join(parts, ",")
}

func joinSamples(ss []sample, text func(sample) string) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = text(s)
	}
	return strings.Join(parts, ",")
}

// readResults parses the results format; name is for error messages.
func readResults(r io.Reader, name string) ([]result, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	var out []result
	width := 0 // fields per line, as the header has them
	for line := 1; sc.Scan(); line++ {
		fields := strings.Split(sc.Text(), "\t")
		if line == 1 {
			if !slices.Equal(fields, resultsHeader) && !slices.Equal(fields, resultsHeader[:oldResultsFields]) {
				return nil, fmt.Errorf("%s:1: header %q, want %q", name, sc.Text(), strings.Join(resultsHeader, "\t"))
			}
			width = len(fields)
			continue
		}
		if len(fields) != width {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d", name, line, len(fields), width)
		}
		r, err := parseResult(fields)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
}

func parseResult(f []string) (result, error) {
	r := result{ID: f[0], Group: f[1], Flavour: f[2], Variant: f[3], Measure: f[4], Tool: f[5], Baseline: f[6],
		Run: runInfo{Date: f[7], CramfsRev: f[8], Command: f[10]}}
	var err error
	if r.Run.Threads, err = strconv.Atoi(f[9]); err != nil {
		return result{}, fmt.Errorf("threads %q: %w", f[9], err)
	}
	if r.Cramfs, err = parseSamples(f[11], f[13]); err != nil {
		return result{}, fmt.Errorf("cramfs samples: %w", err)
	}
	if r.Samtools, err = parseSamples(f[12], f[14]); err != nil {
		return result{}, fmt.Errorf("samtools samples: %w", err)
	}
	if len(f) > oldResultsFields && f[15] != "" {
		for _, v := range strings.Split(f[15], ",") {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil || x < 0 {
				return result{}, fmt.Errorf("load %q is not a non-negative number", v)
			}
			r.Load = append(r.Load, x)
		}
	}
	return r, nil
}

// parseSamples pairs a list of seconds with a list of RSS values.
func parseSamples(secs, rss string) ([]sample, error) {
	if secs == "" && rss == "" {
		return nil, nil
	}
	ss, rs := strings.Split(secs, ","), strings.Split(rss, ",")
	if len(ss) != len(rs) {
		return nil, fmt.Errorf("%d times but %d RSS values", len(ss), len(rs))
	}
	out := make([]sample, len(ss))
	for i := range ss {
		v, err := strconv.ParseFloat(ss[i], 64)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("time %q is not a non-negative number", ss[i])
		}
		k, err := strconv.ParseInt(rs[i], 10, 64)
		if err != nil || k < 0 {
			return nil, fmt.Errorf("RSS %q is not a non-negative integer", rs[i])
		}
		out[i] = sample{Secs: v, RSSKB: k}
	}
	return out, nil
}

// loadResults reads path; a missing file is no results.
func loadResults(path string) ([]result, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readResults(f, path)
}

// mergeResults returns old with every row of a case that fresh measured
// replaced by fresh's rows, ordered as the case ids in order (rows of ids
// not in order last, in their old order).
func mergeResults(old, fresh []result, order []string) []result {
	rerun := map[string]bool{}
	for _, r := range fresh {
		rerun[r.ID] = true
	}
	var out []result
	for _, r := range old {
		if !rerun[r.ID] {
			out = append(out, r)
		}
	}
	out = append(out, fresh...)
	pos := func(id string) int {
		if i := slices.Index(order, id); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(out, func(a, b result) int { return pos(a.ID) - pos(b.ID) })
	return out
}
