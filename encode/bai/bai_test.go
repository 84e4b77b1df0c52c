package bai

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/internal/bamtest"
	"github.com/cramfs/cramfs/internal/corpus"
)

const htslibTest = bamtest.HTSlibTest

var (
	samtools = bamtest.Samtools
	run      = bamtest.Run
)

// bamRecord is one record of a decompressed BAM with its virtual offsets.
type bamRecord struct {
	tid        int32
	beg, end   int64
	flags      uint16
	vbeg, vend uint64
}

// walkBAM decompresses a BAM file and returns its reference count, its
// records with virtual offsets as bgzf_tell reports them, and the final
// virtual offset.
func walkBAM(tb testing.TB, file []byte) (nRef int, recs []bamRecord, final uint64) {
	tb.Helper()
	f := bamtest.Read(tb, file)
	for _, r := range f.Recs {
		recs = append(recs, bamRecord{r.RefID, r.Beg, r.End, r.Flags, r.VBeg, r.VEnd})
	}
	return f.NRef, recs, f.Final
}

// buildIndex builds our BAI for a BAM file.
func buildIndex(tb testing.TB, file []byte) []byte {
	tb.Helper()
	nRef, recs, final := walkBAM(tb, file)
	b := NewBuilder(nRef)
	for _, r := range recs {
		if err := b.Add(r.tid, r.beg, r.end, r.flags&4 != 0, r.vbeg, r.vend); err != nil {
			tb.Fatal(err)
		}
	}
	out, err := b.Finish(final)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// synthSAM writes a coordinate-sorted SAM exercising many bins: reads of
// varied spans (large deletions and skips reach upper-level bins), placed
// unmapped reads, a reference without reads, and unplaced reads at the end.
func synthSAM(path string, n int, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 7))
	var sb strings.Builder
	refLens := []int64{200_000_000, 1_000, 5_000_000, 50_000}
	sb.WriteString("@HD\tVN:1.6\tSO:coordinate\n")
	for i, l := range refLens {
		fmt.Fprintf(&sb, "@SQ\tSN:r%d\tLN:%d\n", i, l)
	}
	type rec struct {
		ref  int
		pos  int64
		line string
	}
	var recs []rec
	for i := 0; i < n; i++ {
		ref := []int{0, 0, 0, 2, 3}[rng.IntN(5)]
		pos := rng.Int64N(refLens[ref]-200) + 1
		if ref == 0 && rng.IntN(3) == 0 {
			pos = rng.Int64N(300_000) + 1 // dense region
		}
		seq := "ACGTACGTAC"
		cigar := "10M"
		switch rng.IntN(10) {
		case 0:
			cigar = fmt.Sprintf("5M%dD5M", rng.IntN(100_000))
		case 1:
			cigar = fmt.Sprintf("5M%dN5M", rng.IntN(3_000_000))
		case 2:
			cigar = "4S6M"
		}
		if pos > refLens[ref]-3_000_200 && (cigar[1] == 'M' && len(cigar) > 3) {
			cigar = "10M"
		}
		flag := 0
		if rng.IntN(15) == 0 {
			flag, cigar = 4, "*"
		}
		recs = append(recs, rec{ref, pos, fmt.Sprintf("q%d\t%d\tr%d\t%d\t30\t%s\t*\t0\t0\t%s\t*\n", i, flag, ref, pos, cigar, seq)})
	}
	sort.SliceStable(recs, func(i, j int) bool {
		if recs[i].ref != recs[j].ref {
			return recs[i].ref < recs[j].ref
		}
		return recs[i].pos < recs[j].pos
	})
	for _, r := range recs {
		sb.WriteString(r.line)
	}
	for i := 0; i < n/50; i++ {
		fmt.Fprintf(&sb, "u%d\t4\t*\t0\t0\t*\t*\t0\t0\tACGT\t*\n", i)
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

// TestMatchesSamtoolsIndex compares our BAI with samtools index, byte for
// byte, on coordinate-sorted BAMs made by samtools.
func TestMatchesSamtoolsIndex(t *testing.T) {
	st := samtools(t)
	dir := t.TempDir()
	type input struct {
		name string
		sam  string // SAM to sort into a BAM
		args []string
	}
	synth := filepath.Join(dir, "synth.sam")
	if err := synthSAM(synth, 30000, 1); err != nil {
		t.Fatal(err)
	}
	small := filepath.Join(dir, "small.sam")
	if err := synthSAM(small, 300, 2); err != nil {
		t.Fatal(err)
	}
	inputs := []input{
		{"ce5b", filepath.Join(htslibTest, "ce#5b.sam"), nil},
		{"ce1000", filepath.Join(htslibTest, "ce#1000.sam"), nil},
		{"unmap1", filepath.Join(htslibTest, "ce#unmap1.sam"), nil},
		{"unmap2", filepath.Join(htslibTest, "ce#unmap2.sam"), nil},
		{"index", filepath.Join(htslibTest, "index.sam"), nil},
		{"synth-l6", synth, nil},
		{"synth-l0", synth, []string{"-l", "0"}},
		{"synth-small", small, []string{"-l", "1"}},
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			if _, err := os.Stat(in.sam); err != nil {
				corpus.Missing(t, "%s: %v", in.sam, err)
			}
			bamPath := filepath.Join(dir, in.name+".bam")
			args := append([]string{"sort", "--no-PG", "-o", bamPath}, in.args...)
			run(t, st, append(args, in.sam)...)
			run(t, st, "index", bamPath)
			want, err := os.ReadFile(bamPath + ".bai")
			if err != nil {
				t.Fatal(err)
			}
			file, err := os.ReadFile(bamPath)
			if err != nil {
				t.Fatal(err)
			}
			got := buildIndex(t, file)
			idx, err := parseBAI(want)
			if err != nil {
				t.Fatalf("parsing samtools' BAI: %v", err)
			}
			if strings.HasPrefix(in.name, "synth-l") {
				// The large inputs must exercise hash order and merging.
				if nb := len(idx.refs[0].bins); nb < 100 {
					t.Errorf("only %d bins on reference 0", nb)
				}
				if slices.IsSortedFunc(idx.refs[0].bins, func(a, b parsedBin) int { return int(a.bin) - int(b.bin) }) {
					t.Errorf("bins in sorted order: hash order not exercised")
				}
				if idx.noCoor == 0 {
					t.Errorf("no unplaced reads")
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("BAI differs from samtools index: got %d bytes, want %d; first difference at byte %d",
					len(got), len(want), firstDiff(got, want))
			}
			// Merged from fragments, as the layout scan builds it: the
			// same bytes, however the records are cut.
			nRef, recs, final := walkBAM(t, file)
			rng := rand.New(rand.NewPCG(uint64(len(recs)), 3))
			for _, per := range []int{1, 7, 500, len(recs)} {
				cuts := randomCuts(rng, len(recs), per)
				merged, err := indexInPieces(nRef, minShift, nLevels, recs, cuts, final)
				if err != nil {
					t.Fatalf("merged in pieces of about %d records: %v", per, err)
				}
				if !bytes.Equal(merged, want) {
					t.Fatalf("merged in pieces of about %d records: differs from samtools index at byte %d", per, firstDiff(merged, want))
				}
			}
		})
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

type parsedBin struct {
	bin    uint32
	chunks []Chunk
}

type parsedRef struct {
	bins   []parsedBin
	linear []uint64
}

type parsedIndex struct {
	refs   []parsedRef
	noCoor uint64
}

// parseBAI reads a BAI (SAMv1 §5.2), checking its structure.
func parseBAI(b []byte) (*parsedIndex, error) {
	le := binary.LittleEndian
	p := 0
	need := func(n int) error {
		if len(b)-p < n {
			return fmt.Errorf("truncated at %d: need %d bytes", p, n)
		}
		return nil
	}
	u32 := func() uint32 { v := le.Uint32(b[p:]); p += 4; return v }
	u64 := func() uint64 { v := le.Uint64(b[p:]); p += 8; return v }
	if err := need(8); err != nil {
		return nil, err
	}
	if string(b[:4]) != "BAI\x01" {
		return nil, fmt.Errorf("bad magic %q", b[:4])
	}
	p = 4
	idx := &parsedIndex{}
	nRef := int(u32())
	for i := 0; i < nRef; i++ {
		var r parsedRef
		if err := need(4); err != nil {
			return nil, err
		}
		nBin := int(u32())
		for j := 0; j < nBin; j++ {
			if err := need(8); err != nil {
				return nil, err
			}
			pb := parsedBin{bin: u32()}
			nc := int(u32())
			if err := need(16 * nc); err != nil {
				return nil, err
			}
			for k := 0; k < nc; k++ {
				pb.chunks = append(pb.chunks, Chunk{u64(), u64()})
			}
			r.bins = append(r.bins, pb)
		}
		if err := need(4); err != nil {
			return nil, err
		}
		nl := int(u32())
		if err := need(8 * nl); err != nil {
			return nil, err
		}
		for k := 0; k < nl; k++ {
			r.linear = append(r.linear, u64())
		}
		idx.refs = append(idx.refs, r)
	}
	if err := need(8); err != nil {
		return nil, err
	}
	idx.noCoor = u64()
	if p != len(b) {
		return nil, fmt.Errorf("%d trailing bytes", len(b)-p)
	}
	return idx, nil
}
