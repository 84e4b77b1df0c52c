package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cramfs/cramfs/decode"
)

// scalingFile is the projection of a 30× genome that writeOutputs writes
// beside BENCHMARKS.md, from the ×bigCopies rows (issue 32, item 5).
const scalingFile = "SCALING.md"

// The genome projected: a 30× human whole genome (GRCh38's primary
// assembly is about 3.1 Gbp).
const (
	genomeBases = 3.1e9
	genomeDepth = 30
)

// cramCounts are the records and bases of a CRAM, from its container
// headers, and the length of its reference sequences, from its header.
type cramCounts struct {
	Reads, Bases, RefLen int64
}

// depth is the mean depth of the file's bases over its references.
func (c cramCounts) depth() float64 { return float64(c.Bases) / float64(c.RefLen) }

// countCRAM reads path's container headers (no container is decoded).
func countCRAM(path string) (cramCounts, error) {
	f, err := os.Open(path)
	if err != nil {
		return cramCounts{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return cramCounts{}, err
	}
	cf, err := decode.Open(path, f, st.Size(), decode.OpenOptions{})
	if err != nil {
		return cramCounts{}, err
	}
	var c cramCounts
	for _, h := range cf.Containers {
		c.Reads += int64(h.NumRecords)
		c.Bases += h.Bases
	}
	for _, r := range cf.Refs {
		c.RefLen += r.Length
	}
	if c.Reads == 0 || c.Bases == 0 || c.RefLen == 0 {
		return cramCounts{}, fmt.Errorf("%s: %d records, %d bases, references of %d bp: nothing to project from", path, c.Reads, c.Bases, c.RefLen)
	}
	return c, nil
}

// scalePair is one measured row at 1× and at ×bigCopies, against one
// samtools command.
type scalePair struct {
	one, big result
}

// cramfs and samtools are the median seconds of each side at 1× and ×big.
func (p scalePair) cramfs() (one, big float64) {
	return median(secsOf(p.one.Cramfs)), median(secsOf(p.big.Cramfs))
}

func (p scalePair) samtools() (one, big float64) {
	return median(secsOf(p.one.Samtools)), median(secsOf(p.big.Samtools))
}

// scalingRows finds, among the rows against tool, the 1× and ×bigCopies
// rows of case base (e.g. "seq-read") of the 3.0 file with measure m.
func scalingRows(rs []result, tool, base, m string) (scalePair, error) {
	var p scalePair
	var haveOne, haveBig bool
	bigID := fmt.Sprintf("%s-x%d/v30", base, bigCopies)
	for _, r := range rs {
		if r.Tool != tool || r.Measure != m {
			continue
		}
		switch r.ID {
		case base + "/v30":
			p.one, haveOne = r, true
		case bigID:
			p.big, haveBig = r, true
		}
	}
	if !haveOne || !haveBig {
		return p, fmt.Errorf("no %s rows of %s/v30 and %s against samtools %s", m, base, bigID, tool)
	}
	return p, nil
}

// scaling holds what the projection is computed from.
type scaling struct {
	tool     string
	one      cramCounts       // the 3.0 file; the ×bigCopies file holds bigCopies times its records
	scan     scalePair        // first access, samtools writing the BAM
	scanNull scalePair        // first access, samtools to /dev/null
	seq      scalePair        // sequential read, reading records
	regions  scalePair        // region queries, reading records
	rss      map[string]int64 // the cramfs side's peak RSS (KiB) per case id
	runs     []runInfo        // the runs of the rows used
	rows     []result         // all rows, for the load of each run
}

// factor is how many times the ×bigCopies file's bases the genome holds.
func (s scaling) factor() float64 {
	return genomeBases * genomeDepth / (float64(bigCopies) * float64(s.one.Bases))
}

// depthFactor is the genome's depth over the 3.0 file's.
func (s scaling) depthFactor() float64 { return genomeDepth / s.one.depth() }

// atDepth interpolates in depth between a 1× time and a ×bigCopies one,
// for region queries of the same extent.
func (s scaling) atDepth(one, big float64) float64 {
	return one + (big-one)*(s.depthFactor()-1)/float64(bigCopies-1)
}

// newScaling gathers the rows against tool that the projection needs;
// the caller sets one.
func newScaling(rs []result, tool string) (scaling, error) {
	s := scaling{tool: tool, rows: rs}
	var errs []error
	get := func(dst *scalePair, base, m string) {
		p, err := scalingRows(rs, tool, base, m)
		*dst = p
		errs = append(errs, err)
	}
	get(&s.scan, "first-access", measureScan)
	get(&s.scanNull, "first-access", measureScanNull)
	get(&s.seq, "seq-read", measureRecords)
	get(&s.regions, "regions", measureRecords)
	if err := errors.Join(errs...); err != nil {
		return s, err
	}
	var anchor []result
	for _, r := range rs {
		if r.Tool == tool {
			anchor = append(anchor, r)
		}
	}
	s.rss = caseRSS(anchor)
	for _, p := range []scalePair{s.scan, s.seq, s.regions} {
		for _, r := range []result{p.one, p.big} {
			if !slices.Contains(s.runs, r.Run) {
				s.runs = append(s.runs, r.Run)
			}
		}
	}
	return s, nil
}

// writeScalingFile writes OUT/SCALING.md from the rows against the newest
// samtools of rs, when they hold the 1× and ×bigCopies rows it needs;
// otherwise (a partial run, a run of other cases) it leaves the file as
// it is.
func writeScalingFile(out string, b *bench, rs []result) error {
	tools := toolsOf(rs)
	if len(tools) == 0 {
		return nil
	}
	i := slices.IndexFunc(b.data.Flavours, func(f flavour) bool { return f.ID == "v30" })
	if i < 0 {
		return nil
	}
	s, err := newScaling(rs, tools[0])
	if err != nil {
		return nil // rows missing: nothing to project from
	}
	if s.one, err = countCRAM(b.data.Flavours[i].CRAM); err != nil {
		return fmt.Errorf("%s: %w", scalingFile, err)
	}
	var md strings.Builder
	if err := writeScaling(&md, s); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, scalingFile), []byte(md.String()), 0o644)
}

