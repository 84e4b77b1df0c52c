package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// side is one of the commands a case compares; Run measures it once.
type side struct {
	Label string // short label for the table
	Desc  string // the command line, for the legend
	Run   func(ctx context.Context) (sample, error)
}

// What the two sides of a row do, for the table's measure column.
const (
	measureWrite   = "writes BAM"
	measureScan    = "layout scan / writes BAM"
	measureRecords = "reads records"
	measureCount   = "count only"
	// measureNull: both sides decode the whole file and write the BAM to
	// /dev/null, so neither side's time includes writing a file.
	measureNull     = "to /dev/null"
	measureScanNull = "layout scan / BAM to /dev/null"
)

// pair is one row of the table: a cramfs side against a samtools side of
// the same case.
type pair struct {
	Cramfs, Baseline int    // indexes into benchCase.Sides
	Tool             string // version of the samtools on the baseline side (and reading the mount)
	Measure          string // one of the measure constants
	Stat             stat   // what the row takes of the sides' samples
}

// stat is what a row takes of its sides' samples.
type stat int

const (
	statWhole   stat = iota // the samples as measured (jobs at once: until the last ended)
	statSlowest             // of a side running jobs at once, its slowest job's time
	statFastest             // its fastest job's time
)

// of returns the samples the stat takes of ss: with their RSS, the time
// of the slowest or fastest of the jobs.
func (s stat) of(ss []sample) []sample {
	if s == statWhole {
		return ss
	}
	out := make([]sample, len(ss))
	for i, x := range ss {
		out[i] = sample{RSSKB: x.RSSKB}
		if len(x.Jobs) > 0 {
			out[i].Secs = slices.Max(x.Jobs)
			if s == statFastest {
				out[i].Secs = slices.Min(x.Jobs)
			}
		}
	}
	return out
}

// benchCase is a set of commands that every round runs once each, in
// order, and the pairs of them the table compares.
type benchCase struct {
	ID   string // matched by -only
	Skip string // why the case cannot run here ("" if it can)
	// Late orders the runs: 0 for the cases whose rows a target checks
	// on every flavour, 1 for the slow-to-set-up ones a target checks,
	// 2 for the rest, so that a run stopped early has the targets' rows.
	// The table keeps the order of cases().
	Late                    int
	Group, Flavour, Variant string
	Sides                   []side
	Pairs                   []pair
	// CheckOut names what the sides print ("record count"): a round in
	// which the two sides of a pair printed different output fails. ""
	// checks nothing.
	CheckOut string
	// Setup runs once before the first round (may be nil).
	Setup func(ctx context.Context) error
	// AfterRound runs after every round (may be nil).
	AfterRound func(ctx context.Context, round int) error
}

// add appends s to the sides and returns its index.
func (k *benchCase) add(s side) int {
	k.Sides = append(k.Sides, s)
	return len(k.Sides) - 1
}

// samtool is one samtools build the cases compare with.
type samtool struct {
	Path    string
	Version string // "1.23.1": the --version number without any -N-gHASH suffix
	Line    string // first line of --version, for the preamble
}

// bench holds what every case needs.
type bench struct {
	cramfs     string
	cramfsRev  string    // the measured cramfs' commit (-cramfs-rev, git HEAD or build info)
	tools      []samtool // the oracle (1.16) first; checks and dataset setup use it
	data       *dataset
	threads    int
	serveLevel int    // --level of index and mount; 0 compares with samtools -u
	scratch    string // temporary outputs, removed at the end
	warmCache  string // layout indexes built once by `cramfs index`
	regions    []string
}

// cacheBudgetMiB is the --cache-size of every mount and index the bench
// runs (the mount's default), against which the RSS target is checked.
const cacheBudgetMiB = 256

// samEnv keeps htslib from looking for references anywhere but -T.
var samEnv = []string{"REF_PATH=/nonexistent", "REF_CACHE=/nonexistent"}

// sam is a command of the oracle samtools.
func (b *bench) sam(args ...string) command { return b.samWith(b.tools[0], args...) }

func (b *bench) samWith(t samtool, args ...string) command {
	return command{Path: t.Path, Args: args, Env: samEnv}
}

