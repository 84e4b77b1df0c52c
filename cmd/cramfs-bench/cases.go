package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// side is one of the commands a case compares; Run measures it once.
type side struct {
	Label string // short label for the table
	Desc  string // the command line, for the legend
	Run   func(ctx context.Context) (sample, error)
}

// benchCase is one cramfs command against one or more samtools
// baselines; each baseline gives one row of the table.
type benchCase struct {
	ID                      string // matched by -only
	Skip                    string // why the case cannot run here ("" if it can)
	Group, Flavour, Variant string
	Cramfs                  side
	Baselines               []side
	// Setup runs once before the first round (may be nil).
	Setup func(ctx context.Context) error
	// AfterRound runs after every round with that round's samples, cramfs
	// first, then each baseline (may be nil).
	AfterRound func(ctx context.Context, round int, s []sample) error
}

// bench holds what every case needs.
type bench struct {
	cramfs, samtools string
	data             *dataset
	threads          int
	serveLevel       int    // --level of index and mount; 0 compares with samtools -u
	scratch          string // temporary outputs, removed at the end
	warmCache        string // layout indexes built once by `cramfs index`
	regions          []string
}

// samEnv keeps htslib from looking for references anywhere but -T.
var samEnv = []string{"REF_PATH=/nonexistent", "REF_CACHE=/nonexistent"}

func (b *bench) sam(args ...string) command {
	return command{Path: b.samtools, Args: args, Env: samEnv}
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
			out = append(out, b.convertCase(f, lv.variant, lv.level, lv.samOpt))
		}
		out = append(out, b.firstAccessCase(f), b.seqReadCase(f), b.seqReadPlainCase(f))
		rc := b.regionCase(f)
		if !f.HasCRAI() {
			rc.Skip = f.CRAM + " has no .crai"
		}
		out = append(out, rc)
		if f.ID == "v30" {
			out = append(out, b.scaleCase(f))
			out = append(out, b.smallSliceCases(f)...)
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
	c := b.countCase(big, true)
	c.ID, c.Variant = fmt.Sprintf("seq-read-x4/%s", f.ID), "view -c, file ×4"
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
		write := command{Path: b.samtools, Env: samEnv}
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
	sOut := filepath.Join(b.scratch, "convert.samtools.bam")
	cCmd := b.cfs("convert", "-T", b.data.Ref, "-@", b.th(), "--level", strconv.Itoa(level), "-o", cOut, f.CRAM)
	sArgs := append([]string{"view", "-@", b.th(), "-T", b.data.Ref, "--no-PG"}, samOpt...)
	sCmd := b.sam(append(sArgs, "-o", sOut, f.CRAM)...)
	checked := false
	return benchCase{
		ID:    fmt.Sprintf("convert/%s/level%d", f.ID, level),
		Group: "convert", Flavour: f.Name, Variant: variant,
		Cramfs:    side{Label: "cramfs convert", Desc: cCmd.String(), Run: runner(cCmd)},
		Baselines: []side{{Label: "samtools view", Desc: sCmd.String(), Run: runner(sCmd)}},
		AfterRound: func(ctx context.Context, round int, _ []sample) error {
			defer os.Remove(cOut)
			defer os.Remove(sOut)
			if checked {
				return nil
			}
			checked = true
			return b.checkSame(ctx, cOut, sOut)
		},
	}
}

func (b *bench) firstAccessCase(f flavour) benchCase {
	sOut := filepath.Join(b.scratch, "first.samtools.bam")
	sCmd := b.sam(append(append([]string{"view", "-@", b.th(), "-T", b.data.Ref, "--no-PG"}, b.samServe()...), "-o", sOut, f.CRAM)...)
	desc := b.cfs("index", "-T", b.data.Ref, "-@", b.th(), "--level", b.lv(), "--cache-dir", "FRESH_DIR", f.CRAM).String()
	index := func(ctx context.Context) (sample, error) {
		dir, err := os.MkdirTemp(b.scratch, "fresh-cache-")
		if err != nil {
			return sample{}, err
		}
		defer os.RemoveAll(dir)
		return timeRun(ctx, b.cfs("index", "-T", b.data.Ref, "-@", b.th(), "--level", b.lv(), "--cache-dir", dir, f.CRAM))
	}
	return benchCase{
		ID:    fmt.Sprintf("first-access/%s", f.ID),
		Group: "first access", Flavour: f.Name, Variant: "layout scan",
		Cramfs:    side{Label: "cramfs index", Desc: desc, Run: index},
		Baselines: []side{{Label: "samtools view " + strings.Join(b.samServe(), " "), Desc: sCmd.String(), Run: runner(sCmd)}},
		AfterRound: func(context.Context, int, []sample) error {
			return removeIfExists(sOut)
		},
	}
}

// warmIndex builds the persisted layout index the mount cases use.
func (b *bench) warmIndex(f flavour) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		_, err := timeRun(ctx, b.cfs("index", "-T", b.data.Ref, "-@", b.th(), "--level", b.lv(), "--cache-dir", b.warmCache, f.CRAM))
		return err
	}
}

