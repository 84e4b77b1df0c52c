package main

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func row(id, tool, baseline string, run runInfo, c, s []sample) result {
	return result{ID: id, Group: "group of " + id, Flavour: "3.0", Variant: "v", Measure: measureRecords, Tool: tool,
		Baseline: baseline, Run: run, Cramfs: c, Samtools: s}
}

var (
	runA = runInfo{Date: "2026-12-01 17:00", CramfsRev: "004ad604ab2f", Threads: 2, Command: "cramfs-bench -rounds 3"}
	runB = runInfo{Date: "2026-12-02 09:30", CramfsRev: "1234567890ab+dirty", Threads: 2, Command: "cramfs-bench -rounds 3 -only first-access"}
)

func TestResultsRoundTrip(t *testing.T) {
	rs := []result{
		row("seq-read/v30", "1.16.1", "view -u CRAM | view -c -", runA,
			[]sample{{Secs: 1.2345, RSSKB: 100}, {Secs: 0.5, RSSKB: 2048}}, []sample{{Secs: 3, RSSKB: 7}, {Secs: 4.0001, RSSKB: 8}}),
		row("regions/v31", "1.23.1", "CRAM + .crai, view -u", runB, nil, nil),
	}
	rs[1].Load = []float64{1.5, 2.25}
	var b strings.Builder
	if err := writeResults(&b, rs); err != nil {
		t.Fatal(err)
	}
	got, err := readResults(strings.NewReader(b.String()), "results.tsv")
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if !reflect.DeepEqual(got, rs) {
		t.Errorf("read back\n%+v\nwant\n%+v", got, rs)
	}
	bad := rs[0]
	bad.Variant = "a\tb"
	if err := writeResults(&b, []result{bad}); err == nil || !strings.Contains(err.Error(), "variant") {
		t.Errorf("a tab in a field: err = %v, want one naming the variant", err)
	}
}

