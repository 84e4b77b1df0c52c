package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"

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

	bar := progressBar(stderr, 3, "indexing", "containers")
	var failed []string
	scanned, known := 0, 0
	for n, p := range files {
		if !strings.HasSuffix(p, ".cram") {
			log.Info("indexing a file without .cram suffix", "file", p)
		}
		if bar != nil {
			bar.Describe(fmt.Sprintf("indexing %d/%d %s", n+1, len(files), filepath.Base(p)))
		}
		res, err := indexWithProgress(ctx, svc, p, bar)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return err
			}
			log.Error("index failed", "file", p, "err", err)
			failed = append(failed, p)
			continue
		}
		if res.Scanned {
			scanned++
			log.Info("indexed", "file", p, "containers", res.Containers)
		} else {
			known++
			log.Info("already indexed, skipped", "file", p)
		}
	}
	if bar != nil {
		bar.Finish()
	}
	log.Info("index done", "files", len(files), "indexed", scanned, "already_indexed", known, "failed", len(failed))
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d files failed: %s", len(failed), len(files), strings.Join(failed, ", "))
	}
	return nil
}

// indexWithProgress indexes p, showing on bar (when not nil) the
// containers its scan has done.
func indexWithProgress(ctx context.Context, svc *service.Service, p string, bar *progressbar.ProgressBar) (service.Indexed, error) {
	if bar == nil {
		return svc.Index(ctx, p)
	}
	done := make(chan struct{})
	ticks := time.NewTicker(200 * time.Millisecond)
	defer ticks.Stop()
	go func() {
		for {
			select {
			case <-done:
				return
			case <-ticks.C:
				for _, sc := range svc.Scans() {
					bar.ChangeMax(sc.Total)
					bar.Set(sc.Done)
				}
			}
		}
	}()
	res, err := svc.Index(ctx, p)
	close(done)
	return res, err
}
