package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// flavour is one CRAM file of the dataset.
type flavour struct {
	ID   string // short name used in case ids, e.g. "v31-archive"
	Name string // human name for the table, e.g. "3.1 archive"
	CRAM string // absolute path
}

// Stem is the file name without .cram: the mount shows Stem+".bam".
func (f flavour) Stem() string { return strings.TrimSuffix(filepath.Base(f.CRAM), ".cram") }

// HasCRAI reports whether the CRAM has its .crai next to it.
func (f flavour) HasCRAI() bool {
	st, err := os.Stat(f.CRAM + ".crai")
	return err == nil && st.Mode().IsRegular()
}

// benchFlavours are the CRAMs that /work/shared/bench/make-data.sh writes,
// in table order.
var benchFlavours = []flavour{
	{ID: "v30", Name: "3.0", CRAM: "sample.v30.cram"},
	{ID: "v31", Name: "3.1 normal", CRAM: "sample.v31.cram"},
	{ID: "v31-small", Name: "3.1 small", CRAM: "sample.v31-small.cram"},
	{ID: "v31-archive", Name: "3.1 archive", CRAM: "sample.v31-archive.cram"},
	{ID: "qbin", Name: "3.1 quality-binned", CRAM: "sample-qbin.v31.cram"},
	{ID: "longread", Name: "3.1 long reads", CRAM: "longread.v31.cram"},
}

// dataset is the directory under test and its reference.
type dataset struct {
	Dir      string
	Ref      string
	Flavours []flavour
	Bench    bool // the make-data.sh layout (else a plain directory of CRAMs)
}

// openDataset finds the CRAMs in dir: the make-data.sh files if dir has
// them all, else every *.cram in dir. ref defaults to dir/ref.fa.
func openDataset(dir, ref string) (*dataset, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if ref == "" {
		ref = filepath.Join(abs, "ref.fa")
	}
	if ref, err = filepath.Abs(ref); err != nil {
		return nil, err
	}
	if _, err := os.Stat(ref); err != nil {
		return nil, fmt.Errorf("reference: %w (pass -ref FASTA)", err)
	}
	d := &dataset{Dir: abs, Ref: ref, Bench: true}
	for _, f := range benchFlavours {
		f.CRAM = filepath.Join(abs, f.CRAM)
		if _, err := os.Stat(f.CRAM); err != nil {
			d.Bench = false
			break
		}
		d.Flavours = append(d.Flavours, f)
	}
	if d.Bench {
		return d, nil
	}
	d.Flavours = nil
	crams, err := filepath.Glob(filepath.Join(abs, "*.cram"))
	if err != nil {
		return nil, err
	}
	slices.Sort(crams)
	for _, c := range crams {
		stem := strings.TrimSuffix(filepath.Base(c), ".cram")
		d.Flavours = append(d.Flavours, flavour{ID: stem, Name: stem, CRAM: c})
	}
	if len(d.Flavours) == 0 {
		return nil, fmt.Errorf("%s: no CRAM files", abs)
	}
	return d, nil
}

// contig is one line of a FASTA index.
type contig struct {
	Name string
	Len  int64
}

// readFai reads the names and lengths of a .fai file.
func readFai(path string) ([]contig, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []contig
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		fields := strings.Split(sc.Text(), "\t")
		if len(fields) < 2 {
			continue
		}
		n, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%s:%d: bad length %q", path, line, fields[1])
		}
		out = append(out, contig{Name: fields[0], Len: n})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no contigs", path)
	}
	return out, nil
}

// regionWidths cycle over the regions: a gene, a locus, a large window.
var regionWidths = []int64{1_000, 10_000, 100_000}

// pickRegions returns n deterministic 1-based regions spread over the
// contigs: region k lies on contig k mod len(cs), at the middle of slot
// k/len(cs) of that contig's equal slots, with a width from regionWidths.
// Regions are clamped to their contig.
func pickRegions(cs []contig, n int) []string {
	if len(cs) == 0 || n <= 0 {
		return nil
	}
	perContig := int64((n + len(cs) - 1) / len(cs))
	out := make([]string, 0, n)
	for k := 0; k < n; k++ {
		c := cs[k%len(cs)]
		slot := int64(k / len(cs))
		mid := c.Len * (2*slot + 1) / (2 * perContig)
		w := regionWidths[k%len(regionWidths)]
		start := max(1, mid-w/2)
		end := min(c.Len, start+w-1)
		out = append(out, fmt.Sprintf("%s:%d-%d", c.Name, start, end))
	}
	return out
}
