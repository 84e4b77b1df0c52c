package main

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/spf13/pflag"
)

// subcommand is one `cramfs NAME` command: it registers its options on a
// flag set and runs with the operands left after parsing.
type subcommand interface {
	flags(fs *pflag.FlagSet)
	run(operands []string, e *env) error
}

// command describes a subcommand for parsing and help.
type command struct {
	name     string
	operands string // what follows the options in the synopsis, e.g. "SRC MNT"
	summary  string // one line, shown in `cramfs --help` and the command's help
	make     func() subcommand
}

// commands are the subcommands, in the order help lists them.
var commands = []command{
	{"convert", "IN.cram", "write the BAM of one CRAM file", func() subcommand { return &convertCmd{} }},
	{"index", "PATH...", "prepare the layout of CRAM files (or directories of them) ahead of a mount", func() subcommand { return &indexCmd{} }},
	{"mount", "SRC MNT", "show the CRAM files under SRC as BAM files at MNT until unmounted", func() subcommand { return &mountCmd{} }},
	{"serve", "SRC", "serve the CRAM files under SRC as BAM files over HTTP, where FUSE cannot go", func() subcommand { return &serveCmd{} }},
	{"unmount", "MNT", "unmount a cramfs mount", func() subcommand { return &unmountCmd{} }},
	{"status", "MNT|URL", "show what a running mount (or cramfs serve at URL) serves: its files, their state, the cache", func() subcommand { return &statusCmd{} }},
	{"version", "", "print the version and exit", func() subcommand { return &versionCmd{} }},
	{"completion", "SHELL", "print a bash or zsh completion script for cramfs", func() subcommand { return &completionCmd{} }},
}

// findCommand returns the command called name ("umount" is unmount).
func findCommand(name string) (command, bool) {
	if name == "umount" {
		name = "unmount"
	}
	for _, c := range commands {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// errHelp asks for the command's help on standard output (exit 0).
var errHelp = errors.New("help requested")

// reportedError is a failure already reported to the user by other means
// (a background mount's starter prints it): exit 1, nothing printed.
type reportedError struct{ err error }

func (e reportedError) Error() string { return e.err.Error() }
func (e reportedError) Unwrap() error { return e.err }

// usageError is a command line mistake (exit code 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// defaultAnnotation names a flag annotation holding the default as help
// should show it, for defaults that depend on the machine (the threads).
const defaultAnnotation = "cramfs-default"

// flagSet returns the command's flag set with sub's options registered.
// Flags and operands may be interleaved, as with GNU tools; "--" ends the
// options.
func (c command) flagSet(sub subcommand) *pflag.FlagSet {
	fs := pflag.NewFlagSet("cramfs "+c.name, pflag.ContinueOnError)
	fs.SortFlags = false
	fs.SetOutput(io.Discard) // every message is printed once, by run
	fs.Usage = func() {}
	sub.flags(fs)
	fs.BoolP("help", "h", false, "show this help and exit")
	return fs
}

// parse parses args and returns the operands; errHelp for -h/--help, a
// usageError for anything else wrong.
func (c command) parse(fs *pflag.FlagSet, args []string) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil, errHelp
		}
		return nil, usageError{err.Error()}
	}
	if h, _ := fs.GetBool("help"); h {
		return nil, errHelp
	}
	return fs.Args(), nil
}

// synopsis is the command's usage line; [OPTIONS] when it has options
// other than --help.
func (c command) synopsis() string {
	s := "cramfs " + c.name
	if len(optionRows(c.flagSet(c.make()))) > 1 {
		s += " [OPTIONS]"
	}
	if c.operands != "" {
		s += " " + c.operands
	}
	return s
}

// writeHelp writes the command's help: synopsis, summary and options.
func (c command) writeHelp(w io.Writer, fs *pflag.FlagSet) {
	fmt.Fprintf(w, "Usage: %s\n\n%s.\n\nOptions:\n%s", c.synopsis(), upperFirst(c.summary), optionLines(fs))
}

// optionRow is one visible option as help shows it: its forms with the
// value's name ("-T, --reference FASTA"), and its description with the
// default.
type optionRow struct{ forms, text string }

// optionRows lists the visible options of fs, in definition order.
func optionRows(fs *pflag.FlagSet) []optionRow {
	var rows []optionRow
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		forms := "--" + f.Name
		if f.Shorthand != "" {
			forms = "-" + f.Shorthand + ", --" + f.Name
		}
		name, usage := pflag.UnquoteUsage(f)
		if name != "" && f.Value.Type() != "bool" {
			forms += " " + name
		}
		if d := flagDefault(f); d != "" {
			usage += " (default " + d + ")"
		}
		rows = append(rows, optionRow{forms, usage})
	})
	return rows
}

// optionLines formats the visible options of fs, one per line, long
// forms aligned.
func optionLines(fs *pflag.FlagSet) string {
	rows := optionRows(fs)
	width := 0
	for i, r := range rows {
		if !strings.HasPrefix(r.forms, "--") {
			continue
		}
		rows[i].forms = "    " + r.forms
	}
	for _, r := range rows {
		width = max(width, len(r.forms))
	}
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, r.forms, r.text)
	}
	return b.String()
}

// flagDefault is the default help shows for f, "" when there is none worth
// showing (false, empty, an empty list).
func flagDefault(f *pflag.Flag) string {
	if d := f.Annotations[defaultAnnotation]; len(d) > 0 {
		return d[0]
	}
	switch f.DefValue {
	case "", "false", "[]":
		return ""
	}
	return f.DefValue
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// topUsage is `cramfs --help`.
func topUsage() string {
	var b strings.Builder
	b.WriteString("cramfs presents CRAM files as BAM files.\n\nUsage:\n")
	width := 0
	for _, c := range commands {
		width = max(width, len(c.name))
	}
	for _, c := range commands {
		fmt.Fprintf(&b, "  cramfs %-*s  %s\n", width, c.name, c.summary)
	}
	b.WriteString("\nRun 'cramfs COMMAND --help' for the options of a command, 'cramfs --version' for the version.\n")
	return b.String()
}

// registerRefs registers -T/--reference, samtools' option.
func registerRefs(fs *pflag.FlagSet, refs *[]string) {
	fs.StringArrayVarP(refs, "reference", "T", nil, "reference `FASTA` (repeatable; also found through the @SQ UR: field, REF_CACHE and REF_PATH)")
}

// registerThreads registers -@/--threads, samtools' option, defaulting to
// the number of CPUs the process may use.
func registerThreads(fs *pflag.FlagSet, threads *int) {
	fs.IntVarP(threads, "threads", "@", runtime.GOMAXPROCS(0), "decode with `N` worker threads")
	fs.SetAnnotation("threads", defaultAnnotation, []string{"the number of CPUs"})
}