// writeScaling writes the projection of s.
func writeScaling(w io.Writer, s scaling) error {
	var b strings.Builder
	big := float64(bigCopies)
	fmt.Fprintf(&b, "# A %d× genome, projected from the ×%d rows (issue 32, item 5)\n\n", genomeDepth, bigCopies)
	fmt.Fprintf(&b, "Written by cramfs-bench with [BENCHMARKS.md](BENCHMARKS.md), from its rows against samtools %s "+
		"(medians over the rounds); do not edit. The rows are of ", s.tool)
	for i, r := range s.runs {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s UTC, cramfs at %s, %s", r.Date, r.CramfsRev, loadSummary(s.rows, r))
	}
	fmt.Fprintf(&b, ". The earlier serial-part projections to more cores are in [archive/SCALING.md](archive/SCALING.md).\n\n")

	fmt.Fprintf(&b, "## Assumptions\n\n")
	fmt.Fprintf(&b, "- The 3.0 file holds %s reads and %s bases over %s bp of reference (its container headers and @SQ lines): "+
		"depth %.1f×, reads of %.0f bases on average. The ×%d file is %d copies of it merged in coordinate order: "+
		"%s reads, depth %.0f×.\n",
		thousands(s.one.Reads), thousands(s.one.Bases), thousands(s.one.RefLen), s.one.depth(),
		float64(s.one.Bases)/float64(s.one.Reads), bigCopies, bigCopies, thousands(bigCopies*s.one.Reads), big*s.one.depth())
	fmt.Fprintf(&b, "- A %d× human genome: %.1f Gbp at depth %d, %.0f Gbp of reads, about %.0fM reads of that length: "+
		"**%.1f times the ×%d file**. Per-base costs are taken as measured at ×%d, the larger file, not at 1×.\n",
		genomeDepth, genomeBases/1e9, genomeDepth, genomeBases*genomeDepth/1e9,
		s.genomeReads()/1e6, s.factor(), bigCopies, bigCopies)
	fmt.Fprintf(&b, "- A region query of the ×%d file reads %d times the records of the same region in the 1× file. "+
		"The genome's depth is %.1f times the 3.0 file's, so its region queries of the same extent are interpolated "+
		"in depth between the 1× and the ×%d rows.\n", bigCopies, bigCopies, s.depthFactor(), bigCopies)
	fmt.Fprintf(&b, "- Level 0 (stored BGZF blocks), `-@ 2`, `--cache-size %dM`, one reader.\n", cacheBudgetMiB)
	fmt.Fprintf(&b, "- The ×%d file's copies are identical reads sorted together, which compress away: samtools' decoding of it "+
		"is cheaper per read than of a real file %d times as large, while the BAM cramfs serves is the same size whatever the CRAM "+
		"compresses to. samtools' projections below are therefore low, and cramfs' margins lower bounds.\n\n", bigCopies, bigCopies)

	fmt.Fprintf(&b, "## Measured scaling, 1× to ×%d\n\n", bigCopies)
	fmt.Fprintf(&b, "| row | cramfs 1× | cramfs ×%d | ×%d / (%d × 1×) | samtools 1× | samtools ×%d | ×%d / (%d × 1×) |\n",
		bigCopies, bigCopies, bigCopies, bigCopies, bigCopies, bigCopies)
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|\n")
	for _, row := range []struct {
		name string
		p    scalePair
	}{
		{"first access (layout scan) vs view -u", s.scan},
		{"first access (layout scan) vs view -u -o /dev/null", s.scanNull},
		{"sequential read, mount + view -c, vs the pipe", s.seq},
		{fmt.Sprintf("%d regions, view -u", s.regionQueries()), s.regions},
	} {
		c1, c16 := row.p.cramfs()
		s1, s16 := row.p.samtools()
		fmt.Fprintf(&b, "| %s | %s s | %s s | %.2f | %s s | %s s | %.2f |\n", row.name,
			fmtSecs(c1), fmtSecs(c16), c16/(big*c1), fmtSecs(s1), fmtSecs(s16), s16/(big*s1))
	}
	b.WriteString("\n")
	s.writeRSS(&b)

	fmt.Fprintf(&b, "## Projection\n\n")
	fmt.Fprintf(&b, "| path | cramfs, projected | samtools %s, projected | from |\n|---|---:|---:|---|\n", s.tool)
	f := s.factor()
	_, c16 := s.scan.cramfs()
	_, n16 := s.scanNull.samtools()
	fmt.Fprintf(&b, "| first access (scan once; later mounts read the layout index) | %s × %.1f ≈ **%s** | view -u -o /dev/null: %s × %.1f ≈ %s | ×%d rows × %.1f |\n",
		fmtSecs(c16), f, duration(c16*f), fmtSecs(n16), f, duration(n16*f), bigCopies, f)
	_, c16 = s.seq.cramfs()
	_, p16 := s.seq.samtools()
	fmt.Fprintf(&b, "| a whole sequential read through the mount | %s × %.1f ≈ **%s** | the pipe: %s × %.1f ≈ %s | ×%d rows × %.1f |\n",
		fmtSecs(c16), f, duration(c16*f), fmtSecs(p16), f, duration(p16*f), bigCopies, f)
	c1, c16 := s.regions.cramfs()
	s1, s16 := s.regions.samtools()
	fmt.Fprintf(&b, "| %d regions of the benchmark's extent | %s + (%s − %s) × (%.1f − 1)/(%d − 1) ≈ **%s s** | %s s | interpolated in depth between 1× and ×%d |\n\n",
		s.regionQueries(), fmtSecs(c1), fmtSecs(c16), fmtSecs(c1), s.depthFactor(), bigCopies, fmtSecs(s.atDepth(c1, c16)),
		fmtSecs(s.atDepth(s1, s16)), bigCopies)
	fmt.Fprintf(&b, "The projection is of time on this machine's two cores; it is a projection, not a measurement of a %.0fM-read file, "+
		"which this disk and time do not allow. The causes of the ×%d rows' unmet targets are in [CAUSES.md](CAUSES.md).\n",
		s.genomeReads()/1e6, bigCopies)
	_, err := io.WriteString(w, b.String())
	return err
}

