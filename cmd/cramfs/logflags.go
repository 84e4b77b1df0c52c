package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/pflag"

	"github.com/cramfs/cramfs/internal/service/logging"
)

// logFlags are the logging options of the long-running commands.
type logFlags struct {
	file    string
	level   string
	verbose bool
	quiet   bool
}

func (l *logFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.file, "log-file", "", "append the log to `FILE` instead of standard error (reopened on SIGHUP, for logrotate)")
	fs.StringVar(&l.level, "log-level", "info", "log `LEVEL`: error, warn, info or debug")
	fs.BoolVarP(&l.verbose, "verbose", "v", false, "log at debug level (--log-level debug)")
	fs.BoolVarP(&l.quiet, "quiet", "q", false, "log errors only (--log-level error)")
}

// processLog is the log of a process: its logger and, with --log-file,
// the file it writes to (nil for standard error).
type processLog struct {
	log  *slog.Logger
	file *logging.File
}

// open makes the log the flags ask for, writing to stderr unless
// --log-file is given.
func (l *logFlags) open(stderr io.Writer) (processLog, error) {
	level, err := logging.ParseLevel(l.level)
	if err != nil {
		return processLog{}, usageError{"--log-level " + err.Error()}
	}
	switch {
	case l.verbose && l.quiet:
		return processLog{}, usageError{"--verbose and --quiet: choose one"}
	case l.verbose:
		level = slog.LevelDebug
	case l.quiet:
		level = slog.LevelError
	}
	if l.file == "" {
		return processLog{log: logging.New(stderr, level)}, nil
	}
	f, err := logging.OpenFile(l.file)
	if err != nil {
		return processLog{}, err
	}
	return processLog{log: logging.New(f, level), file: f}, nil
}

// reopen reopens the log file (SIGHUP); without one it only says so.
func (p processLog) reopen() {
	if p.file == nil {
		p.log.Info("SIGHUP: no --log-file to reopen")
		return
	}
	if err := p.file.Reopen(); err != nil {
		p.log.Error("SIGHUP: log file not reopened, still writing to the old one", "log_file", p.file.Path(), "err", err)
		return
	}
	p.log.Info("log file reopened", "log_file", p.file.Path())
}

// close closes the log file, if any.
func (p processLog) close() {
	if p.file != nil {
		p.file.Close()
	}
}

// verbosityLevel is the log level of samtools' --verbosity N: 0 nothing,
// 1 errors, 2 warnings, 3 (the default) information, 4 and more debug.
func verbosityLevel(n int) (slog.Level, error) {
	switch {
	case n < 0:
		return 0, usageError{fmt.Sprintf("--verbosity %d: want 0 or more", n)}
	case n == 0:
		return slog.LevelError + 4, nil
	case n == 1:
		return slog.LevelError, nil
	case n == 2:
		return slog.LevelWarn, nil
	case n == 3:
		return slog.LevelInfo, nil
	}
	return slog.LevelDebug, nil
}
