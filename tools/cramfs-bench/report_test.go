package main

import (
	"encoding/xml"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{"one", []float64{3}, 3},
		{"odd unsorted", []float64{5, 1, 3}, 3},
		{"even means middle two", []float64{4, 1, 3, 2}, 2.5},
		{"outlier ignored", []float64{1, 1.1, 100}, 1.1},
		{"duplicates", []float64{2, 2, 2, 2}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.in...)
			if got := median(in); got != tc.want {
				t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
			}
			for i := range in {
				if in[i] != tc.in[i] {
					t.Fatalf("median modified its input: %v, was %v", in, tc.in)
				}
			}
		})
	}
	if got := median(nil); !math.IsNaN(got) {
		t.Errorf("median(nil) = %v, want NaN", got)
	}
}

func secs(vs ...float64) []sample {
	out := make([]sample, len(vs))
	for i, v := range vs {
		out[i] = sample{Secs: v, RSSKB: int64(1024 * (i + 1))}
	}
	return out
}

func TestRatio(t *testing.T) {
	tests := []struct {
		name     string
		c, s     []sample
		want     float64
		wantNaN  bool
		wantText string
	}{
		{name: "faster", c: secs(1, 2, 3), s: secs(4, 4, 4), want: 0.5, wantText: "0.50"},
		{name: "slower", c: secs(6, 6, 9), s: secs(2, 3, 1), want: 3, wantText: "3.00"},
		{name: "no samples", c: nil, s: secs(1), wantNaN: true, wantText: "-"},
		{name: "zero baseline", c: secs(1), s: secs(0), wantNaN: true, wantText: "-"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := result{Cramfs: tc.c, Samtools: tc.s}
			got := r.Ratio()
			if tc.wantNaN != math.IsNaN(got) || (!tc.wantNaN && math.Abs(got-tc.want) > 1e-12) {
				t.Errorf("Ratio() = %v, want %v (NaN %v)", got, tc.want, tc.wantNaN)
			}
			if s := fmtRatio(got); s != tc.wantText {
				t.Errorf("fmtRatio = %q, want %q", s, tc.wantText)
			}
		})
	}
}

func TestWriteTable(t *testing.T) {
	rs := []result{
		{Group: "convert", Flavour: "3.0", Variant: "level 1", Measure: measureWrite, Baseline: "samtools view",
			Cramfs: secs(2, 1, 3), Samtools: secs(4, 4, 5)},
		{Group: "regions", Flavour: "a|b", Measure: measureCount, Baseline: "CRAM + .crai",
			Cramfs: secs(0.01), Samtools: secs(0.02)},
	}
	var b strings.Builder
	if err := writeTable(&b, rs, nil); err != nil {
		t.Fatal(err)
	}
	want := "| group | flavour | variant | measure | samtools side | rounds | cramfs s | samtools s | ratio | cramfs peak RSS MiB | samtools peak RSS MiB |\n" +
		"|---|---|---|---|---|---:|---:|---:|---:|---:|---:|\n" +
		"| convert | 3.0 | level 1 | writes BAM | samtools view | 3 | 2.000 | 4.000 | 0.50 | 3 | 3 |\n" +
		"| regions | a\\|b | - | count only | CRAM + .crai | 1 | 0.0100 | 0.0200 | 0.50 | 1 | 1 |\n"
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
	// Every row has as many cells as the header, with and without the run column.
	runs := []runInfo{{Date: "1"}, {Date: "2"}}
	rs[0].Run, rs[1].Run = runs[0], runs[1]
	var b2 strings.Builder
	if err := writeTable(&b2, rs, runs); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{b.String(), b2.String()} {
		lines := strings.Split(strings.TrimSpace(text), "\n")
		cells := func(l string) int { return strings.Count(strings.ReplaceAll(l, `\|`, ""), "|") }
		for _, l := range lines[1:] {
			if cells(l) != cells(lines[0]) {
				t.Errorf("row %q has %d separators, header %d", l, cells(l), cells(lines[0]))
			}
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(b2.String()), "| 1 | 1 | B |") || !strings.Contains(b2.String(), "| 3 | 3 | A |") {
		t.Errorf("run column wrong:\n%s", b2.String())
	}
}

// TestWriteTables: one table per samtools, newest first, each with only
// its rows.
func TestWriteTables(t *testing.T) {
	rs := []result{
		{ID: "x", Group: "convert", Flavour: "old", Tool: "1.9", Cramfs: secs(1), Samtools: secs(2)},
		{ID: "x", Group: "convert", Flavour: "new", Tool: "1.23.1", Cramfs: secs(1), Samtools: secs(4)},
		{ID: "x", Group: "convert", Flavour: "mid", Tool: "1.16.1", Cramfs: secs(1), Samtools: secs(3)},
	}
	var b strings.Builder
	if err := writeTables(&b, rs, nil); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	i23, i16, i9 := strings.Index(out, "### Against samtools 1.23.1"), strings.Index(out, "### Against samtools 1.16.1"), strings.Index(out, "### Against samtools 1.9\n")
	if i23 < 0 || i16 < i23 || i9 < i16 {
		t.Fatalf("sections not newest first:\n%s", out)
	}
	if sec := out[i23:i16]; !strings.Contains(sec, "| new |") || strings.Contains(sec, "| mid |") || !strings.Contains(sec, "| 0.25 |") {
		t.Errorf("1.23.1 section holds other rows:\n%s", sec)
	}
}

func TestCompareVersions(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"1.16.1", "1.23.1", -1}, {"1.9", "1.16", -1}, {"1.23.1", "1.23", 1}, {"1.16.1", "1.16.1", 0}, {"2", "1.99", 1},
	}
	for _, tc := range tests {
		if got := compareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := compareVersions(tc.b, tc.a); got != -tc.want {
			t.Errorf("compareVersions(%q, %q) = %d, want %d", tc.b, tc.a, got, -tc.want)
		}
	}
}