func TestReadResultsErrors(t *testing.T) {
	header := strings.Join(resultsHeader, "\t") + "\n"
	good := []string{"id", "g", "f", "v", "m", "1.23.1", "b", "d", "rev", "2", "cramfs-bench -rounds 2", "1,2", "3,4", "10,20", "30,40", "0.50,1.75"}
	line := func(change func([]string)) string {
		f := append([]string(nil), good...)
		change(f)
		return strings.Join(f, "\t") + "\n"
	}
	tests := []struct {
		name, text, want string
	}{
		{"header", "id\tgroup\n", "results.tsv:1: header"},
		{"fields", header + "a\tb\n", "results.tsv:2: 2 fields, want 16"},
		{"load", header + line(func(f []string) { f[15] = "1,high" }), `results.tsv:2: load "high"`},
		{"threads", header + line(func(f []string) { f[9] = "two" }), `results.tsv:2: threads "two"`},
		{"counts", header + line(func(f []string) { f[13] = "10" }), "results.tsv:2: cramfs samples: 2 times but 1 RSS values"},
		{"time", header + line(func(f []string) { f[12] = "3,-4" }), `samtools samples: time "-4"`},
		{"rss", header + line(func(f []string) { f[14] = "30,x" }), `samtools samples: RSS "x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readResults(strings.NewReader(tc.text), "results.tsv")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if rs, err := readResults(strings.NewReader(header+line(func([]string) {})), "results.tsv"); err != nil || len(rs) != 1 || rs[0].Samtools[1].Secs != 4 || rs[0].Samtools[1].RSSKB != 40 || !reflect.DeepEqual(rs[0].Load, []float64{0.5, 1.75}) {
		t.Errorf("good line: %+v, %v", rs, err)
	}
	// A file written before the load column is read, with no load.
	old := strings.Join(resultsHeader[:oldResultsFields], "\t") + "\n" + strings.Join(good[:oldResultsFields], "\t") + "\n"
	if rs, err := readResults(strings.NewReader(old), "results.tsv"); err != nil || len(rs) != 1 || rs[0].Load != nil || rs[0].Cramfs[1].Secs != 2 {
		t.Errorf("line without load: %+v, %v", rs, err)
	}
	if _, err := readResults(strings.NewReader(old+line(func([]string) {})), "results.tsv"); err == nil || !strings.Contains(err.Error(), "16 fields, want 15") {
		t.Errorf("a line of 16 fields under the old header: err = %v", err)
	}
}

// TestMergeResults: the rows of every case re-run replace all of that
// case's old rows (also those whose label the new run no longer has);
// other rows stay; the order follows the case list.
func TestMergeResults(t *testing.T) {
	s := []sample{{Secs: 1}}
	old := []result{
		row("convert/v30/level1", "1.16.1", "samtools view", runA, s, s),
		row("convert/v30/level1", "1.23.1", "samtools view", runA, s, s),
		row("first-access/v30", "1.16.1", "samtools view -u", runA, s, s),
		row("first-access/v30", "1.23.1", "old label", runA, s, s),
		row("gone/v30", "1.23.1", "x", runA, s, s),
		row("seq-read/v30", "1.23.1", "view -c CRAM", runA, s, s),
	}
	fresh := []result{
		row("first-access/v30", "1.16.1", "samtools view -u", runB, s, s),
		row("first-access/v30", "1.23.1", "samtools view -u", runB, s, s),
		row("regions/v30", "1.23.1", "CRAM + .crai, view -u", runB, s, s),
	}
	order := []string{"convert/v30/level1", "first-access/v30", "seq-read/v30", "regions/v30"}
	got := mergeResults(old, fresh, order)
	var keys []string
	for _, r := range got {
		keys = append(keys, r.ID+" "+r.Tool+" "+r.Baseline+" "+r.Run.Date[:10])
	}
	want := []string{
		"convert/v30/level1 1.16.1 samtools view 2026-12-01",
		"convert/v30/level1 1.23.1 samtools view 2026-12-01",
		"first-access/v30 1.16.1 samtools view -u 2026-12-02",
		"first-access/v30 1.23.1 samtools view -u 2026-12-02",
		"seq-read/v30 1.23.1 view -c CRAM 2026-12-01",
		"regions/v30 1.23.1 CRAM + .crai, view -u 2026-12-02",
		"gone/v30 1.23.1 x 2026-12-01",
	}
	if strings.Join(keys, "\n") != strings.Join(want, "\n") {
		t.Errorf("merged:\n%s\nwant:\n%s", strings.Join(keys, "\n"), strings.Join(want, "\n"))
	}
}

// TestWriteOutputsMerges runs the output step twice as a full run and an
// -only run would: the second keeps the first's other rows, replaces the
// re-run case's, and the report lists both runs and the cases still
// missing.
func TestWriteOutputsMerges(t *testing.T) {
	dir := t.TempDir()
	b := &bench{data: &dataset{Dir: dir, Ref: filepath.Join(dir, "ref.fa")}, cramfs: "/bin/cramfs", scratch: dir,
		tools: []samtool{{Path: "/usr/bin/samtools", Version: "1.16.1", Line: "samtools 1.16.1"},
			{Path: "/opt/samtools", Version: "1.23.1", Line: "samtools 1.23.1-42"}}}
	cases := []benchCase{
		{ID: "convert/v30/level1", Group: "convert", Variant: "level 1", Sides: []side{{Label: "c"}, {Label: "s"}},
			Pairs: []pair{{Cramfs: 0, Baseline: 1, Measure: measureWrite}}},
		{ID: "first-access/v30", Group: "first access", Variant: "layout scan", Sides: []side{{Label: "c"}, {Label: "s"}},
			Pairs: []pair{{Cramfs: 0, Baseline: 1, Measure: measureScan}}},
		{ID: "seq-read/v30", Group: "sequential read", Sides: []side{{Label: "c"}, {Label: "s"}},
			Pairs: []pair{{Cramfs: 0, Baseline: 1, Measure: measureRecords}}},
	}
	at := func(id, tool string, run runInfo, c, s float64) result {
		r := row(id, tool, "s", run, []sample{{Secs: c, RSSKB: 1 << 20}}, []sample{{Secs: s, RSSKB: 1 << 20}})
		r.Group = map[string]string{"convert/v30/level1": "convert", "first-access/v30": "first access"}[id]
		r.Variant = map[string]string{"convert/v30/level1": "level 1", "first-access/v30": "layout scan"}[id]
		return r
	}
	// In run order (a later case first); written in table order.
	full := []result{
		at("first-access/v30", "1.16.1", runA, 1, 2), at("first-access/v30", "1.23.1", runA, 1, 2),
		at("convert/v30/level1", "1.16.1", runA, 1, 2), at("convert/v30/level1", "1.23.1", runA, 1, 2),
	}
	if err := writeOutputs(config{out: dir, rounds: 1, threads: 2}, b, cases, full); err != nil {
		t.Fatal(err)
	}
	if rs, err := loadResults(filepath.Join(dir, "results.tsv")); err != nil || len(rs) != 4 || rs[0].ID != "convert/v30/level1" || rs[3].ID != "first-access/v30" {
		t.Fatalf("full run's results %+v (%v), want the convert rows first", rs, err)
	}
	again := []result{at("first-access/v30", "1.16.1", runB, 1, 5), at("first-access/v30", "1.23.1", runB, 1, 10)}
	again[0].Load, again[1].Load = []float64{1.5, 2.75}, []float64{1.25, 2}
	if err := writeOutputs(config{out: dir, rounds: 1, threads: 2, only: "first-access"}, b, cases, again); err != nil {
		t.Fatal(err)
	}
	rs, err := loadResults(filepath.Join(dir, "results.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 4 || rs[0].Run != runA || rs[2].Run != runB || rs[3].Ratio() != 0.1 {
		t.Errorf("merged results %+v, want the convert rows of run A and the first-access rows of run B", rs)
	}
	md, err := os.ReadFile(filepath.Join(dir, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(md)
	for _, want := range []string{
		"- run A: 2026-12-01 17:00 UTC, cramfs at commit 004ad604ab2f, 2 threads, load not recorded: `cramfs-bench -rounds 3`",
		"- run B: 2026-12-02 09:30 UTC, cramfs at commit 1234567890ab+dirty, 2 threads, load average (1 min) 1.2-2.8: `cramfs-bench -rounds 3 -only first-access`",
		"**Partial**: these cases have no rows: seq-read/v30.",
		"| first access ≤ 0.25× view -u | 3.0 | layout scan vs s | 0.10 | 0.25 | met, 60% under |",
		"| convert at level 1 ≤ 0.6× | 3.0 | level 1 vs s | 0.50 | 0.60 | met, 17% under |",
		"| 1 | 1.000 | 10.00 | 0.10 | 1024 | 1024 | B |",
		"from the rows of the runs below, kept in [results.tsv](results.tsv).",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("BENCHMARKS.md lacks %q:\n%s", want, text)
		}
	}
	// -report-only writes the same report from results.tsv alone.
	if err := writeOutputs(config{out: dir, rounds: 1, threads: 2, reportOnly: true}, b, cases, nil); err != nil {
		t.Fatal(err)
	}
	md2, err := os.ReadFile(filepath.Join(dir, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	if stamp := regexp.MustCompile(` on \d{4}-\d\d-\d\d \d\d:\d\d UTC`); stamp.ReplaceAllString(string(md2), "") != stamp.ReplaceAllString(text, "") {
		t.Errorf("-report-only wrote another report:\n%s\nwant:\n%s", md2, text)
	}
	for _, svg := range []string{"ratios-1.16.1.svg", "ratios-1.23.1.svg"} {
		if _, err := os.Stat(filepath.Join(dir, svg)); err != nil {
			t.Error(err)
		}
	}
}
