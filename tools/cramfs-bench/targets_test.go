package main

import (
	"math"
	"strings"
	"testing"
)

func rssRow(id, group, variant, measure, tool string, ratio float64, rssMiB ...int64) result {
	r := result{ID: id, Group: group, Flavour: "3.0", Variant: variant, Measure: measure, Tool: tool, Baseline: "b"}
	for _, m := range rssMiB {
		r.Cramfs = append(r.Cramfs, sample{Secs: ratio, RSSKB: m << 10})
		r.Samtools = append(r.Samtools, sample{Secs: 1, RSSKB: 1})
	}
	return r
}

// TestTargetChecks: each target picks its rows against the newest
// samtools only, RSS is checked once per case with the largest round, and
// the ×4 file's RSS is compared with the 1× file's.
func TestTargetChecks(t *testing.T) {
	rs := []result{
		rssRow("convert/v30/level1", "convert", "level 1", measureWrite, "1.23.1", 0.74, 900),
		rssRow("convert/v30/level1", "convert", "level 1", measureWrite, "1.16.1", 0.30, 900),
		rssRow("convert/v30/level6", "convert", "level 6", measureWrite, "1.23.1", 0.9, 50),
		rssRow("convert/v30/level0", "convert", "level 0 (-u)", measureWrite, "1.23.1", 0.45, 50),
		rssRow("first-access/v30", "first access", "layout scan", measureScan, "1.23.1", 0.25, 100),
		rssRow("seq-read/v30", "sequential read", "view -c", measureRecords, "1.23.1", 1.1, 100, 120),
		rssRow("seq-read/v30", "sequential read", "view -c", measureCount, "1.23.1", 9, 100, 120),
		rssRow("regions/v30", "region queries", "20 regions", measureRecords, "1.23.1", 0.5, 410),
		rssRow("seq-read-x4/v30", "sequential read", "view -c, file ×4", measureRecords, "1.23.1", 0.9, 180),
		rssRow("seq-read/v31", "sequential read", "view -c", measureRecords, "1.23.1", 0.5, 90),
	}
	rs[len(rs)-2].Flavour, rs[len(rs)-1].Flavour = "3.0 ×4", "3.1 normal"
	got := map[string]check{}
	var order []string
	for _, c := range targetChecks(rs, "1.23.1") {
		key := c.Target + " / " + c.Flavour + " / " + c.Row
		if _, dup := got[key]; dup {
			t.Errorf("cell %q twice", key)
		}
		got[key] = c
		order = append(order, key)
	}
	want := []struct {
		key      string
		measured float64
		met      bool
		verdict  string
	}{
		{"convert at level 1 ≤ 0.6× / 3.0 / level 1 vs b", 0.74, false, "**not met**, 23% over"},
		{"convert at level 0 (-u) ≤ 0.6× / 3.0 / level 0 (-u) vs b", 0.45, true, "met, 25% under"},
		{"first access ≤ 0.25× view -u / 3.0 / layout scan vs b", 0.25, true, "met, 0% under"},
		{"mounted sequential read ≤ 1.0× the pipe / 3.0 / view -c vs b", 1.1, false, "**not met**, 10% over"},
		{"mounted sequential read ≤ 1.0× the pipe / 3.0 ×4 / view -c, file ×4 vs b", 0.9, true, "met, 10% under"},
		{"mounted sequential read ≤ 1.0× the pipe / 3.1 normal / view -c vs b", 0.5, true, "met, 50% under"},
		{"region queries reading records ≤ 1.0× / 3.0 / 20 regions (reads records) vs b", 0.5, true, "met, 50% under"},
		{"peak RSS ≤ cache budget + 150 MiB / 3.0 / largest: region queries, 20 regions (reads records)", 410, false, "**not met**, 4 MiB over"},
		{"peak RSS ≤ cache budget + 150 MiB / 3.0 ×4 / largest: sequential read, view -c, file ×4", 180, true, "met, 226 MiB under"},
		{"peak RSS ≤ cache budget + 150 MiB / 3.1 normal / largest: sequential read, view -c", 90, true, "met, 316 MiB under"},
		{"peak RSS flat in file size / 3.0 ×4 / mount RSS of the ×4 file / of the 1× file (seq-read/v30)", 1.5, false, "**not met**, 20% over"},
		// 0.9 s against 4 × 1.1 s; samtools 1 s against 4 × 1 s.
		{"time linear in file size ≤ 1.10× / 3.0 ×4 / cramfs ×4 time / (4 × seq-read/v30 time); samtools (b): 0.25×", 0.9 / 4.4, true, "met, 81% under"},
	}
	if len(order) != len(want) {
		t.Errorf("%d cells, want %d:\n%s", len(order), len(want), strings.Join(order, "\n"))
	}
	for _, w := range want {
		c, ok := got[w.key]
		switch {
		case !ok:
			t.Errorf("no cell %q", w.key)
		case math.Abs(c.Measured-w.measured) > 1e-9 || c.met() != w.met || c.verdict() != w.verdict:
			t.Errorf("%s: measured %v, met %v, %q; want %v, %v, %q", w.key, c.Measured, c.met(), c.verdict(), w.measured, w.met, w.verdict)
		}
	}
}