func (b *bench) cfs(args ...string) command {
	return command{Path: b.cramfs, Args: args, Env: samEnv}
}

func (b *bench) th() string { return strconv.Itoa(b.threads) }

// lv is the serving level as a flag value.
func (b *bench) lv() string { return strconv.Itoa(b.serveLevel) }

// samServe are samtools' output options at the serving level.
func (b *bench) samServe() []string {
	if b.serveLevel == 0 {
		return []string{"-u"}
	}
	return []string{"-b", "--output-fmt-option", "level=" + b.lv()}
}

// convertLevels are the output settings of the convert group: the cramfs
// --level and the matching samtools output options.
var convertLevels = []struct {
	variant string
	level   int
	samOpt  []string
}{
	{"level 1", 1, []string{"-b", "--output-fmt-option", "level=1"}},
	{"level 6", 6, []string{"-b", "--output-fmt-option", "level=6"}},
	{"level 0 (-u)", 0, []string{"-u"}},
}

// cases builds the table of cases for every flavour.
func (b *bench) cases() []benchCase {
	var out []benchCase
	for _, f := range b.data.Flavours {
		for _, lv := range convertLevels {
			k := b.convertCase(f, lv.variant, lv.level, lv.samOpt)
			if lv.level == 6 {
				k.Late = 2
			}
			out = append(out, k)
		}
		out = append(out, b.firstAccessCase(f), b.seqReadCase(f, "seq-read/"+f.ID, "view -c"))
		for _, records := range []bool{true, false} {
			rc := b.regionCase(f, records)
			if !records {
				rc.Late = 2
			}
			if !f.HasCRAI() {
				rc.Skip = f.CRAM + " has no .crai"
			}
			out = append(out, rc)
		}
	}
	for _, f := range b.data.Flavours {
		if f.ID == "v30" || f.ID == "v31" {
			out = append(out, b.serveCases(f)...)
		}
	}
	for _, f := range b.data.Flavours {
		if f.ID == "v30" {
			late := append(b.smallSliceCases(f), b.scaleCase(f))
			for i := range late {
				late[i].Late = 1
			}
			out = append(out, late...)
			out = append(out, b.floorCases(f)...)
			out = append(out, b.readersCase(f))
			out = append(out, b.serveLoadCases(f)...)
			out = append(out, b.bigCases(f)...)
		}
	}
	return out
}

// scaleCase streams a CRAM four times the size of f (the 3.0 file)
// through the mount, so that the table shows the mount's peak RSS beside
// f's own sequential read (it should not grow with the file). The CRAM, made once per run in the
// scratch directory, is four copies of f concatenated and re-encoded
// (samtools cat | samtools view -C, as CRAM 3.0).
func (b *bench) scaleCase(f flavour) benchCase {
	big := flavour{ID: f.ID + "-x4", Name: f.Name + " ×4", CRAM: filepath.Join(b.scratch, "x4", f.Stem()+".x4.cram")}
	c := b.seqReadCase(big, "seq-read-x4/"+f.ID, "view -c, file ×4")
	cat := b.sam("cat", f.CRAM, f.CRAM, f.CRAM, f.CRAM)
	enc := b.sam("view", "-@", b.th(), "-C", "-T", b.data.Ref, "--output-fmt-option", "version=3.0", "-o", big.CRAM, "-")
	warm := b.warmIndex(big)
	c.Setup = func(ctx context.Context) error {
		if err := os.MkdirAll(filepath.Dir(big.CRAM), 0o755); err != nil {
			return err
		}
		if err := pipe(ctx, cat, enc); err != nil {
			return fmt.Errorf("making the x4 CRAM: %w", err)
		}
		return warm(ctx)
	}
	return c
}

// bigCopies is how many copies of the 3.0 file the ×16 file holds.
const bigCopies = 16

