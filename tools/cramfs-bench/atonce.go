package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// The cases of eight readers at once: eight files, each a copy of one
// flavour's CRAM, read by eight concurrent samtools through one mount (or
// one cramfs serve), against eight concurrent samtools pipes on the
// CRAMs. The copies are distinct files (cp --reflink=auto: a copy of its
// own on a file system without reflinks, such as ext4), so that cramfs,
// which caches by the CRAM's identity (device, inode, size, times), holds
// eight layouts and builds eight files' segments, as for eight samples.

// readersAtOnce is how many readers those cases run at once.
const readersAtOnce = 8

// groupReaders is the group of the mount's readers at once.
const groupReaders = "8 readers at once"

// Measures of the rows of jobs at once.
const (
	measureAllDone = "reads records: until all 8 ended"
	measureSlowest = "reads records: slowest of the 8"
	measureFastest = "reads records: fastest of the 8"
)

// atOncePairs are the three rows of a side of jobs at once against
// another: the time until all ended, the slowest job's, the fastest's.
func atOncePairs(c, s int, tool string) []pair {
	return []pair{
		{Cramfs: c, Baseline: s, Tool: tool, Measure: measureAllDone, Stat: statWhole},
		{Cramfs: c, Baseline: s, Tool: tool, Measure: measureSlowest, Stat: statSlowest},
		{Cramfs: c, Baseline: s, Tool: tool, Measure: measureFastest, Stat: statFastest},
	}
}

// timeAtOnce starts every job at once, a job being one command or two
// run as a pipe, and waits for all: Secs is the time until the last
// ended, Jobs each job's own time, RSSKB the sum of their peak RSS (they
// run at once), Out their outputs in job order, space-separated.
func timeAtOnce(ctx context.Context, jobs [][]command) (sample, error) {
	got := make([]sample, len(jobs))
	errs := make([]error, len(jobs))
	var wg sync.WaitGroup
	start := time.Now()
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch len(j) {
			case 1:
				got[i], errs[i] = timeRun(ctx, j[0])
			case 2:
				got[i], errs[i] = timePipe(ctx, j[0], j[1])
			default:
				errs[i] = fmt.Errorf("job %d: %d commands, want 1 or a pipe of 2", i, len(j))
			}
		}()
	}
	wg.Wait()
	out := sample{Secs: time.Since(start).Seconds()}
	outs := make([]string, len(jobs))
	for i, g := range got {
		if errs[i] != nil {
			return sample{}, fmt.Errorf("job %d of %d at once: %w", i+1, len(jobs), errs[i])
		}
		out.Jobs = append(out.Jobs, g.Secs)
		out.RSSKB += g.RSSKB
		outs[i] = g.Out
	}
	out.Out = strings.Join(outs, " ")
	return out, nil
}

// copiesDir is where the copies of f for the readers at once are made.
func (b *bench) copiesDir(f flavour) string { return filepath.Join(b.scratch, "copies-"+f.ID) }

// copyStems are the stems of the copies of f: STEM.r1 ... STEM.r8.
func copyStems(f flavour) []string {
	out := make([]string, readersAtOnce)
	for i := range out {
		out[i] = fmt.Sprintf("%s.r%d", f.Stem(), i+1)
	}
	return out
}

// copiesSetup makes the copies of f (once per run) with their .crai and
// builds their warm index.
func (b *bench) copiesSetup(f flavour) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		dir := b.copiesDir(f)
		done := filepath.Join(dir, ".complete")
		if _, err := os.Stat(done); err == nil {
			return nil
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		for _, stem := range copyStems(f) {
			dst := filepath.Join(dir, stem+".cram")
			cp := command{Path: "cp", Args: []string{"--reflink=auto", f.CRAM, dst}}
			if _, err := timeRun(ctx, cp); err != nil {
				return err
			}
			if f.HasCRAI() {
				if _, err := timeRun(ctx, command{Path: "cp", Args: []string{"--reflink=auto", f.CRAM + ".crai", dst + ".crai"}}); err != nil {
					return err
				}
			}
		}
		idx := b.cfs("index", "-T", b.data.Ref, "-@", b.th(), "--level", b.lv(), "--cache-size", cacheSize, "--cache-dir", b.warmCache, dir)
		if _, err := timeRun(ctx, idx); err != nil {
			return err
		}
		return os.WriteFile(done, nil, 0o644)
	}
}

// readersCase reads the eight copies of f through one mount, by eight
// samtools view -c at once, against eight pipes view -u CRAM | view -c -
// at once, per samtools.
func (b *bench) readersCase(f flavour) benchCase {
	k := benchCase{ID: "readers8/" + f.ID, Group: groupReaders, Flavour: f.Name,
		Variant: fmt.Sprintf("%d copies, view -c", readersAtOnce), Late: 2, Setup: b.copiesSetup(f), CheckOut: "record counts"}
	dir := b.copiesDir(f)
	for _, t := range b.tools {
		readers := func(mnt string) [][]command {
			var jobs [][]command
			for _, stem := range copyStems(f) {
				jobs = append(jobs, []command{b.samWith(t, "view", "-@", b.th(), "-c", filepath.Join(mnt, stem+".bam"))})
			}
			return jobs
		}
		pipes := b.decodePipes(t, f, func(stem string) string { return filepath.Join(dir, stem+".cram") })
		c := k.add(side{Label: "mount + 8 × view -c", Desc: b.mountDirCmd(dir, "MNT", cacheSize).String() + "; 8 at once: " + readers("MNT")[0][0].String(),
			Run: func(ctx context.Context) (sample, error) {
				return b.withMount(ctx, dir, func(mnt string) (sample, error) { return timeAtOnce(ctx, readers(mnt)) })
			}})
		s := k.add(side{Label: "8 × view -u CRAM | view -c -", Desc: "8 at once: " + pipes[0][0].String() + " | " + pipes[0][1].String(),
			Run: func(ctx context.Context) (sample, error) { return timeAtOnce(ctx, pipes) }})
		k.Pairs = append(k.Pairs, atOncePairs(c, s, t.Version)...)
	}
	return k
}

// decodePipes are the pipes view -u CRAM | view -c - of samtools t on the
// copies of f, the CRAM of each at cram(stem).
func (b *bench) decodePipes(t samtool, f flavour, cram func(stem string) string) [][]command {
	var jobs [][]command
	for _, stem := range copyStems(f) {
		jobs = append(jobs, []command{
			b.samWith(t, "view", "-@", b.th(), "-u", "-T", b.data.Ref, cram(stem)),
			b.samWith(t, "view", "-@", b.th(), "-c", "-"),
		})
	}
	return jobs
}
