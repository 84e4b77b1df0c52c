package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// timedRow is a row whose sides took cramfs and samtools seconds in every
// round, with the cramfs side's peak RSS rssMiB.
func timedRow(id, measure, tool string, cramfs, samtools float64, rssMiB int64, run runInfo) result {
	r := result{ID: id, Measure: measure, Tool: tool, Variant: "20 regions", Run: run, Load: []float64{1, 2}}
	for range 3 {
		r.Cramfs = append(r.Cramfs, sample{Secs: cramfs, RSSKB: rssMiB << 10})
		r.Samtools = append(r.Samtools, sample{Secs: samtools})
	}
	return r
}

func scalingFixture() []result {
	run := runInfo{Date: "2026-12-07 19:00", CramfsRev: "abc"}
	return []result{
		timedRow("first-access/v30", measureScan, "1.23.1", 0.3, 1.0, 33, run),
		timedRow("first-access/v30", measureScanNull, "1.23.1", 0.3, 0.9, 33, run),
		timedRow("seq-read/v30", measureRecords, "1.23.1", 1.2, 1.8, 90, run),
		timedRow("regions/v30", measureRecords, "1.23.1", 0.3, 0.4, 160, run),
		timedRow("first-access-x16/v30", measureScan, "1.23.1", 2.4, 14, 39, run),
		timedRow("first-access-x16/v30", measureScanNull, "1.23.1", 2.4, 12.8, 39, run),
		timedRow("seq-read-x16/v30", measureRecords, "1.23.1", 19.2, 20, 120, run),
		timedRow("regions-x16/v30", measureRecords, "1.23.1", 0.9, 0.55, 272, run),
		// Against the oracle: not what the projection uses.
		timedRow("seq-read-x16/v30", measureRecords, "1.16.1", 19.2, 40, 120, run),
	}
}

// TestScalingProjects: the projection scales the ×16 rows by the genome's
// bases over the ×16 file's, and interpolates the region queries in
// depth, from the rows against the newest samtools only.
func TestScalingProjects(t *testing.T) {
	// 2M reads of 150 bases over 30 Mbp: depth 10; the genome is 93 Gbp
	// of reads, 93e9 / (16 × 3e8) = 19.375 times the ×16 file.
	one := cramCounts{Reads: 2_000_000, Bases: 300_000_000, RefLen: 30_000_000}
	s, err := newScaling(scalingFixture(), "1.23.1")
	if err != nil {
		t.Fatal(err)
	}
	s.one = one
	if f := s.factor(); f < 19.37 || f > 19.38 {
		t.Errorf("factor %v, want 19.375", f)
	}
	if d := s.depthFactor(); d != 3 {
		t.Errorf("depth factor %v, want 3", d)
	}
	var b strings.Builder
	if err := writeScaling(&b, s); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"2,000,000 reads and 300,000,000 bases over 30,000,000 bp",
		"**19.4 times the ×16 file**",
		// first access: 2.4 × 19.375 = 46.5 s; samtools to /dev/null 12.8 × 19.375 = 248 s.
		"| 2.400 × 19.4 ≈ **46 s** | view -u -o /dev/null: 12.80 × 19.4 ≈ 248 s (4.1 min) |",
		// the sequential read: 19.2 × 19.375 = 372 s against 20 × 19.375 = 387.5 s.
		"| 19.20 × 19.4 ≈ **372 s (6.2 min)** | the pipe: 20.00 × 19.4 ≈ 388 s (6.5 min) |",
		// regions at depth factor 3: 0.3 + 0.6 × 2/15 = 0.38; samtools 0.4 + 0.15 × 2/15 = 0.42.
		"≈ **0.380 s** | 0.420 s |",
		// the scaling table: 19.2 / (16 × 1.2) = 1.00; samtools 20 / (16 × 1.8) = 0.69.
		"| sequential read, mount + view -c, vs the pipe | 1.200 s | 19.20 s | 1.00 | 1.800 s | 20.00 s | 0.69 |",
		"| mount, region queries | 160 MiB | 272 MiB | 1.70× |",
		"2026-12-07 19:00 UTC, cramfs at abc, load average (1 min) 1.0-2.0",
		"| 20 regions, view -u |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("projection lacks %q:\n%s", want, md)
		}
	}
}

// TestScalingNeedsBothSizes: without the ×16 rows against the newest
// samtools there is nothing to project, and no file is written.
func TestScalingNeedsBothSizes(t *testing.T) {
	var rs []result
	for _, r := range scalingFixture() {
		if r.ID != "regions-x16/v30" {
			rs = append(rs, r)
		}
	}
	if _, err := newScaling(rs, "1.23.1"); err == nil || !strings.Contains(err.Error(), "regions-x16/v30") {
		t.Fatalf("newScaling without the ×16 regions: %v, want an error naming them", err)
	}
	out := t.TempDir()
	b := &bench{data: &dataset{Flavours: []flavour{{ID: "v30", CRAM: filepath.Join(out, "missing.cram")}}}}
	if err := writeScalingFile(out, b, rs); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, scalingFile)); !os.IsNotExist(err) {
		t.Errorf("%s written without the rows it needs (stat: %v)", scalingFile, err)
	}
}

// TestCountCRAM: the reads and bases of a fixture's container headers are
// those of its SAM (the project's fixtures, made by testdata/make.sh), and
// the reference length the sum of its @SQ lengths.
func TestCountCRAM(t *testing.T) {
	dir := filepath.Join(moduleRoot(), "testdata", "cram")
	got, err := countCRAM(filepath.Join(dir, "ce_1000.3.0.cram"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "ce_1000.3.0.expected.sam"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want cramCounts
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "@SQ") {
			for _, field := range strings.Split(line, "\t") {
				var n int64
				if _, err := fmt.Sscanf(field, "LN:%d", &n); err == nil {
					want.RefLen += n
				}
			}
			continue
		}
		if strings.HasPrefix(line, "@") {
			continue
		}
		fields := strings.Split(line, "\t")
		want.Reads++
		if seq := fields[9]; seq != "*" {
			want.Bases += int64(len(seq))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("countCRAM = %+v, want %+v (from the SAM)", got, want)
	}
	if _, err := countCRAM(filepath.Join(t.TempDir(), "none.cram")); err == nil {
		t.Error("countCRAM of a missing file: no error")
	}
}