// bigCases are first access, the sequential read and the region queries
// of a CRAM bigCopies times the size of f (the 3.0 file), whose rows the
// report compares with f's own (linear time, flat RSS). The CRAM, made once
// per run in the scratch directory with its .crai, is the copies merged in
// coordinate order (samtools merge, identical read groups and programs
// combined, as CRAM 3.0), so that the regions hold bigCopies times the
// records.
func (b *bench) bigCases(f flavour) []benchCase {
	x := fmt.Sprintf("x%d", bigCopies)
	big := flavour{ID: f.ID + "-" + x, Name: fmt.Sprintf("%s ×%d", f.Name, bigCopies), CRAM: filepath.Join(b.scratch, x, f.Stem()+"."+x+".cram")}
	suffix := fmt.Sprintf(", file ×%d", bigCopies)
	setup := b.bigSetup(f, big)
	fa := b.firstAccessCase(big)
	fa.ID, fa.Variant = "first-access-"+x+"/"+f.ID, fa.Variant+suffix
	seq := b.seqReadCase(big, "seq-read-"+x+"/"+f.ID, "view -c"+suffix)
	rc := b.regionCase(big, true)
	rc.ID, rc.Variant = "regions-"+x+"/"+f.ID, rc.Variant+suffix
	out := []benchCase{fa, seq, rc}
	for i := range out {
		out[i].Setup = setup
		out[i].Late = 1
	}
	return out
}

// bigSetup makes big (once per run) from bigCopies copies of f and builds
// its warm index.
func (b *bench) bigSetup(f, big flavour) func(ctx context.Context) error {
	merge := b.bigMerge(f, big)
	warm := b.warmIndex(big)
	done := big.CRAM + ".complete"
	return func(ctx context.Context) error {
		if _, err := os.Stat(done); err != nil {
			if err := os.MkdirAll(filepath.Dir(big.CRAM), 0o755); err != nil {
				return err
			}
			start := time.Now()
			if _, err := timeRun(ctx, merge); err != nil {
				return fmt.Errorf("making the ×%d CRAM: %w", bigCopies, err)
			}
			fmt.Fprintf(os.Stderr, "  made %s in %.0f s\n", big.CRAM, time.Since(start).Seconds())
			if !big.HasCRAI() {
				return fmt.Errorf("%s: samtools merge --write-index wrote no .crai", big.CRAM)
			}
			if err := os.WriteFile(done, nil, 0o644); err != nil {
				return err
			}
		}
		return warm(ctx)
	}
}

// bigMerge writes big, with its .crai, from bigCopies copies of f.
func (b *bench) bigMerge(f, big flavour) command {
	args := []string{"merge", "-c", "-p", "-f", "-@", b.th(), "--reference", b.data.Ref, "-O", "cram,version=3.0", "--write-index", "-o", big.CRAM}
	for range bigCopies {
		args = append(args, f.CRAM)
	}
	return b.sam(args...)
}

// smallSliceReads is how many reads of the 3.0 file the small-slice
// flavours hold: a second or two of samtools, and few enough that writing
// them in slices of one read stays quick.
const smallSliceReads = 120_000

// smallSliceWriters write the small-slice flavours: layouts that other
// writers and settings make, whose slices hold one read each, so that
// both writers switch to multi-reference slices. args are the writer's
// arguments, reading SAM from standard input; REF and OUT are replaced.
var smallSliceWriters = []struct {
	id, name string
	scramble bool // written by scramble (staden io_lib), else by samtools
	args     []string
}{
	{"sps1", "samtools seqs_per_slice=1", false,
		[]string{"view", "--no-PG", "-T", "REF", "-O", "cram,version=3.0,seqs_per_slice=1", "-o", "OUT", "-"}},
	{"s1S50", "scramble -s 1 -S 50", true,
		[]string{"-q", "-I", "sam", "-O", "cram", "-V3.0", "-s", "1", "-S", "50", "-r", "REF", "/dev/stdin", "OUT"}},
}

