package main

import (
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/spf13/pflag"

	"github.com/cramfs/cramfs/internal/service"
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

// progressBar is a progress bar of units on w when w is a terminal and
// verbosity (samtools' --verbosity) is 3 or more; nil otherwise.
func progressBar(w io.Writer, verbosity int, what, units string) *progressbar.ProgressBar {
	f, ok := w.(*os.File)
	if !ok || verbosity < 3 || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return progressbar.NewOptions(-1, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionSetItsString(units), progressbar.OptionClearOnFinish())
}

// stopSignals receives the signals that end or steer a front end. SIGHUP
// (logrotate, systemd's reload) only reopens the log, so it is caught from
// before the log file is opened: none may end the process by the default
// action once it could have been sent. SIGINT and SIGTERM are caught from
// just before the front end starts answering, so that one arriving then
// stops it cleanly (a mount is unmounted, not left dead), while one
// during the slower start (references, caches) still ends the process at
// once.
type stopSignals struct {
	stop, hup chan os.Signal
}

// catchHangups starts receiving SIGHUP.
func catchHangups() stopSignals {
	s := stopSignals{stop: make(chan os.Signal, 1), hup: make(chan os.Signal, 1)}
	signal.Notify(s.hup, syscall.SIGHUP)
	return s
}

// catchStop starts receiving SIGINT and SIGTERM.
func (s stopSignals) catchStop() {
	signal.Notify(s.stop, os.Interrupt, syscall.SIGTERM)
}

// release gives the signals back to their default actions.
func (s stopSignals) release() {
	signal.Stop(s.stop)
	signal.Stop(s.hup)
}

// wait waits for done to close (nil returned) or for SIGINT or SIGTERM
// (returned), reopening p's log file at each SIGHUP meanwhile.
func (s stopSignals) wait(p processLog, done <-chan struct{}) os.Signal {
	for {
		select {
		case <-done:
			return nil
		case <-s.hup:
			p.reopen()
		case sig := <-s.stop:
			return sig
		}
	}
}

// openService opens the log the log flags ask for and reads the engine
// flags into service options logging to it; the caller closes the log.
func openService(lf *logFlags, ef *engineFlags, stderr io.Writer) (processLog, service.Options, error) {
	plog, err := lf.open(stderr)
	if err != nil {
		return processLog{}, service.Options{}, err
	}
	opts, err := ef.options(plog.log)
	if err != nil {
		plog.close()
		return processLog{}, service.Options{}, err
	}
	return plog, opts, nil
}
