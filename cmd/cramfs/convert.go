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
	var fh *os.File
	if *out != "-" {
		// Write next to the destination and rename at the end, so a failed
		// conversion never leaves a short BAM under the final name.
		fh, err = os.CreateTemp(filepath.Dir(*out), "."+filepath.Base(*out)+".tmp*")
		if err != nil {
			return err
		}
		defer os.Remove(fh.Name())
		defer fh.Close()
		w = fh
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	if err := engine.Convert(ctx, src, bw, engine.ConvertOptions{Threads: *threads, Level: *level}); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if fh != nil {
		if err := fh.Chmod(0o644); err != nil {
			return err
		}
		if err := fh.Close(); err != nil {
			return err
		}
		return os.Rename(fh.Name(), *out)
	}
	return nil
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
