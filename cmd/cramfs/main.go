// Command cramfs presents CRAM files as BAM: it converts them (convert),
// prepares their layout indexes (index) and mounts a directory of them as
// a read-only filesystem of BAM files (mount).
package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	cfs "github.com/cramfs/cramfs/fs"
	"github.com/cramfs/cramfs/internal/service"
	"github.com/cramfs/cramfs/internal/service/gcfloor"
)

func main() {
	args := os.Args[1:]
	if isHelperName(os.Args[0]) {
		args = append([]string{helperCommand}, args...)
	}
	if len(args) > 0 && (args[0] == "mount" || isHelperForm(args)) {
		raiseTimerSlack()
	}
	gcfloor.Set(heapFloor)
	os.Exit(run(args, os.Stdout, os.Stderr))
}

// heapFloor is the heap under which the collector does not run (see
// internal/service/gcfloor): a command's first containers, which grow the
// heap from nothing, run without the runtime's cycles at 4, 8 and 16 MB.
// It is no larger: a long index then reached it with garbage, and its RSS
// grew with the file (54 MB for the ×16 file at 64 MiB, 40 MB at 16).
const heapFloor = 16 << 20

// helperCommand stands first in the arguments of a program called as a
// mount helper (mount.fuse.cramfs SRC MNT -o OPTIONS).
const helperCommand = "mount.fuse.cramfs"

// isHelperForm reports whether args are a mount helper's: called so, or
// SRC MNT ... where no command is named (mount.fuse3 runs `cramfs SRC MNT
// -o OPTIONS`) and SRC is a path (a directory, or a name with a slash),
// so that a mistyped command is still said to be one.
func isHelperForm(args []string) bool {
	if args[0] == helperCommand {
		return true
	}
	if _, isCommand := findCommand(args[0]); isCommand || len(args) < 2 || strings.HasPrefix(args[0], "-") {
		return false
	}
	if strings.Contains(args[0], "/") {
		return true
	}
	fi, err := os.Stat(args[0])
	return err == nil && fi.IsDir()
}

// env is what a command writes to.
type env struct {
	stdout, stderr io.Writer
	log            *slog.Logger
}

// Exit codes, as GNU tools and samtools use them.
const (
	exitOK    = 0
	exitError = 1 // the command failed
	exitUsage = 2 // the command line is wrong
)

// run executes one command line and returns the exit code. Help goes to
// standard output; every error is printed once, on standard error, as
// "cramfs COMMAND: message".
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, topUsage())
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help", "help":
		if len(args) > 1 && args[0] == "help" {
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		fmt.Fprint(stdout, topUsage())
		return exitOK
	case "--version", "-V":
		args = []string{"version"}
	}
	if isHelperForm(args) {
		return runHelper(args, stdout, stderr)
	}
	c, ok := findCommand(args[0])
	if !ok {
		fmt.Fprintf(stderr, "cramfs: unknown command %q\nRun 'cramfs --help' for the list of commands.\n", args[0])
		return exitUsage
	}
	e := &env{stdout: stdout, stderr: stderr,
		log: slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	sub := c.make()
	fs := c.flagSet(sub)
	operands, err := c.parse(fs, args[1:])
	if err == nil {
		err = sub.run(operands, e)
	}
	var ue usageError
	var re reportedError
	var oe *service.OptionError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &re):
		return exitError
	case errors.Is(err, errHelp):
		c.writeHelp(stdout, fs)
		return exitOK
	case errors.As(err, &ue), errors.As(err, &oe):
		fmt.Fprintf(stderr, "%s\nRun 'cramfs %s --help' for the options.\n", errorLine(c.name, err), c.name)
		return exitUsage
	default:
		fmt.Fprintln(stderr, errorLine(c.name, err))
		return exitError
	}
}

// errorLine is the one line an error is reported with. Errors of the fs
// package already begin with "cramfs mount: " (fs.ErrMount); that prefix is
// replaced by the command's, not repeated.
func errorLine(cmd string, err error) string {
	msg := strings.TrimPrefix(err.Error(), cfs.ErrMount.Error()+": ")
	// Some messages of go-fuse end in a newline of their own.
	return "cramfs " + cmd + ": " + strings.TrimRight(msg, "\n")
}

// runHelper runs the mount helper's command line as `cramfs mount`.
func runHelper(args []string, stdout, stderr io.Writer) int {
	if args[0] == helperCommand {
		args = args[1:]
	}
	c, _ := findCommand("mount")
	margs, err := helperArgs(args, c.flagSet(c.make()))
	if err != nil {
		fmt.Fprintf(stderr, "%s\nRun 'cramfs mount --help' for the options (each is an -o option too).\n", errorLine("mount", err))
		return exitUsage
	}
	return run(append([]string{"mount"}, margs...), stdout, stderr)
}