// smallSliceCases convert, at level 0, CRAMs of the first smallSliceReads
// reads of f written in tiny slices, made once per run in the scratch
// directory (samtools head | writer).
func (b *bench) smallSliceCases(f flavour) []benchCase {
	head := b.sam("head", "-n", strconv.Itoa(smallSliceReads), "-T", b.data.Ref, f.CRAM)
	var out []benchCase
	for _, w := range smallSliceWriters {
		sf := flavour{ID: f.ID + "-" + w.id, Name: fmt.Sprintf("%s, %dk reads, %s", f.Name, smallSliceReads/1000, w.name),
			CRAM: filepath.Join(b.scratch, "small", f.Stem()+"."+w.id+".cram")}
		c := b.convertCase(sf, "level 0 (-u)", 0, []string{"-u"})
		write := b.sam()
		if w.scramble {
			p, err := exec.LookPath("scramble")
			if err != nil {
				c.Skip = "scramble not found (apt-get install staden-io-lib-utils)"
			}
			write.Path = p
		}
		for _, a := range w.args {
			write.Args = append(write.Args, strings.NewReplacer("REF", b.data.Ref, "OUT", sf.CRAM).Replace(a))
		}
		c.Setup = func(ctx context.Context) error {
			if err := os.MkdirAll(filepath.Dir(sf.CRAM), 0o755); err != nil {
				return err
			}
			if err := pipe(ctx, head, write); err != nil {
				return fmt.Errorf("making %s: %w", sf.Name, err)
			}
			return nil
		}
		out = append(out, c)
	}
	return out
}

func (b *bench) convertCase(f flavour, variant string, level int, samOpt []string) benchCase {
	cOut := filepath.Join(b.scratch, "convert.cramfs.bam")
	cCmd := b.cfs("convert", "-T", b.data.Ref, "-@", b.th(), "--level", strconv.Itoa(level), "-o", cOut, f.CRAM)
	k := benchCase{
		ID:    fmt.Sprintf("convert/%s/level%d", f.ID, level),
		Group: "convert", Flavour: f.Name, Variant: variant,
	}
	c := k.add(side{Label: "cramfs convert", Desc: cCmd.String(), Run: runner(cCmd)})
	outs := []string{cOut}
	for _, t := range b.tools {
		sOut := filepath.Join(b.scratch, "convert.samtools-"+t.Version+".bam")
		sArgs := append([]string{"view", "-@", b.th(), "-T", b.data.Ref, "--no-PG"}, samOpt...)
		sCmd := b.samWith(t, append(sArgs, "-o", sOut, f.CRAM)...)
		s := k.add(side{Label: "samtools view", Desc: sCmd.String(), Run: runner(sCmd)})
		k.Pairs = append(k.Pairs, pair{Cramfs: c, Baseline: s, Tool: t.Version, Measure: measureWrite})
		outs = append(outs, sOut)
	}
	if level == 0 {
		b.addNullSides(&k, f, level, samOpt)
	}
	// The first round's output is checked against the oracle's (outs[1]).
	k.AfterRound = func(ctx context.Context, round int) error {
		defer removeAll(outs)
		if round > 0 {
			return nil
		}
		return b.checkSame(ctx, outs[0], outs[1])
	}
	return k
}

func (b *bench) firstAccessCase(f flavour) benchCase {
	desc := b.cfs("index", "-T", b.data.Ref, "-@", b.th(), "--level", b.lv(), "--cache-size", cacheSize, "--cache-dir", "FRESH_DIR", f.CRAM).String()
	index := func(ctx context.Context) (sample, error) {
		dir, err := os.MkdirTemp(b.scratch, "fresh-cache-")
		if err != nil {
			return sample{}, err
		}
		defer os.RemoveAll(dir)
		return timeRun(ctx, b.cfs("index", "-T", b.data.Ref, "-@", b.th(), "--level", b.lv(), "--cache-size", cacheSize, "--cache-dir", dir, f.CRAM))
	}
	k := benchCase{
		ID:    fmt.Sprintf("first-access/%s", f.ID),
		Group: "first access", Flavour: f.Name, Variant: "layout scan",
	}
	c := k.add(side{Label: "cramfs index", Desc: desc, Run: index})
	var outs []string
	for _, t := range b.tools {
		sOut := filepath.Join(b.scratch, "first.samtools-"+t.Version+".bam")
		sCmd := b.samWith(t, append(append([]string{"view", "-@", b.th(), "-T", b.data.Ref, "--no-PG"}, b.samServe()...), "-o", sOut, f.CRAM)...)
		s := k.add(side{Label: "samtools view " + strings.Join(b.samServe(), " "), Desc: sCmd.String(), Run: runner(sCmd)})
		k.Pairs = append(k.Pairs, pair{Cramfs: c, Baseline: s, Tool: t.Version, Measure: measureScan})
		outs = append(outs, sOut)
	}
	for _, t := range b.tools {
		sCmd := b.samWith(t, append(append([]string{"view", "-@", b.th(), "-T", b.data.Ref, "--no-PG"}, b.samServe()...), "-o", os.DevNull, f.CRAM)...)
		s := k.add(side{Label: "samtools view " + strings.Join(b.samServe(), " ") + " -o /dev/null", Desc: sCmd.String(), Run: runner(sCmd)})
		k.Pairs = append(k.Pairs, pair{Cramfs: c, Baseline: s, Tool: t.Version, Measure: measureScanNull})
	}
	k.AfterRound = func(context.Context, int) error { return removeAll(outs) }
	return k
}

