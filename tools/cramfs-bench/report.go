package main

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// result is one row of the report: a cramfs command against one samtools
// command, with the samples of every round.
type result struct {
	ID       string // the case's id (-only matches it)
	Group    string // convert, first access, sequential read, region queries
	Flavour  string // dataset flavour, e.g. "3.1 archive"
	Variant  string // e.g. "level 1"
	Measure  string // what both sides do (the measure constants)
	Tool     string // samtools version of the baseline, e.g. "1.23.1"
	Baseline string // short label of the samtools side
	Run      runInfo
	// Load is the 1-minute load average when the case began and when it
	// ended (machineLoad); nil for rows of runs that did not record it.
	Load     []float64
	Cramfs   []sample
	Samtools []sample
}

// runInfo says which run measured a result.
type runInfo struct {
	Date      string // UTC, "2006-01-02 15:04"
	CramfsRev string // commit of the measured cramfs ("unknown" if not stamped)
	Threads   int
	Command   string // the cramfs-bench command line of the run
}

// sample is one measured run of one side.
type sample struct {
	Secs  float64
	RSSKB int64  // peak resident set size in KiB (ru_maxrss); 0 if unknown
	Out   string // trimmed standard output, for the commands whose output is checked
	// Jobs are the seconds of each job of a side that runs jobs at once
	// (timeAtOnce), whose Secs is the time until the last ended.
	Jobs []float64
}

// median returns the median of xs (the mean of the two middle values for
// an even count), or NaN for an empty slice. xs is not modified.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

func secsOf(ss []sample) []float64 {
	out := make([]float64, len(ss))
	for i, s := range ss {
		out[i] = s.Secs
	}
	return out
}

func peakRSS(ss []sample) int64 {
	var m int64
	for _, s := range ss {
		m = max(m, s.RSSKB)
	}
	return m
}

// Ratio is the median cramfs time over the median samtools time; NaN if
// either side has no samples or samtools took no time.
func (r result) Ratio() float64 {
	c, s := median(secsOf(r.Cramfs)), median(secsOf(r.Samtools))
	if math.IsNaN(c) || math.IsNaN(s) || s <= 0 {
		return math.NaN()
	}
	return c / s
}

// Label names a row in the table and the chart.
func (r result) Label() string {
	parts := []string{r.Group, r.Flavour}
	if r.Variant != "" {
		parts = append(parts, r.Variant)
	}
	if !slices.Contains([]string{measureWrite, measureScan, measureRecords, ""}, r.Measure) {
		parts = append(parts, r.Measure)
	}
	return strings.Join(parts, " / ") + " vs " + r.Baseline
}

