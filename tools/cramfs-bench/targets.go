package main

import (
	"fmt"
	"io"
	"math"
	"slices"
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
}

// rssGroups are the groups whose cramfs side runs under --cache-size (a
// mount or cramfs index); convert keeps no cache and is not bounded by it.
var rssGroups = []string{"first access", "sequential read", "region queries"}

// rssSlack is what the RSS may exceed the cache budget by (docs/memory.md).
const rssSlackMiB = 150

// flatMax is the largest ratio of the x4 file's peak RSS to the 3.0
// file's that counts as flat: the file is four times as large.
const flatMax = 1.25

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
	for _, r := range firstRowPerCase(anchor) {
		base, ok := strings.CutPrefix(r.ID, "seq-read-x4/")
		if !ok {
			continue
		}
		c := check{Target: "peak RSS flat in file size", Flavour: r.Flavour,
			Row: fmt.Sprintf("mount RSS of the ×4 file / of the 1× file (seq-read/%s)", base), Measured: math.NaN(), Limit: flatMax, Unit: "×"}
		if one, ok := rss["seq-read/"+base]; ok && one > 0 {
			c.Measured = float64(rss[r.ID]) / float64(one)
		}
		out = append(out, c)
	}
	return out
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
// samtools of rs, with its verdict, and a count of the cells met.
func writeTargets(w io.Writer, rs []result) error {
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
		"convert keeps no cache and is not bounded by it. Flat: the ×4 file's mount RSS at most %.2f× the 1× file's.\n\n",
		tools[0], cacheBudgetMiB, rssSlackMiB, flatMax)
	b.WriteString("| target | flavour | row | measured | limit | verdict |\n|---|---|---|---:|---:|---|\n")
	met := 0
	for _, c := range checks {
		if c.met() {
			met++
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", mdEscape(c.Target), mdEscape(c.Flavour), mdEscape(c.Row),
			c.format(c.Measured), c.format(c.Limit), c.verdict())
	}
	fmt.Fprintf(&b, "\nMet: %d of %d cells.\n", met, len(checks))
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
