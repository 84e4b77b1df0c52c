package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/cramfs/cramfs/engine"
	"github.com/spf13/pflag"
)

// indexCmd is `cramfs index`: it builds the persisted layout index of
// every CRAM given or found in the directories given.
type indexCmd struct{ ef engineFlags }

func (c *indexCmd) flags(fs *pflag.FlagSet) {
	c.ef.register(fs)
	fs.BoolVar(&c.ef.digests, "digests", false, "at --level 0, build every container to record its digest (slower; mounts then never rewrite the index, see docs/trust.md)")
}

func (c *indexCmd) run(pos []string, e *env) error {
	ef, stderr, log := &c.ef, e.stderr, e.log
	if len(pos) == 0 {
		return usageError{"want at least one CRAM file or directory"}
	}
	var files []string
	for _, p := range pos {
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st.IsDir() {
			files = append(files, findCRAMs(p, log)...)
		} else {
			files = append(files, p)
		}
	}
	store, mgr, copt, err := ef.open(log)
	if err != nil {
		return err
	}
	defer store.Close()
	defer mgr.Close()
	// The same memory bound as a mount's: a scan's decoders and builds
	// are those of a mount's first access.
	lim := newMemoryLimit(mgr.Options().CacheSize, mgr.Options().Threads, copt.Decoders)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	var bar *progressbar.ProgressBar
	if f, ok := stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(len(files), progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("indexing"), progressbar.OptionShowCount(), progressbar.OptionClearOnFinish())
	}
	var failed []string
	for _, p := range files {
		if !strings.HasSuffix(p, ".cram") && bar == nil {
			log.Info("indexing a file without .cram suffix", "file", p)
		}
		err := indexOne(ctx, mgr, copt, p, lim.noteLayout)
		if bar != nil {
			bar.Add(1)
		}
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return err
			}
			log.Error("index failed", "file", p, "err", withReferenceHelp(err))
			failed = append(failed, p)
			continue
		}
		if bar == nil {
			log.Info("indexed", "file", p)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d files failed: %s", len(failed), len(files), strings.Join(failed, ", "))
	}
	return nil
}

func indexOne(ctx context.Context, mgr *engine.Manager, copt engine.CRAMOptions, path string, onLayout func(engine.Layout)) error {
	src, err := engine.OpenCRAM(path, copt)
	if err != nil {
		return err
	}
	defer src.Close()
	v, err := mgr.Open(ctx, src)
	if err == nil {
		onLayout(v.Layout())
	}
	return err
}

// findCRAMs lists the regular files and links named *.cram below root
// (a user-given directory; OpenCRAM refuses a link to anything not
// regular without blocking). FIFOs, sockets and devices are left out.
func findCRAMs(root string, log *slog.Logger) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			log.Warn("walk", "path", p, "err", err)
			return nil
		}
		if (d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0) && strings.HasSuffix(d.Name(), ".cram") {
			out = append(out, p)
		}
		return nil
	})
	return out
}
