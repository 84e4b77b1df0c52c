package engine

import (
	"bytes"
	"context"
	"fmt"
	"testing"
)

// TestLevelMeansTheSameEverywhere: a Level means one thing for a Manager
// and for Convert. The zero value, DefaultLevel, is deflate level 1 for
// both (ConvertOptions' zero value used to mean stored blocks while
// Options' meant level 1, and Options needed -1 for stored).
func TestLevelMeansTheSameEverywhere(t *testing.T) {
	src := newFakeSource(fixture(t, "small"), "")
	for _, tc := range []struct {
		level   Level
		deflate int
	}{{DefaultLevel, 1}, {Stored, 0}, {1, 1}, {6, 6}} {
		t.Run(fmt.Sprint("level", tc.level), func(t *testing.T) {
			if got := tc.level.Deflate(); got != tc.deflate {
				t.Fatalf("Deflate() = %d, want %d", got, tc.deflate)
			}
			want := src.expected(t, tc.deflate)
			var conv bytes.Buffer
			if err := Convert(context.Background(), src, &conv, ConvertOptions{Threads: 2, Level: tc.level}); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(conv.Bytes(), want) {
				t.Errorf("Convert: %d bytes, not deflate level %d's %d", conv.Len(), tc.deflate, len(want))
			}
			m, _ := newTestManager(t, Options{Level: tc.level})
			if got := readAll(t, openT(t, m, src), 1<<16); !bytes.Equal(got, want) {
				t.Errorf("Manager: %d bytes, not deflate level %d's %d", len(got), tc.deflate, len(want))
			}
		})
	}
	for n, want := range map[int]Level{0: Stored, 1: 1, 9: 9} {
		if l, err := LevelOf(n); err != nil || l != want {
			t.Errorf("LevelOf(%d) = %d, %v; want %d", n, l, err, want)
		}
	}
	for _, n := range []int{-1, 10} {
		if _, err := LevelOf(n); err == nil {
			t.Errorf("LevelOf(%d) accepted", n)
		}
	}
	if err := Convert(context.Background(), src, &bytes.Buffer{}, ConvertOptions{Level: 10}); err == nil {
		t.Error("Convert accepted level 10")
	}
}