func fmtSecs(v float64) string {
	switch {
	case math.IsNaN(v):
		return "-"
	case v < 0.1:
		return fmt.Sprintf("%.4f", v)
	case v < 10:
		return fmt.Sprintf("%.3f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func fmtRatio(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func fmtMiB(kb int64) string {
	if kb <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", float64(kb)/1024)
}

// writeTables writes one markdown table per samtools version, newest
// first; runs, when given, adds a column naming each row's run.
func writeTables(w io.Writer, rs []result, runs []runInfo) error {
	for _, tool := range toolsOf(rs) {
		fmt.Fprintf(w, "### Against samtools %s\n\n", tool)
		var sel []result
		for _, r := range rs {
			if r.Tool == tool {
				sel = append(sel, r)
			}
		}
		if err := writeTable(w, sel, runs); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	return nil
}

// writeTable writes the results as a markdown table: per row the median
// seconds of each side, their ratio and the peak RSS of each side.
func writeTable(w io.Writer, rs []result, runs []runInfo) error {
	var b strings.Builder
	b.WriteString("| group | flavour | variant | measure | samtools side | rounds | cramfs s | samtools s | ratio | cramfs peak RSS MiB | samtools peak RSS MiB |")
	sep := "|---|---|---|---|---|---:|---:|---:|---:|---:|---:|"
	if len(runs) > 1 {
		b.WriteString(" run |")
		sep += "---|"
	}
	b.WriteString("\n" + sep + "\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %s | %s | %s | %s | %s |",
			mdEscape(r.Group), mdEscape(r.Flavour), mdEscape(r.Variant), mdEscape(r.Measure), mdEscape(r.Baseline),
			min(len(r.Cramfs), len(r.Samtools)),
			fmtSecs(median(secsOf(r.Cramfs))), fmtSecs(median(secsOf(r.Samtools))), fmtRatio(r.Ratio()),
			fmtMiB(peakRSS(r.Cramfs)), fmtMiB(peakRSS(r.Samtools)))
		if len(runs) > 1 {
			fmt.Fprintf(&b, " %s |", runName(runs, r.Run))
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// toolsOf returns the samtools versions of rs, newest first.
func toolsOf(rs []result) []string {
	var out []string
	for _, r := range rs {
		if !slices.Contains(out, r.Tool) {
			out = append(out, r.Tool)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return compareVersions(b, a) })
	return out
}

// compareVersions orders dotted version numbers numerically ("1.9" <
// "1.16", "1.23" < "1.23.1"); a part that is not a number sorts after
// every number.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < min(len(pa), len(pb)); i++ {
		nx, ex := strconv.Atoi(pa[i])
		ny, ey := strconv.Atoi(pb[i])
		switch {
		case ex == nil && ey == nil:
			if c := cmp.Compare(nx, ny); c != 0 {
				return c
			}
		case ex == nil:
			return -1
		case ey == nil:
			return 1
		default:
			if c := strings.Compare(pa[i], pb[i]); c != 0 {
				return c
			}
		}
	}
	return cmp.Compare(len(pa), len(pb))
}

// runsOf returns the distinct runs of rs, oldest first.
func runsOf(rs []result) []runInfo {
	var out []runInfo
	for _, r := range rs {
		if !slices.Contains(out, r.Run) {
			out = append(out, r.Run)
		}
	}
	slices.SortStableFunc(out, func(a, b runInfo) int { return strings.Compare(a.Date, b.Date) })
	return out
}

// runName is the letter of run in runs: A for the first.
func runName(runs []runInfo, run runInfo) string {
	i := slices.Index(runs, run)
	if i < 0 || i >= 26 {
		return "?"
	}
	return string(rune('A' + i))
}

func mdEscape(s string) string {
	if s == "" {
		return "-"
	}
	return strings.ReplaceAll(s, "|", `\|`)
}

// Layout of the ratio chart, in SVG user units.
const (
	svgPlotW     = 520 // width of the bar area
	svgCharW     = 6.2 // approximate advance of an 11px sans-serif character
	svgRowH      = 18
	svgTop       = 40
	svgBottom    = 40
	svgRightPad  = 60
	svgBarInset  = 3
	svgMinSpanL2 = 1.0 // the axis spans at least 1/2 .. 2
)

// writeSVG writes a horizontal bar chart of the ratios cramfs/samtools on
// a log2 axis centred on 1 (equal speed): bars to the left of the line
// mean cramfs is faster. Rows without a ratio are drawn without a bar.
func writeSVG(w io.Writer, title string, rs []result) error {
	lo, hi := -svgMinSpanL2, svgMinSpanL2
	for _, r := range rs {
		if v := r.Ratio(); !math.IsNaN(v) && v > 0 {
			l := math.Log2(v)
			lo, hi = math.Min(lo, math.Floor(l)), math.Max(hi, math.Ceil(l))
		}
	}
	labelW := 200
	for _, r := range rs {
		labelW = max(labelW, int(svgCharW*float64(len(r.Label())))+16)
	}
	svgWidth := labelW + svgPlotW + svgRightPad
	plotX0, plotX1 := float64(labelW), float64(labelW+svgPlotW)
	xOf := func(l2 float64) float64 { return plotX0 + (l2-lo)/(hi-lo)*(plotX1-plotX0) }
	height := svgTop + svgBottom + svgRowH*len(rs)

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		svgWidth, height, svgWidth, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", svgWidth, height)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", 10, xmlEscape(title))
	axisY := svgTop + svgRowH*len(rs)
	for t := lo; t <= hi; t++ {
		x := xOf(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s"/>`+"\n", x, svgTop-4, x, axisY, gridColour(t))
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x, axisY+14, tickLabel(t))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">time ratio cramfs / samtools (log scale; left of 1 = cramfs faster)</text>`+"\n",
		(plotX0+plotX1)/2, axisY+32)
	for i, r := range rs {
		y := svgTop + svgRowH*i
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", labelW-6, y+svgRowH-5, xmlEscape(r.Label()))
		v := r.Ratio()
		if math.IsNaN(v) || v <= 0 {
			continue
		}
		x0, x1 := xOf(0), xOf(math.Log2(v))
		colour := "#3b7dd8"
		if v > 1 {
			colour = "#d8623b"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n",
			math.Min(x0, x1), y+svgBarInset, math.Max(math.Abs(x1-x0), 1), svgRowH-2*svgBarInset, colour)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", math.Max(x0, x1)+4, y+svgRowH-5, fmtRatio(v))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func gridColour(l2 float64) string {
	if l2 == 0 {
		return "black"
	}
	return "#dddddd"
}

// tickLabel prints 2^l2 as 1/8, 1/4, ..., 1, 2, 4, ...
func tickLabel(l2 float64) string {
	if l2 < 0 {
		return fmt.Sprintf("1/%d", int(math.Round(math.Exp2(-l2))))
	}
	return fmt.Sprintf("%d", int(math.Round(math.Exp2(l2))))
}

var xmlReplacer = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

func xmlEscape(s string) string { return xmlReplacer.Replace(s) }