// addNullSides adds to a convert case the same conversion written to
// /dev/null on both sides (cramfs convert, then each samtools), in rows
// of their own after the written-file rows.
func (b *bench) addNullSides(k *benchCase, f flavour, level int, samOpt []string) {
	cCmd := b.cfs("convert", "-T", b.data.Ref, "-@", b.th(), "--level", strconv.Itoa(level), "-o", os.DevNull, f.CRAM)
	c := k.add(side{Label: "cramfs convert -o /dev/null", Desc: cCmd.String(), Run: runner(cCmd)})
	for _, t := range b.tools {
		sArgs := append([]string{"view", "-@", b.th(), "-T", b.data.Ref, "--no-PG"}, samOpt...)
		sCmd := b.samWith(t, append(sArgs, "-o", os.DevNull, f.CRAM)...)
		s := k.add(side{Label: "samtools view -o /dev/null", Desc: sCmd.String(), Run: runner(sCmd)})
		k.Pairs = append(k.Pairs, pair{Cramfs: c, Baseline: s, Tool: t.Version, Measure: measureNull})
	}
}

// cacheSize is cacheBudgetMiB as a --cache-size value.
var cacheSize = strconv.Itoa(cacheBudgetMiB) + "M"

// warmIndex builds the persisted layout index the mount cases use.
func (b *bench) warmIndex(f flavour) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		_, err := timeRun(ctx, b.cfs("index", "-T", b.data.Ref, "-@", b.th(), "--level", b.lv(), "--cache-size", cacheSize, "--cache-dir", b.warmCache, f.CRAM))
		return err
	}
}

func (b *bench) mountCmd(f flavour, mnt string) command {
	return b.mountDirCmd(filepath.Dir(f.CRAM), mnt, cacheSize)
}

// mountDirCmd mounts src at mnt with the warm index and a --cache-size.
func (b *bench) mountDirCmd(src, mnt, cache string) command {
	return b.cfs("mount", "-T", b.data.Ref, "--cache-dir", b.warmCache, "--cache-size", cache, "-@", b.th(), "--level", b.lv(), src, mnt)
}

// throughMount mounts the flavour's directory (warm index, cold block
// cache), times read(mnt), and reports the mount process's peak RSS.
func (b *bench) throughMount(f flavour, read func(mnt string) command) func(ctx context.Context) (sample, error) {
	return func(ctx context.Context) (sample, error) {
		return b.withMount(ctx, filepath.Dir(f.CRAM), func(mnt string) (sample, error) { return timeRun(ctx, read(mnt)) })
	}
}

// withMount mounts src (warm index, cold block cache, --cache-size
// cacheSize), runs measure(mnt), and returns its sample with the mount
// process's peak RSS.
func (b *bench) withMount(ctx context.Context, src string, measure func(mnt string) (sample, error)) (sample, error) {
	mnt, err := os.MkdirTemp("/tmp", "cramfs-bench-mnt-")
	if err != nil {
		return sample{}, err
	}
	defer os.Remove(mnt)
	m, err := startMount(ctx, b.cfs("unmount", mnt), b.mountDirCmd(src, mnt, cacheSize), mnt)
	defer m.close()
	if err != nil {
		return sample{}, err
	}
	s, err := measure(mnt)
	if err != nil {
		return sample{}, err
	}
	rss, err := m.stop()
	if err != nil {
		return sample{}, err
	}
	s.RSSKB = rss
	return s, nil
}

