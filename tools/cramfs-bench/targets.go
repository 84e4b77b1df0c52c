package main

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ratioTarget is a performance goal of the project on the time ratio of the rows of one
// group (and variant or measure, when given) against the newest samtools.
type ratioTarget struct {
	Name    string
	Group   string
	Variant string // "" for every variant
	Measure string // "" for every measure
	Max     float64
}

var ratioTargets = []ratioTarget{
	{Name: "convert at level 1 ≤ 0.6×", Group: "convert", Variant: "level 1", Max: 0.6},
	{Name: "convert at level 0 (-u) ≤ 0.6×", Group: "convert", Variant: "level 0 (-u)", Max: 0.6},
	{Name: "first access ≤ 0.25× view -u", Group: "first access", Max: 0.25},
	{Name: "mounted sequential read ≤ 1.0× the pipe", Group: "sequential read", Measure: measureRecords, Max: 1.0},
	{Name: "region queries reading records ≤ 1.0×", Group: "region queries", Measure: measureRecords, Max: 1.0},
	{Name: "cached read CPU ≤ 1.25× the go-fuse floor", Group: groupFloor, Measure: measureCPU, Max: 1.25},
}

// rssGroups are the groups whose cramfs side runs under --cache-size
// cacheBudgetMiB (a mount or cramfs index); convert keeps no cache and is
// not bounded by it, and the floor rows' mount has a cache that holds the
// file.
var rssGroups = []string{"first access", "sequential read", "region queries", groupReaders}

// rssSlack is what the RSS may exceed the cache budget by (docs/memory.md).
const rssSlackMiB = 150

// flatMax is the largest ratio of a larger file's peak RSS (the ×4 and
// ×16 files) to the 3.0 file's that counts as flat.
const flatMax = 1.25

// linearMax is the largest ratio of a larger file's time to its size
// times the 3.0 file's that counts as linear.
const linearMax = 1.10

// scaledRe matches the id of a case on a file N times the size of
// another's: GROUP-xN/FLAVOUR, whose 1× case is GROUP/FLAVOUR.
var scaledRe = regexp.MustCompile(`^([^/]+)-x([0-9]+)/(.+)$`)

// scaledCase returns the 1× case of the case id and the size factor, if
// id is a case on a larger file.
func scaledCase(id string) (base string, n int, ok bool) {
	m := scaledRe.FindStringSubmatch(id)
	if m == nil {
		return "", 0, false
	}
	n, err := strconv.Atoi(m[2])
	if err != nil || n < 2 {
		return "", 0, false
	}
	return m[1] + "/" + m[3], n, true
}

// check is one cell of the targets section.
type check struct {
	Target, Flavour, Row string
	Measured, Limit      float64 // NaN measured: the row has no value
	Unit                 string  // "ratio", "MiB" or "×"
}

func (c check) met() bool { return !math.IsNaN(c.Measured) && c.Measured <= c.Limit }

// verdict says met or not and by how much: in percent of the limit for
// ratios, in MiB for memory.
func (c check) verdict() string {
	if math.IsNaN(c.Measured) {
		return "not measured"
	}
	word, d := "met", c.Limit-c.Measured
	if !c.met() {
		word, d = "**not met**", -d
	}
	side := "under"
	if !c.met() {
		side = "over"
	}
	if c.Unit == "MiB" {
		return fmt.Sprintf("%s, %.0f MiB %s", word, d, side)
	}
	return fmt.Sprintf("%s, %.0f%% %s", word, 100*d/c.Limit, side)
}

func (c check) format(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case c.Unit == "MiB":
		return fmt.Sprintf("%.0f MiB", v)
	case c.Unit == "×":
		return fmt.Sprintf("%.2f×", v)
	}
	return fmt.Sprintf("%.2f", v)
}

// targetChecks evaluates every target on the rows of rs against tool.
func targetChecks(rs []result, tool string) []check {
	var anchor []result
	for _, r := range rs {
		if r.Tool == tool {
			anchor = append(anchor, r)
		}
	}
	var out []check
	for _, t := range ratioTargets {
		for _, r := range anchor {
			if r.Group != t.Group || (t.Variant != "" && r.Variant != t.Variant) || (t.Measure != "" && r.Measure != t.Measure) {
				continue
			}
			out = append(out, check{Target: t.Name, Flavour: r.Flavour, Row: rowName(r), Measured: r.Ratio(), Limit: t.Max, Unit: "ratio"})
		}
	}
	rss := caseRSS(anchor)
	out = append(out, rssChecks(anchor, rss)...)
	return append(out, scaleChecks(anchor, rss)...)
}

// scaleChecks compare each case on a larger file with its 1× case: peak
// RSS flat, and cramfs' time linear in the size (with samtools' own for
// comparison).
func scaleChecks(rs []result, rss map[string]int64) []check {
	first := firstRowPerCase(rs)
	byID := map[string]result{}
	for _, r := range first {
		byID[r.ID] = r
	}
	var flat, linear []check
	for _, r := range first {
		base, n, ok := scaledCase(r.ID)
		if !ok {
			continue
		}
		what := "mount RSS"
		if r.Group == "first access" {
			what = "cramfs index RSS"
		}
		c := check{Target: "peak RSS flat in file size", Flavour: r.Flavour,
			Row: fmt.Sprintf("%s of the ×%d file / of the 1× file (%s)", what, n, base), Measured: math.NaN(), Limit: flatMax, Unit: "×"}
		if one, ok := rss[base]; ok && one > 0 {
			c.Measured = float64(rss[r.ID]) / float64(one)
		}
		flat = append(flat, c)
		one, ok := byID[base]
		l := check{Target: fmt.Sprintf("time linear in file size ≤ %.2f×", linearMax), Flavour: r.Flavour,
			Row: fmt.Sprintf("cramfs ×%d time / (%d × %s time)", n, n, base), Measured: math.NaN(), Limit: linearMax, Unit: "×"}
		if ok {
			l.Measured = scaleOf(r.Cramfs, one.Cramfs, n)
			if s := scaleOf(r.Samtools, one.Samtools, n); !math.IsNaN(s) {
				l.Row += fmt.Sprintf("; samtools (%s): %.2f×", r.Baseline, s)
			}
		}
		linear = append(linear, l)
	}
	return append(flat, linear...)
}

