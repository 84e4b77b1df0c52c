// Command cramfs presents CRAM files as BAM: it converts them (convert),
// prepares their layout indexes (index) and mounts a directory of them as
// a read-only filesystem of BAM files (mount).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
)

const usage = `cramfs presents CRAM files as BAM files.

Usage:
  cramfs convert [-T FASTA]... [-@ N] [--level 0-9] [-o OUT.bam|-] IN.cram
  cramfs index   [-T FASTA]... [--cache-dir DIR] [-@ N] PATH...
  cramfs mount   [-T FASTA]... [--cache-dir DIR] [--cache-size SIZE] [-@ N] [--level N] [--allow-other] SRC MNT
  cramfs unmount MNT

Run 'cramfs COMMAND -h' for the options of a command.
`

func main() {
	if len(os.Args) > 1 && os.Args[1] == "mount" {
		raiseTimerSlack()
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit code.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	var err error
	switch args[0] {
	case "convert":
		err = cmdConvert(args[1:], stdout, stderr)
	case "index":
		err = cmdIndex(args[1:], stderr, log)
	case "mount":
		err = cmdMount(args[1:], stderr, log)
	case "unmount", "umount":
		err = cmdUnmount(args[1:], stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "cramfs: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	var ue usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "cramfs %s: %v\n", args[0], err)
		return 2
	default:
		fmt.Fprintf(stderr, "cramfs %s: %v\n", args[0], err)
		return 1
	}
}

// usageError is a command line mistake (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// listFlag collects a flag given several times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// parseInterleaved parses flags that may come before or after the
// positional arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	args = splitAttached(args)
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// splitAttached accepts samtools' attached forms "-@4" and "-Tref.fa" as
// "-@ 4" and "-T ref.fa".
func splitAttached(args []string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		if len(a) > 2 && (strings.HasPrefix(a, "-@") || strings.HasPrefix(a, "-T")) && !strings.Contains(a, "=") {
			out = append(out, a[:2], a[2:])
			continue
		}
		out = append(out, a)
	}
	return out
}
