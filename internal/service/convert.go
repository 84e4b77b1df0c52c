package service

import (
	"context"
	"fmt"
	"io"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine"
	"github.com/cramfs/cramfs/engine/cram"
)

// ConvertOptions configure Convert.
type ConvertOptions struct {
	// References are FASTA files, as Options.References.
	References []string
	// Threads is the number of decoding workers, at least 1.
	Threads int
	// Level is the BGZF compression level, 0 to 9.
	Level int
	// NoMD leaves out the MD and NM tags.
	NoMD bool
	// AllowMissingEOF accepts a CRAM without its EOF container.
	AllowMissingEOF bool
	// Progress, when set, is called after each container is written with
	// the number written so far and the total.
	Progress func(done, total int)
}

// Convert writes the BAM of the CRAM file in to w: the bytes a mount
// serves at the same level, whatever the thread count. An error names the
// file and offset, and for a reference problem says what to do.
func Convert(ctx context.Context, in string, w io.Writer, opts ConvertOptions) error {
	if opts.Threads < 1 {
		return &OptionError{"Threads", fmt.Sprintf("%d: want at least 1", opts.Threads)}
	}
	level, err := engine.LevelOf(opts.Level)
	if err != nil {
		return &OptionError{"Level", fmt.Sprintf("%d: want 0 to 9", opts.Level)}
	}
	store, err := reference.Open(opts.References, reference.Options{})
	if err != nil {
		return err
	}
	defer store.Close()
	src, err := cram.Open(in, cram.Path(in), cram.Options{Reference: store, NoMD: opts.NoMD, AllowMissingEOF: opts.AllowMissingEOF})
	if err != nil {
		return err
	}
	defer src.Close()
	if err := engine.Convert(ctx, src, w, engine.ConvertOptions{Threads: opts.Threads, Level: level, Progress: opts.Progress}); err != nil {
		return WithReferenceHelp(err)
	}
	return nil
}