// scaleOf is the median time of big over n times the median of one: 1
// when big takes n times as long.
func scaleOf(big, one []sample, n int) float64 {
	b, o := median(secsOf(big)), median(secsOf(one))
	if math.IsNaN(b) || math.IsNaN(o) || o <= 0 {
		return math.NaN()
	}
	return b / (float64(n) * o)
}

// rssChecks checks, per flavour, the case of rssGroups whose cramfs side
// had the largest peak RSS.
func rssChecks(rs []result, rss map[string]int64) []check {
	var out []check
	at := map[string]int{} // flavour -> index in out
	for _, r := range firstRowPerCase(rs) {
		if !slices.Contains(rssGroups, r.Group) {
			continue
		}
		c := check{Target: fmt.Sprintf("peak RSS ≤ cache budget + %d MiB", rssSlackMiB), Flavour: r.Flavour,
			Row: "largest: " + r.Group + ", " + r.Variant + measureNote(r), Measured: mib(rss[r.ID]), Limit: cacheBudgetMiB + rssSlackMiB, Unit: "MiB"}
		i, seen := at[r.Flavour]
		switch {
		case !seen:
			at[r.Flavour] = len(out)
			out = append(out, c)
		case c.Measured > out[i].Measured:
			out[i] = c
		}
	}
	return out
}

// caseRSS is the cramfs side's largest peak RSS (KiB) per case id.
func caseRSS(rs []result) map[string]int64 {
	out := map[string]int64{}
	for _, r := range rs {
		out[r.ID] = max(out[r.ID], peakRSS(r.Cramfs))
	}
	return out
}

func firstRowPerCase(rs []result) []result {
	var out []result
	seen := map[string]bool{}
	for _, r := range rs {
		if !seen[r.ID] {
			seen[r.ID] = true
			out = append(out, r)
		}
	}
	return out
}

func mib(kb int64) float64 {
	if kb <= 0 {
		return math.NaN()
	}
	return float64(kb) / 1024
}

func rowName(r result) string {
	return r.Variant + measureNote(r) + " vs " + r.Baseline
}

// measureNote marks the region cases apart, whose two ids differ only in
// the measure.
func measureNote(r result) string {
	if r.Group == "region queries" {
		return " (" + r.Measure + ")"
	}
	return ""
}

// writeTargets writes the targets section: every check against the newest
// samtools of rs, with its verdict, and a count of the cells met. An unmet
// cell links to its section of the causes file when cs has it; the cells
// without one are listed.
func writeTargets(w io.Writer, rs []result, cs causes) error {
	tools := toolsOf(rs)
	if len(tools) == 0 {
		_, err := io.WriteString(w, "## Targets\n\nNo results.\n")
		return err
	}
	checks := targetChecks(rs, tools[0])
	var b strings.Builder
	fmt.Fprintf(&b, "## Targets (against samtools %s)\n\n", tools[0])
	fmt.Fprintf(&b, "Generated from the rows against samtools %s above. Ratio targets: the margin is in percent of the limit. "+
		"Peak RSS: the mount's or `cramfs index`'s, the largest of a flavour's first-access, sequential-read and region cases over their rounds, against --cache-size %d MiB + %d MiB; "+
		"convert keeps no cache and is not bounded by it. Flat: the ×4 and ×16 files' RSS at most %.2f× the 1× file's; "+
		"linear: the larger file's cramfs time at most %.2f× its size times the 1× file's (rows of different runs compare as they are). "+
		"The floor: the CPU of the cramfs mount over a read served from its cache against the go-fuse floor's over the same read.\n\n",
		tools[0], cacheBudgetMiB, rssSlackMiB, flatMax, linearMax)
	b.WriteString("| target | flavour | row | measured | limit | verdict |\n|---|---|---|---:|---:|---|\n")
	met := 0
	var uncaused []string
	for _, c := range checks {
		verdict := c.verdict()
		switch {
		case c.met():
			met++
		case cs[c.anchor()]:
			verdict += fmt.Sprintf(" ([cause](%s#%s))", causesFile, c.anchor())
		case !slices.Contains(uncaused, c.anchor()):
			uncaused = append(uncaused, c.anchor())
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", mdEscape(c.Target), mdEscape(c.Flavour), mdEscape(c.Row),
			c.format(c.Measured), c.format(c.Limit), verdict)
	}
	fmt.Fprintf(&b, "\nMet: %d of %d cells.", met, len(checks))
	if met < len(checks) {
		fmt.Fprintf(&b, " The causes of the unmet ones, with profiles, are in [%s](%s).", causesFile, causesFile)
	}
	b.WriteString("\n")
	if len(uncaused) > 0 {
		fmt.Fprintf(&b, "Unmet, no cause written yet (sections of %s): %s.\n", causesFile, strings.Join(uncaused, ", "))
	}
	var none []string
	for _, t := range ratioTargets {
		if !slices.ContainsFunc(checks, func(c check) bool { return c.Target == t.Name }) {
			none = append(none, t.Name)
		}
	}
	if len(none) > 0 {
		fmt.Fprintf(&b, "Not measured in this table: %s.\n", strings.Join(none, "; "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
