package main

import (
	"context"
	"errors"
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
		Group: "g", Flavour: "f", Variant: "v",
		Cramfs:    fakeSide("c", 1, &order),
		Baselines: []side{fakeSide("s1", 2, &order), fakeSide("s2", 4, &order)},
		Setup:     func(context.Context) error { setups++; return nil },
		AfterRound: func(_ context.Context, round int, s []sample) error {
			afters++
			if len(s) != 3 {
				t.Errorf("round %d: %d samples, want 3", round, len(s))
			}
			return sameOutputs("count")(context.Background(), round, s)
		},
	}
	rs, err := runCase(context.Background(), k, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(order, ","), "c,s1,s2,c,s1,s2,c,s1,s2"; got != want {
		t.Errorf("run order %s, want %s", got, want)
	}
	if setups != 1 || afters != 3 {
		t.Errorf("setup ran %d times, after-round %d times; want 1 and 3", setups, afters)
	}
	if len(rs) != 2 || rs[0].Baseline != "s1" || rs[1].Baseline != "s2" {
		t.Fatalf("results %+v, want one per baseline", rs)
	}
	if rs[0].Ratio() != 0.5 || rs[1].Ratio() != 0.25 {
		t.Errorf("ratios %v, %v; want 0.5, 0.25", rs[0].Ratio(), rs[1].Ratio())
	}
}

func TestRunCaseStopsOnMismatch(t *testing.T) {
	var order []string
	k := benchCase{
		Cramfs: fakeSide("c", 1, &order),
		Baselines: []side{{Label: "s", Run: func(context.Context) (sample, error) {
			return sample{Secs: 1, Out: "41"}, nil
		}}},
		AfterRound: sameOutputs("count"),
	}
	_, err := runCase(context.Background(), k, 3)
	if err == nil || !strings.Contains(err.Error(), `count differs: cramfs "42", samtools "41"`) {
		t.Fatalf("err = %v, want a count mismatch", err)
	}
	if len(order) != 1 {
		t.Errorf("ran %d more rounds after the mismatch", len(order)-1)
	}
}

func TestRunCaseSideError(t *testing.T) {
	boom := errors.New("boom")
	k := benchCase{
		Cramfs:    side{Label: "c", Run: func(context.Context) (sample, error) { return sample{}, boom }},
		Baselines: []side{{Label: "s"}},
	}
	if _, err := runCase(context.Background(), k, 2); !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom wrapped", err)
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
