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
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "mount" {
		raiseTimerSlack()
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
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
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errHelp):
		c.writeHelp(stdout, fs)
		return exitOK
	case errors.As(err, &ue):
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
