package logging

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// clockLogger is a limited text logger into buf whose clock the test sets.
func clockLogger(buf *bytes.Buffer, now *time.Time) *slog.Logger {
	h := Limit(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})).(*limitHandler)
	h.state.now = func() time.Time { return *now }
	return slog.New(h)
}

// TestLimitRepeatedFailures: the first failure of a file is written, its
// repeats within the window are not, the next after the window says how
// many were left out; other files, other messages, info lines and lines
// without a file are not held back.
func TestLimitRepeatedFailures(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1e9, 0)
	log := clockLogger(&buf, &now)
	for range 5 {
		log.Warn("request failed", "file", "a.bam", "errno", "EIO")
	}
	log.Warn("request failed", "file", "b.bam")
	log.Warn("other failure", "file", "a.bam")
	log.Warn("no file")
	log.Warn("no file")
	log.Info("request failed", "file", "a.bam")
	now = now.Add(Window)
	log.With("file", "a.bam").Error("request failed")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{
		`level=WARN msg="request failed" file=a.bam errno=EIO`,
		`level=WARN msg="request failed" file=b.bam`,
		`level=WARN msg="other failure" file=a.bam`,
		`level=WARN msg="no file"`,
		`level=WARN msg="no file"`,
		`level=INFO msg="request failed" file=a.bam`,
		`level=ERROR msg="request failed" file=a.bam repeated=4`,
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d: %q, want it to contain %q", i, lines[i], w)
		}
	}
}

// TestLimitForgetsOldest: at most MaxKeys failures are remembered; one
// forgotten is written again at once.
func TestLimitForgetsOldest(t *testing.T) {
	var buf bytes.Buffer
	now := time.Unix(1e9, 0)
	log := clockLogger(&buf, &now)
	log.Warn("failed", "file", "first")
	for i := range MaxKeys {
		log.Warn("failed", "file", string(rune('a'+i%26))+strings.Repeat("x", i))
	}
	buf.Reset()
	log.Warn("failed", "file", "first")
	if !strings.Contains(buf.String(), "file=first") {
		t.Errorf("a forgotten failure was held back: %q", buf.String())
	}
}

// TestFileReopen: after the log file is moved away (logrotate), Reopen
// makes the next lines go to a new file of the same name.
func TestFileReopen(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "cramfs.log")
	f, err := OpenFile(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log := New(f, slog.LevelInfo)
	log.Info("before")
	if err := os.Rename(p, p+".1"); err != nil {
		t.Fatal(err)
	}
	log.Info("moved")
	if err := f.Reopen(); err != nil {
		t.Fatal(err)
	}
	log.Info("after")
	old, _ := os.ReadFile(p + ".1")
	cur, _ := os.ReadFile(p)
	if !strings.Contains(string(old), "before") || !strings.Contains(string(old), "moved") || strings.Contains(string(old), "after") {
		t.Errorf("rotated file: %q", old)
	}
	if !strings.Contains(string(cur), "after") || strings.Contains(string(cur), "before") {
		t.Errorf("reopened file: %q", cur)
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("reopened file mode: %v %v", fi.Mode(), err)
	}
}

func TestParseLevel(t *testing.T) {
	for s, want := range map[string]slog.Level{"error": slog.LevelError, "WARN": slog.LevelWarn, "info": slog.LevelInfo, "debug": slog.LevelDebug} {
		if got, err := ParseLevel(s); err != nil || got != want {
			t.Errorf("ParseLevel(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseLevel("loud"); err == nil {
		t.Error("ParseLevel(loud): no error")
	}
}
