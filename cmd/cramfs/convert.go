package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/cramfs/cramfs/internal/service"
	"github.com/spf13/pflag"
)

// convertCmd is `cramfs convert`: one CRAM file to BAM.
type convertCmd struct {
	refs       []string
	threads    int
	level      int
	raw        bool // -u
	verbosity  int
	out        string
	noMD       bool
	allowTrunc bool
	cpuProfile string
}

func (c *convertCmd) flags(fs *pflag.FlagSet) {
	registerRefs(fs, &c.refs)
	registerThreads(fs, &c.threads)
	fs.IntVarP(&c.level, "level", "l", 6, "BGZF compression `LEVEL`, 0 (uncompressed) to 9")
	fs.BoolVarP(&c.raw, "uncompressed", "u", false, "uncompressed BAM (--level 0), as samtools view -u")
	fs.StringVarP(&c.out, "output", "o", "-", "write the BAM to `FILE`, - for standard output")
	fs.BoolVar(&c.noMD, "no-md", false, "do not generate MD and NM tags (htslib decode_md=0)")
	fs.BoolVar(&c.allowTrunc, "allow-missing-eof", false, "accept a CRAM without its EOF container")
	fs.IntVar(&c.verbosity, "verbosity", 3, "`N`, as samtools: below 3 no progress bar, 3 (default) and more one on a terminal")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a Go CPU profile to this file")
	fs.MarkHidden("cpuprofile")
}

func (c *convertCmd) run(pos []string, e *env) error {
	if len(pos) != 1 {
		return usageError{fmt.Sprintf("want one input CRAM, got %d arguments", len(pos))}
	}
	if err := checkLevel(c.level); err != nil {
		return err
	}
	if c.verbosity < 0 {
		return usageError{fmt.Sprintf("--verbosity %d: want 0 or more", c.verbosity)}
	}
	level := c.level
	if c.raw {
		level = 0
	}
	in := pos[0]
	if c.cpuProfile != "" {
		stop, err := startCPUProfile(c.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	if c.out != "-" && in != "-" {
		if a, b := absPath(in), absPath(c.out); a == b {
			return usageError{"output would overwrite the input"}
		}
	}
	if in == "-" {
		stdin, done, err := stdinCRAM()
		if err != nil {
			return err
		}
		defer done()
		in = stdin
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var w io.Writer = e.stdout
	var dst *output
	if c.out != "-" {
		var err error
		if dst, err = createOutput(c.out); err != nil {
			return err
		}
		defer dst.abort()
		w = dst.f
	}
	// Convert writes in pieces of engine.WritePiece: no bufio.Writer,
	// which would copy every piece.
	opts := service.ConvertOptions{References: c.refs, Threads: max(c.threads, 1), Level: level, NoMD: c.noMD, AllowMissingEOF: c.allowTrunc}
	if bar := progressBar(e.stderr, c.verbosity, "converting", "containers"); bar != nil {
		opts.Progress = func(done, total int) {
			bar.ChangeMax(total)
			bar.Set(done)
		}
		defer bar.Finish()
	}
	if err := service.Convert(ctx, in, w, opts); err != nil {
		return err
	}
	if dst != nil {
		return dst.commit()
	}
	return nil
}

// output is the destination of a conversion. A regular file (or a name
// not yet taken) is written under a temporary name beside it and renamed at
// the end, so a failed conversion never leaves a short BAM under the final
// name; anything else (/dev/null, a FIFO, a terminal) is written in place,
// never replaced.
type output struct {
	f    *os.File
	tmp  string // "" when writing in place
	name string // the final name: out with its symbolic links resolved
	done bool
}

func createOutput(out string) (*output, error) {
	name := out
	if fi, err := os.Stat(out); err == nil {
		if !fi.Mode().IsRegular() {
			f, err := os.OpenFile(out, os.O_WRONLY, 0)
			if err != nil {
				return nil, err
			}
			return &output{f: f, name: out}, nil
		}
		// Replace the file a symbolic link points at, not the link.
		if r, err := filepath.EvalSymlinks(out); err == nil {
			name = r
		}
	}
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".tmp*")
	if err != nil {
		return nil, err
	}
	return &output{f: f, tmp: f.Name(), name: name}, nil
}

// commit makes the written output final.
func (o *output) commit() error {
	o.done = true
	if o.tmp == "" {
		return o.f.Close()
	}
	if err := o.f.Chmod(0o644); err != nil {
		o.f.Close()
		os.Remove(o.tmp)
		return err
	}
	if err := o.f.Close(); err != nil {
		os.Remove(o.tmp)
		return err
	}
	if err := os.Rename(o.tmp, o.name); err != nil {
		os.Remove(o.tmp)
		return err
	}
	return nil
}

// abort discards the output unless commit was called.
func (o *output) abort() {
	if o.done {
		return
	}
	o.f.Close()
	if o.tmp != "" {
		os.Remove(o.tmp)
	}
}

func absPath(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	if r, err := filepath.EvalSymlinks(a); err == nil {
		return r
	}
	return a
}

// stdinCRAM returns a path to read the CRAM on standard input from, and
// what to call once done. The decoder reads containers at any offset, in
// parallel: a regular file redirected to standard input is read in place
// (/dev/stdin), a pipe is first copied to a temporary file ($TMPDIR), as
// large as the CRAM, removed at the end.
func stdinCRAM() (string, func(), error) {
	if fi, err := os.Stdin.Stat(); err == nil && fi.Mode().IsRegular() {
		return "/dev/stdin", func() {}, nil
	}
	tmp, err := os.CreateTemp("", "cramfs-stdin-*.cram")
	if err != nil {
		return "", nil, fmt.Errorf("standard input: %w", err)
	}
	done := func() { tmp.Close(); os.Remove(tmp.Name()) }
	if _, err := io.Copy(tmp, os.Stdin); err != nil {
		done()
		return "", nil, fmt.Errorf("standard input: copying to %s: %w", tmp.Name(), err)
	}
	return tmp.Name(), done, nil
}
