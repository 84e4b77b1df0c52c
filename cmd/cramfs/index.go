package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/cramfs/cramfs/internal/service"
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
			files = append(files, service.FindCRAMs(p, log)...)
		} else {
			files = append(files, p)
		}
	}
	opts, err := ef.options(log)
	if err != nil {
		return err
	}
	svc, err := service.Open(opts)
	if err != nil {
		return err
	}
	defer svc.Close()
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
		err := svc.Index(ctx, p)
		if bar != nil {
			bar.Add(1)
		}
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return err
			}
			log.Error("index failed", "file", p, "err", err)
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
