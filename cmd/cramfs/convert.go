package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine"
)

// cmdConvert converts one CRAM file to BAM.
func cmdConvert(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("convert", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var refs listFlag
	fs.Var(&refs, "T", "reference FASTA (repeatable)")
	fs.Var(&refs, "reference", "reference FASTA (repeatable)")
	threads := fs.Int("@", runtime.GOMAXPROCS(0), "worker threads")
	fs.IntVar(threads, "threads", runtime.GOMAXPROCS(0), "worker threads")
	level := fs.Int("level", 6, "BGZF compression level, 0 (uncompressed) to 9")
	out := fs.String("o", "-", "output BAM file, - for standard output")
	noMD := fs.Bool("no-md", false, "do not generate MD and NM tags (htslib decode_md=0)")
	allowTrunc := fs.Bool("allow-missing-eof", false, "accept a CRAM without its EOF container")
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile to this file")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cramfs convert [-T FASTA]... [-@ N] [--level 0-9] [-o OUT.bam|-] IN.cram")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{fmt.Sprintf("want one input CRAM, got %d arguments", len(pos))}
	}
	in := pos[0]
	if *cpuProfile != "" {
		pf, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if *out != "-" {
		if a, b := absPath(in), absPath(*out); a == b {
			return usageError{"output would overwrite the input"}
		}
	}
	store, err := reference.Open(refs, reference.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	src, err := engine.OpenCRAM(in, engine.CRAMOptions{Reference: store, NoMD: *noMD, AllowMissingEOF: *allowTrunc})
	if err != nil {
		return err
	}
	defer src.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var w io.Writer = stdout
	var dst *output
	if *out != "-" {
		if dst, err = createOutput(*out); err != nil {
			return err
		}
		defer dst.abort()
		w = dst.f
	}
	bw := bufio.NewWriterSize(w, engine.WritePiece)
	if err := engine.Convert(ctx, src, bw, engine.ConvertOptions{Threads: *threads, Level: *level}); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
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
