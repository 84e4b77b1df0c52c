// Package logging makes the one log of a cramfs process: every line in
// slog's text format (time, level, message, key=value pairs), to standard
// error or to a file that can be reopened (logrotate), with repeated
// failures of one file said once and then counted.
package logging

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
)

// ParseLevel reads a level as users write it: error, warn, info or debug.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "error":
		return slog.LevelError, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	}
	return 0, fmt.Errorf("%q: want error, warn, info or debug", s)
}

// File is a log file opened for appending, safe for concurrent writes,
// that Reopen replaces by the file now at its path: after logrotate moved
// it away, the log goes on in a new file of the same name.
type File struct {
	path string // constant

	mu sync.Mutex // guards f and every write to it
	f  *os.File
}

// OpenFile opens (creating it, mode 0640) the log file at path.
func OpenFile(path string) (*File, error) {
	f, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	return &File{path: path, f: f}, nil
}

func openAppend(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	return f, nil
}

// Write appends p, one log line, to the file.
func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

// Reopen opens the file at the path again and writes there from now on;
// when that fails the old file is kept and the error returned.
func (l *File) Reopen() error {
	f, err := openAppend(l.path)
	if err != nil {
		return err
	}
	l.mu.Lock()
	old := l.f
	l.f = f
	l.mu.Unlock()
	return old.Close()
}

// Close closes the file.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// Path is the file's path.
func (l *File) Path() string { return l.path }

// New returns the logger of a process: text lines at level and above to
// w, with repeated failures limited (see Limit).
func New(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(Limit(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})))
}