func TestWriteTargets(t *testing.T) {
	rs := []result{
		rssRow("convert/v30/level1", "convert", "level 1", measureWrite, "1.23.1", 0.5, 10),
		rssRow("seq-read-x4/v30", "sequential read", "view -c, file ×4", measureRecords, "1.23.1", 2, 180),
		rssRow("convert/v30/level1", "convert", "level 1", measureWrite, "1.16.1", 0.9, 10),
	}
	var b strings.Builder
	if err := writeTargets(&b, rs, nil); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	for _, want := range []string{
		"## Targets (against samtools 1.23.1)",
		"| convert at level 1 ≤ 0.6× | 3.0 | level 1 vs b | 0.50 | 0.60 | met, 17% under |",
		"| peak RSS flat in file size | 3.0 | mount RSS of the ×4 file / of the 1× file (seq-read/v30) | - | 1.25× | not measured |",
		"| time linear in file size ≤ 1.10× | 3.0 | cramfs ×4 time / (4 × seq-read/v30 time) | - | 1.10× | not measured |",
		"Met: 2 of 5 cells.",
		"Not measured in this table: convert at level 0 (-u) ≤ 0.6×; first access ≤ 0.25× view -u; region queries reading records ≤ 1.0×; cached read CPU ≤ 1.25× the go-fuse floor.",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("targets lack %q:\n%s", want, text)
		}
	}
	b.Reset()
	if err := writeTargets(&b, nil, nil); err != nil || !strings.Contains(b.String(), "No results.") {
		t.Errorf("no rows: %q, %v", b.String(), err)
	}
}

// TestScaleChecks: the ×16 cases of first access, the sequential read and
// the regions are each compared with their 1× case, in RSS (flat) and in
// time (linear); the floor rows are checked against their target and kept
// out of the RSS budget, and the readers at once are in it.
func TestScaleChecks(t *testing.T) {
	rs := []result{
		rssRow("first-access/v30", "first access", "layout scan", measureScan, "1.23.1", 0.3, 30),
		rssRow("seq-read/v30", "sequential read", "view -c", measureRecords, "1.23.1", 1.25, 90),
		rssRow("regions/v30", "region queries", "20 regions", measureRecords, "1.23.1", 0.4, 200),
		rssRow("first-access-x16/v30", "first access", "layout scan, file ×16", measureScan, "1.23.1", 5.2, 45),
		rssRow("seq-read-x16/v30", "sequential read", "view -c, file ×16", measureRecords, "1.23.1", 24, 99),
		rssRow("regions-x16/v30", "region queries", "20 regions, file ×16", measureRecords, "1.23.1", 6.4, 300),
		rssRow("floor-dd/v30", groupFloor, floorVariant+", dd bs=1M", measureCPU, "1.23.1", 1.5, 900),
		rssRow("readers8/v30", groupReaders, "8 copies, view -c", measureAllDone, "1.23.1", 2, 380),
	}
	for i := 3; i < 6; i++ {
		rs[i].Flavour = "3.0 ×16"
	}
	got := map[string]check{}
	for _, c := range targetChecks(rs, "1.23.1") {
		got[c.Target+" / "+c.Row] = c
	}
	want := []struct {
		key      string
		measured float64
		met      bool
	}{
		{"cached read CPU ≤ 1.25× the go-fuse floor / " + floorVariant + ", dd bs=1M vs b", 1.5, false},
		{"peak RSS ≤ cache budget + 150 MiB / largest: 8 readers at once, 8 copies, view -c", 380, true},
		{"peak RSS ≤ cache budget + 150 MiB / largest: region queries, 20 regions, file ×16 (reads records)", 300, true},
		{"peak RSS flat in file size / cramfs index RSS of the ×16 file / of the 1× file (first-access/v30)", 1.5, false},
		{"peak RSS flat in file size / mount RSS of the ×16 file / of the 1× file (seq-read/v30)", 1.1, true},
		{"peak RSS flat in file size / mount RSS of the ×16 file / of the 1× file (regions/v30)", 1.5, false},
		{"time linear in file size ≤ 1.10× / cramfs ×16 time / (16 × first-access/v30 time); samtools (b): 0.06×", 5.2 / 4.8, true},
		{"time linear in file size ≤ 1.10× / cramfs ×16 time / (16 × seq-read/v30 time); samtools (b): 0.06×", 1.2, false},
		{"time linear in file size ≤ 1.10× / cramfs ×16 time / (16 × regions/v30 time); samtools (b): 0.06×", 1, true},
	}
	for _, w := range want {
		c, ok := got[w.key]
		if !ok {
			t.Errorf("no cell %q in %v", w.key, got)
			continue
		}
		if math.Abs(c.Measured-w.measured) > 1e-9 || c.met() != w.met {
			t.Errorf("%s: measured %v, met %v; want %v, %v", w.key, c.Measured, c.met(), w.measured, w.met)
		}
	}
	for k := range got {
		if strings.Contains(k, "floor") && strings.HasPrefix(k, "peak RSS ≤") {
			t.Errorf("the floor rows' mount, whose cache holds the file, is checked against the budget: %q", k)
		}
	}
}

func TestScaledCase(t *testing.T) {
	tests := []struct {
		id, base string
		n        int
		ok       bool
	}{
		{"seq-read-x4/v30", "seq-read/v30", 4, true},
		{"first-access-x16/v30", "first-access/v30", 16, true},
		{"regions-x16/v30-small", "regions/v30-small", 16, true},
		{"seq-read/v30", "", 0, false},
		{"convert/v30-sps1/level0", "", 0, false},
		{"floor-dd/v30", "", 0, false},
		{"seq-read-x1/v30", "", 0, false},
	}
	for _, tc := range tests {
		base, n, ok := scaledCase(tc.id)
		if base != tc.base || n != tc.n || ok != tc.ok {
			t.Errorf("scaledCase(%q) = %q, %d, %v; want %q, %d, %v", tc.id, base, n, ok, tc.base, tc.n, tc.ok)
		}
	}
}