// regionQueries is the number of region queries of the region rows, as
// their variant says it ("20 regions").
func (s scaling) regionQueries() int {
	var n int
	fmt.Sscanf(s.regions.one.Variant, "%d regions", &n)
	return n
}

// genomeReads is the number of reads of the genome, at the 3.0 file's
// mean read length.
func (s scaling) genomeReads() float64 {
	return genomeBases * genomeDepth * float64(s.one.Reads) / float64(s.one.Bases)
}

// writeRSS writes the peak RSS of the mount and index rows at both sizes.
func (s scaling) writeRSS(b *strings.Builder) {
	fmt.Fprintf(b, "Peak RSS (the cramfs side's largest over the rounds; budget %d MiB + %d MiB):\n\n", cacheBudgetMiB, rssSlackMiB)
	fmt.Fprintf(b, "| row | 1× | ×%d | ×%d / 1× |\n|---|---:|---:|---:|\n", bigCopies, bigCopies)
	for _, row := range []struct {
		name string
		p    scalePair
	}{{"cramfs index (first access)", s.scan}, {"mount, sequential read", s.seq}, {"mount, region queries", s.regions}} {
		one, big := mib(s.rss[row.p.one.ID]), mib(s.rss[row.p.big.ID])
		fmt.Fprintf(b, "| %s | %.0f MiB | %.0f MiB | %.2f× |\n", row.name, one, big, big/one)
	}
	fmt.Fprintf(b, "\nWhat grows with a file is bounded by the budget, not by the file: its layout and index (one segment per "+
		"container: about %s containers of 10,000 reads for the genome, a few MB) are counted in the file states, which the budget "+
		"bounds (an eighth of the cache, at least 8 MiB; a larger layout is dropped and read again from its index file), and "+
		"region queries over deeper data keep more segments, which the cache bounds. The genome's RSS is therefore projected "+
		"within the budget + %d MiB, as at ×%d.\n\n",
		thousands(1000*int64(math.Round(s.genomeReads()/1e7))), rssSlackMiB, bigCopies)
}

// duration formats seconds as seconds and, from a minute, minutes too.
func duration(secs float64) string {
	if secs < 60 {
		return fmt.Sprintf("%.0f s", secs)
	}
	return fmt.Sprintf("%.0f s (%.1f min)", secs, secs/60)
}

// thousands formats n with commas between groups of three digits.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