func (b *bench) mountCmd(f flavour, mnt string) command {
	return b.cfs("mount", "-T", b.data.Ref, "--cache-dir", b.warmCache, "-@", b.th(), "--level", b.lv(), filepath.Dir(f.CRAM), mnt)
}

// throughMount mounts the flavour's directory (warm index, cold block
// cache), times read(mnt), and reports the mount process's peak RSS.
func (b *bench) throughMount(f flavour, read func(mnt string) command) func(ctx context.Context) (sample, error) {
	return func(ctx context.Context) (sample, error) {
		mnt, err := os.MkdirTemp("/tmp", "cramfs-bench-mnt-")
		if err != nil {
			return sample{}, err
		}
		defer os.Remove(mnt)
		m, err := startMount(ctx, b.cramfs, b.mountCmd(f, mnt), mnt)
		defer m.close()
		if err != nil {
			return sample{}, err
		}
		s, err := timeRun(ctx, read(mnt))
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
}

// seqReadCase is the sequential read with -@ on both sides, and against
// converting with samtools then counting the BAM.
func (b *bench) seqReadCase(f flavour) benchCase {
	c := b.countCase(f, true)
	c.ID, c.Variant = fmt.Sprintf("seq-read/%s", f.ID), "view -c"
	tmp := filepath.Join(b.scratch, "seq.samtools.bam")
	conv := b.sam("view", "-@", b.th(), "-T", b.data.Ref, "-b", "-o", tmp, f.CRAM)
	count := b.sam("view", "-@", b.th(), "-c", tmp)
	c.Baselines = append(c.Baselines, side{Label: "view -b CRAM + view -c BAM", Desc: conv.String() + " && " + count.String(),
		Run: func(ctx context.Context) (sample, error) {
			defer os.Remove(tmp)
			return timeSeq(ctx, conv, count)
		}})
	return c
}

// countCase is samtools view -c of the whole BAM through the mount
// against view -c of the CRAM; with threads, both samtools get -@.
func (b *bench) countCase(f flavour, threads bool) benchCase {
	view := func(args ...string) command {
		if threads {
			args = append([]string{"view", "-@", b.th()}, args...)
		} else {
			args = append([]string{"view"}, args...)
		}
		return b.sam(args...)
	}
	readBAM := func(mnt string) command { return view("-c", filepath.Join(mnt, f.Stem()+".bam")) }
	direct := view("-c", "-T", b.data.Ref, f.CRAM)
	return benchCase{
		Group: "sequential read", Flavour: f.Name,
		Setup: b.warmIndex(f),
		Cramfs: side{Label: "mount + view -c", Desc: b.mountCmd(f, "MNT").String() + "; " + readBAM("MNT").String(),
			Run: b.throughMount(f, readBAM)},
		Baselines:  []side{{Label: "view -c CRAM", Desc: direct.String(), Run: runner(direct)}},
		AfterRound: sameOutputs("record count"),
	}
}

// seqReadPlainCase is the sequential read with samtools' default of no
// extra threads on both sides, the command as a user types it: the mount
// still decodes with its own workers, samtools on the CRAM with one thread.
func (b *bench) seqReadPlainCase(f flavour) benchCase {
	c := b.countCase(f, false)
	c.ID, c.Variant = fmt.Sprintf("seq-read-plain/%s", f.ID), "view -c, no -@"
	return c
}

func (b *bench) regionCase(f flavour) benchCase {
	readBAM := func(mnt string) command {
		args := append([]string{"view", "-@", b.th(), "-c", filepath.Join(mnt, f.Stem()+".bam")}, b.regions...)
		return b.sam(args...)
	}
	direct := b.sam(append([]string{"view", "-@", b.th(), "-c", "-T", b.data.Ref, f.CRAM}, b.regions...)...)
	return benchCase{
		ID:    fmt.Sprintf("regions/%s", f.ID),
		Group: "region queries", Flavour: f.Name, Variant: fmt.Sprintf("%d regions", len(b.regions)),
		Setup: b.warmIndex(f),
		Cramfs: side{Label: "mount + .bai", Desc: b.mountCmd(f, "MNT").String() + "; " + readBAM("MNT").String(),
			Run: b.throughMount(f, readBAM)},
		Baselines:  []side{{Label: "CRAM + .crai", Desc: direct.String(), Run: runner(direct)}},
		AfterRound: sameOutputs("region record count"),
	}
}

func runner(c command) func(ctx context.Context) (sample, error) {
	return func(ctx context.Context) (sample, error) { return timeRun(ctx, c) }
}

// sameOutputs fails when the sides of a round printed different results.
func sameOutputs(what string) func(context.Context, int, []sample) error {
	return func(_ context.Context, round int, s []sample) error {
		for _, x := range s[1:] {
			if x.Out != s[0].Out {
				return fmt.Errorf("round %d: %s differs: cramfs %q, samtools %q", round+1, what, s[0].Out, x.Out)
			}
		}
		return nil
	}
}

func removeIfExists(p string) error {
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}
