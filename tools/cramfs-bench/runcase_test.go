package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// fakeSide records the order in which sides run and returns fixed times.
func fakeSide(label string, secs float64, order *[]string) side {
	return side{Label: label, Run: func(context.Context) (sample, error) {
		*order = append(*order, label)
		return sample{Secs: secs, Out: "42"}, nil
	}}
}

func TestRunCaseAlternates(t *testing.T) {
	var order []string
	setups, afters := 0, 0
	k := benchCase{
		ID: "g/f", Group: "g", Flavour: "f", Variant: "v", CheckOut: "count",
		Sides: []side{fakeSide("c", 1, &order), fakeSide("s1", 2, &order), fakeSide("s2", 4, &order),
			fakeSide("c'", 3, &order), fakeSide("s3", 1, &order)},
		Pairs: []pair{
			{Cramfs: 0, Baseline: 1, Tool: "1.16.1", Measure: measureRecords},
			{Cramfs: 0, Baseline: 2, Tool: "1.16.1", Measure: measureCount},
			{Cramfs: 3, Baseline: 4, Tool: "1.23.1", Measure: measureRecords},
		},
		Setup:      func(context.Context) error { setups++; return nil },
		AfterRound: func(context.Context, int) error { afters++; return nil },
	}
	rs, err := runCase(context.Background(), k, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(order, ","), strings.Repeat("c,s1,s2,c',s3,", 3); got+"," != want {
		t.Errorf("run order %s, want %s", got, want)
	}
	if setups != 1 || afters != 3 {
		t.Errorf("setup ran %d times, after-round %d times; want 1 and 3", setups, afters)
	}
	if len(rs) != 3 {
		t.Fatalf("results %+v, want one per pair", rs)
	}
	want := []struct {
		baseline, tool, measure string
		ratio                   float64
	}{{"s1", "1.16.1", measureRecords, 0.5}, {"s2", "1.16.1", measureCount, 0.25}, {"s3", "1.23.1", measureRecords, 3}}
	for i, w := range want {
		r := rs[i]
		if r.ID != "g/f" || r.Baseline != w.baseline || r.Tool != w.tool || r.Measure != w.measure || r.Ratio() != w.ratio || len(r.Cramfs) != 3 {
			t.Errorf("row %d = %+v, want baseline %s, samtools %s, %s, ratio %v over 3 rounds", i, r, w.baseline, w.tool, w.measure, w.ratio)
		}
	}
}

func TestRunCaseStopsOnMismatch(t *testing.T) {
	var order []string
	k := benchCase{
		CheckOut: "count",
		Sides: []side{fakeSide("c", 1, &order), fakeSide("s", 1, &order), fakeSide("c2", 1, &order),
			{Label: "bad", Run: func(context.Context) (sample, error) { return sample{Secs: 1, Out: "41"}, nil }}},
		Pairs: []pair{{Cramfs: 0, Baseline: 1, Tool: "1.16.1"}, {Cramfs: 2, Baseline: 3, Tool: "1.23.1"}},
	}
	_, err := runCase(context.Background(), k, 3)
	if err == nil || !strings.Contains(err.Error(), `count differs: c2 "42", samtools 1.23.1 bad "41"`) {
		t.Fatalf("err = %v, want a count mismatch of the second pair", err)
	}
	if len(order) != 3 {
		t.Errorf("ran %d sides, want the 4 of one round", len(order)+1)
	}
	// Without CheckOut the outputs are not compared.
	k.CheckOut = ""
	if _, err := runCase(context.Background(), k, 1); err != nil {
		t.Errorf("unchecked case failed: %v", err)
	}
}

func TestRunCaseSideError(t *testing.T) {
	boom := errors.New("boom")
	k := benchCase{
		Sides: []side{{Label: "c", Run: func(context.Context) (sample, error) { return sample{}, boom }}, {Label: "s"}},
		Pairs: []pair{{Cramfs: 0, Baseline: 1}},
	}
	if _, err := runCase(context.Background(), k, 2); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom wrapped", err)
	}
}