func TestFmtSecs(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0.01234, "0.0123"}, {1.23456, "1.235"}, {12.345, "12.35"}, {math.NaN(), "-"},
	}
	for _, tc := range tests {
		if got := fmtSecs(tc.in); got != tc.want {
			t.Errorf("fmtSecs(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// svgDoc is the part of the chart the test inspects.
type svgDoc struct {
	XMLName xml.Name  `xml:"svg"`
	Width   int       `xml:"width,attr"`
	Height  int       `xml:"height,attr"`
	Rects   []svgRect `xml:"rect"`
	Lines   []svgLine `xml:"line"`
	Texts   []string  `xml:"text"`
}

type svgRect struct {
	X     float64 `xml:"x,attr"`
	W     float64 `xml:"width,attr"`
	Y     float64 `xml:"y,attr"`
	H     float64 `xml:"height,attr"`
	Color string  `xml:"fill,attr"`
}

type svgLine struct {
	X1     float64 `xml:"x1,attr"`
	Stroke string  `xml:"stroke,attr"`
}

func TestWriteSVG(t *testing.T) {
	rs := []result{
		{Group: "convert", Flavour: "3.0", Baseline: "x<y & z", Cramfs: secs(1), Samtools: secs(4)}, // 1/4
		{Group: "convert", Flavour: "3.1", Baseline: "b", Cramfs: secs(3), Samtools: secs(1)},       // 3
		{Group: "regions", Flavour: "3.1", Baseline: "c", Cramfs: nil, Samtools: secs(1)},           // no ratio
	}
	var b strings.Builder
	if err := writeSVG(&b, `title "quoted"`, rs); err != nil {
		t.Fatal(err)
	}
	var doc svgDoc
	if err := xml.Unmarshal([]byte(b.String()), &doc); err != nil {
		t.Fatalf("not well-formed XML: %v\n%s", err, b.String())
	}
	if want := svgTop + svgBottom + svgRowH*len(rs); doc.Height != want {
		t.Errorf("height %d, want %d", doc.Height, want)
	}
	// Background plus one bar per row that has a ratio.
	if len(doc.Rects) != 3 {
		t.Fatalf("%d rects, want background + 2 bars", len(doc.Rects))
	}
	var one float64 = -1
	for _, l := range doc.Lines {
		if l.Stroke == "black" {
			one = l.X1
		}
	}
	if one < 0 {
		t.Fatal("no reference line at ratio 1")
	}
	fast, slow := doc.Rects[1], doc.Rects[2]
	if fast.X+fast.W > one+0.5 || fast.Color == slow.Color {
		t.Errorf("faster bar [%v, %v] should end at the 1-line %v, in its own colour", fast.X, fast.X+fast.W, one)
	}
	if slow.X < one-0.5 {
		t.Errorf("slower bar starts at %v, left of the 1-line %v", slow.X, one)
	}
	// Log scale: ratio 1/4 is two octaves left, ratio 3 log2(3) octaves right.
	if got, want := slow.W/fast.W, math.Log2(3)/2; math.Abs(got-want) > 0.01 {
		t.Errorf("bar length ratio %v, want %v (log2 scale)", got, want)
	}
	text := strings.Join(doc.Texts, "\n")
	for _, want := range []string{`title "quoted"`, "convert / 3.0 vs x<y & z", "0.25", "3.00", "1/4", "regions / 3.1 vs c"} {
		if !strings.Contains(text, want) {
			t.Errorf("SVG text lacks %q", want)
		}
	}
}

func TestPickRegions(t *testing.T) {
	cs := []contig{{"chr1", 16_000_000}, {"chr2", 10_000_000}, {"chr3", 500}}
	got := pickRegions(cs, 6)
	// Two slots per contig (midpoints at 1/4 and 3/4), widths 1k, 10k, 100k
	// in turn, clamped to the contig.
	want := []string{
		"chr1:3999500-4000499",
		"chr2:2495000-2504999",
		"chr3:1-500",
		"chr1:11999500-12000499",
		"chr2:7495000-7504999",
		"chr3:1-500",
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("pickRegions:\n got %v\nwant %v", got, want)
	}
	if again := pickRegions(cs, 6); strings.Join(again, " ") != strings.Join(got, " ") {
		t.Error("pickRegions is not deterministic")
	}
	if pickRegions(nil, 5) != nil || pickRegions(cs, 0) != nil {
		t.Error("want no regions for no contigs or n = 0")
	}
}

func TestReadFai(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "r.fa.fai")
	if err := os.WriteFile(p, []byte("chr1\t100\t6\t60\t61\nchr2\t50\t114\t60\t61\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cs, err := readFai(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 || cs[0] != (contig{"chr1", 100}) || cs[1] != (contig{"chr2", 50}) {
		t.Errorf("readFai = %v", cs)
	}
	if err := os.WriteFile(p, []byte("chr1\tx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readFai(p); err == nil {
		t.Error("readFai accepted a bad length")
	}
}

func TestLimitedBuffer(t *testing.T) {
	var l limitedBuffer
	chunk := strings.Repeat("x", 40<<10)
	for i := 0; i < 3; i++ {
		if n, err := io.WriteString(&l, chunk); err != nil || n != len(chunk) {
			t.Fatalf("write %d: n=%d err=%v", i, n, err)
		}
	}
	if l.Len() != limitedBufferMax {
		t.Errorf("kept %d bytes, want %d", l.Len(), limitedBufferMax)
	}
}

// TestLabelMeasures: a row's label names its measure unless it is the
// group's usual one, so that the rows of one case that differ only in
// what they take of the samples (CPU, the slowest of 8) stay apart.
func TestLabelMeasures(t *testing.T) {
	tests := []struct {
		measure, want string
	}{
		{measureRecords, "g / 3.0 / v vs b"},
		{measureCount, "g / 3.0 / v / count only vs b"},
		{measureCPU, "g / 3.0 / v / server CPU s (user+sys) vs b"},
		{measureSlowest, "g / 3.0 / v / reads records: slowest of the 8 vs b"},
		{measureCPUPerGiB, "g / 3.0 / v / CPU s (user+sys) per GiB of BAM vs b"},
	}
	for _, tc := range tests {
		r := result{Group: "g", Flavour: "3.0", Variant: "v", Measure: tc.measure, Baseline: "b"}
		if got := r.Label(); got != tc.want {
			t.Errorf("Label(%s) = %q, want %q", tc.measure, got, tc.want)
		}
	}
}