// seqReadCase reads the whole BAM through the mount with samtools view -c,
// per samtools against the pipe a user would otherwise write (view -u of
// the CRAM into view -c, both reading every record) and, labelled count
// only, against view -c of the CRAM, which samtools >= 1.17 answers
// without decoding most fields.
func (b *bench) seqReadCase(f flavour, id, variant string) benchCase {
	k := benchCase{ID: id, Group: "sequential read", Flavour: f.Name, Variant: variant,
		Setup: b.warmIndex(f), CheckOut: "record count"}
	for _, t := range b.tools {
		readBAM := func(mnt string) command {
			return b.samWith(t, "view", "-@", b.th(), "-c", filepath.Join(mnt, f.Stem()+".bam"))
		}
		dec := b.samWith(t, "view", "-@", b.th(), "-u", "-T", b.data.Ref, f.CRAM)
		count := b.samWith(t, "view", "-@", b.th(), "-c", "-")
		direct := b.samWith(t, "view", "-@", b.th(), "-c", "-T", b.data.Ref, f.CRAM)
		c := k.add(side{Label: "mount + view -c", Desc: b.mountCmd(f, "MNT").String() + "; " + readBAM("MNT").String(),
			Run: b.throughMount(f, readBAM)})
		p := k.add(side{Label: "view -u CRAM | view -c -", Desc: dec.String() + " | " + count.String(), Run: pipeRunner(dec, count)})
		d := k.add(side{Label: "view -c CRAM", Desc: direct.String(), Run: runner(direct)})
		k.Pairs = append(k.Pairs,
			pair{Cramfs: c, Baseline: p, Tool: t.Version, Measure: measureRecords},
			pair{Cramfs: c, Baseline: d, Tool: t.Version, Measure: measureCount})
	}
	return k
}

// regionCase queries b.regions through the mount (the synthesized .bai)
// and on the CRAM with its .crai, per samtools: with records, both write
// the records as uncompressed BAM to /dev/null (every field decoded),
// else both only count them (view -c).
func (b *bench) regionCase(f flavour, records bool) benchCase {
	id, measure, out, label := "regions/"+f.ID, measureRecords, []string{"-u", "-o", "/dev/null"}, "view -u"
	if !records {
		id, measure, out, label = "regions-count/"+f.ID, measureCount, []string{"-c"}, "view -c"
	}
	k := benchCase{ID: id, Group: "region queries", Flavour: f.Name, Variant: fmt.Sprintf("%d regions", len(b.regions)),
		Setup: b.warmIndex(f)}
	if !records {
		k.CheckOut = "region record count"
	}
	for _, t := range b.tools {
		view := func(file string, extra ...string) command {
			args := append(append(append([]string{"view", "-@", b.th()}, out...), extra...), file)
			return b.samWith(t, append(args, b.regions...)...)
		}
		readBAM := func(mnt string) command { return view(filepath.Join(mnt, f.Stem()+".bam")) }
		direct := view(f.CRAM, "-T", b.data.Ref)
		c := k.add(side{Label: "mount + .bai, " + label, Desc: b.mountCmd(f, "MNT").String() + "; " + readBAM("MNT").String(),
			Run: b.throughMount(f, readBAM)})
		d := k.add(side{Label: "CRAM + .crai, " + label, Desc: direct.String(), Run: runner(direct)})
		k.Pairs = append(k.Pairs, pair{Cramfs: c, Baseline: d, Tool: t.Version, Measure: measure})
	}
	return k
}

func runner(c command) func(ctx context.Context) (sample, error) {
	return func(ctx context.Context) (sample, error) { return timeRun(ctx, c) }
}

func pipeRunner(a, c command) func(ctx context.Context) (sample, error) {
	return func(ctx context.Context) (sample, error) { return timePipe(ctx, a, c) }
}

// removeAll removes the files that exist of paths.
func removeAll(paths []string) error {
	for _, p := range paths {
		if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	return nil
}