// TestRunCasesGoesOn: a failing case is reported and the next still runs;
// an interrupt stops the rest.
func TestRunCasesGoesOn(t *testing.T) {
	var order []string
	ok := func(id string) benchCase {
		return benchCase{ID: id, Sides: []side{fakeSide(id+"c", 1, &order), fakeSide(id+"s", 2, &order)},
			Pairs: []pair{{Cramfs: 0, Baseline: 1, Tool: "1.23.1"}}}
	}
	bad := benchCase{ID: "bad", Sides: []side{{Label: "c", Run: func(context.Context) (sample, error) { return sample{}, errors.New("boom") }}},
		Pairs: []pair{{Cramfs: 0, Baseline: 0}}}
	run := runInfo{Date: "2026-12-01 17:00", CramfsRev: "abc", Threads: 2}
	var saved []int
	save := func(sofar []result) error { saved = append(saved, len(sofar)); return nil }
	rs, failed := runCases(context.Background(), []benchCase{ok("a"), bad, ok("b")}, 1, run, save)
	if fmt.Sprint(saved) != "[1 2]" {
		t.Errorf("saved after each measured case with %v rows, want [1 2]", saved)
	}
	if len(rs) != 2 || rs[0].ID != "a" || rs[1].ID != "b" || rs[1].Run != run {
		t.Errorf("results %+v, want rows of a and b with the run", rs)
	}
	if len(failed) != 1 || !strings.HasPrefix(failed[0], "bad: ") || !strings.Contains(failed[0], "boom") {
		t.Errorf("failed = %q, want bad's error", failed)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rs, failed = runCases(ctx, []benchCase{ok("c"), ok("d")}, 1, run, nil)
	if len(rs) != 0 || len(failed) != 1 || !strings.Contains(failed[0], "2 cases not run") {
		t.Errorf("after an interrupt: results %v, failed %q; want none run", rs, failed)
	}
}

// TestPipe runs a | b and fails when either side fails.
func TestPipe(t *testing.T) {
	out := t.TempDir() + "/out"
	sh := func(script string) command { return command{Path: "sh", Args: []string{"-c", script}} }
	if err := pipe(context.Background(), sh("printf 'a\\nb\\nc\\n'"), sh("wc -l > "+out)); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil || strings.TrimSpace(string(got)) != "3" {
		t.Fatalf("b read %q lines (%v), want 3", got, err)
	}
	if err := pipe(context.Background(), sh("printf x; exit 3"), sh("cat >/dev/null")); err == nil {
		t.Error("a failing first command passed")
	}
	if err := pipe(context.Background(), sh("yes | head -c 10000000"), sh("exit 4")); err == nil {
		t.Error("a failing second command passed")
	}
}

// TestTimePipe measures a | b as one step: b's output, both processes'
// peak RSS added up.
func TestTimePipe(t *testing.T) {
	sh := func(script string) command { return command{Path: "sh", Args: []string{"-c", script}} }
	a, b := sh("printf 'a\\nb\\nc\\n'"), sh("wc -l")
	s, err := timePipe(context.Background(), a, b)
	if err != nil {
		t.Fatal(err)
	}
	if s.Out != "3" {
		t.Errorf("output %q, want 3", s.Out)
	}
	ra, err := timeRun(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if s.RSSKB <= ra.RSSKB || s.Secs <= 0 {
		t.Errorf("pipe RSS %d KiB, time %v; want more than one side's %d KiB and a time", s.RSSKB, s.Secs, ra.RSSKB)
	}
}

// TestFindSamtools reads the version without git's -N-gHASH suffix and
// refuses a binary that is not samtools.
func TestFindSamtools(t *testing.T) {
	dir := t.TempDir()
	script := func(name, out string) string {
		p := dir + "/" + name
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+out+"'\necho 'Using htslib 1.23.1'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	st, err := findSamtools(script("st", "samtools 1.23.1-42-g8c865b97"))
	if err != nil || st.Version != "1.23.1" || st.Line != "samtools 1.23.1-42-g8c865b97" || st.Path != dir+"/st" {
		t.Errorf("findSamtools = %+v, %v; want version 1.23.1 and the whole line", st, err)
	}
	if _, err := findSamtools(script("other", "bcftools 1.16")); err == nil || !strings.Contains(err.Error(), `printed "bcftools 1.16"`) {
		t.Errorf("not samtools: err = %v", err)
	}
}
