package csi

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/encode/bai"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/internal/bamtest"
	"github.com/cramfs/cramfs/internal/bgzftest"
	"github.com/cramfs/cramfs/internal/corpus"
)

const htslibTest = bamtest.HTSlibTest

var (
	samtools = bamtest.Samtools
	run      = bamtest.Run
)

// record is one BAM record with the virtual offsets bgzf_tell reports
// before and after reading it.
type record struct {
	tid        int32
	beg, end   int64
	unmapped   bool
	vbeg, vend uint64
}

// bamFile is a decompressed BAM with what the Builder needs.
type bamFile struct {
	nRef   int
	maxLen int64
	recs   []record
	final  uint64
}

// readBAM walks a BAM file block by block (bamtest.Read).
func readBAM(tb testing.TB, file []byte) bamFile {
	tb.Helper()
	b := bamtest.Read(tb, file)
	f := bamFile{nRef: b.NRef, maxLen: b.MaxLen, final: b.Final}
	for _, r := range b.Recs {
		f.recs = append(f.recs, record{r.RefID, r.Beg, r.End, r.Flags&4 != 0, r.VBeg, r.VEnd})
	}
	return f
}

// build runs a BAM file's records through a Builder.
func build(tb testing.TB, f bamFile) []byte {
	tb.Helper()
	b := NewBuilder(f.nRef, f.maxLen)
	for i, r := range f.recs {
		if err := b.Add(r.tid, r.beg, r.end, r.unmapped, r.vbeg, r.vend); err != nil {
			tb.Fatalf("record %d: %v", i, err)
		}
	}
	out, err := b.Finish(f.final)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// buildInPieces runs a BAM file's records through a Builder as the layout
// scan does: cut into pieces of about per records, each a bai.Fragment of
// offsets relative to the block its first record starts in, merged in
// order (its records added one by one if Merge refuses it).
func buildInPieces(tb testing.TB, f bamFile, per int, seed uint64) []byte {
	tb.Helper()
	b := NewBuilder(f.nRef, f.maxLen)
	rng := rand.New(rand.NewPCG(seed, uint64(per)))
	for start := 0; start < len(f.recs); {
		end := min(start+rng.IntN(2*per)+1, len(f.recs))
		piece := f.recs[start:end]
		shift := piece[0].vbeg &^ 0xffff
		frag := bai.NewFragment(b.Scheme())
		for _, r := range piece {
			if frag.Add(r.tid, r.beg, r.end, r.unmapped, r.vbeg-shift, r.vend-shift) != nil {
				break
			}
		}
		ok, err := b.Merge(frag, shift)
		if err != nil {
			tb.Fatalf("records %d..%d: %v", start, end, err)
		}
		for i := start; !ok && i < end; i++ {
			r := f.recs[i]
			if err := b.Add(r.tid, r.beg, r.end, r.unmapped, r.vbeg, r.vend); err != nil {
				tb.Fatalf("record %d: %v", i, err)
			}
		}
		start = end
	}
	out, err := b.Finish(f.final)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// writeSAM writes a SAM with the given @SQ lengths and n reads, a fraction
// of them long (deletions, skips) and unmapped-but-placed, plus unplaced
// reads; reads are placed up to the end of each reference, with a dense
// region at farStart on reference 0 when the reference reaches it.
func writeSAM(path string, refLens []int64, n int, farStart int64, seed uint64) error {
	rng := rand.New(rand.NewPCG(seed, 14))
	var sb strings.Builder
	sb.WriteString("@HD\tVN:1.6\tSO:unknown\n")
	for i, l := range refLens {
		fmt.Fprintf(&sb, "@SQ\tSN:r%d\tLN:%d\n", i, l)
	}
	for i := range n {
		ref := rng.IntN(len(refLens))
		if i%4 != 0 {
			ref = 0
		}
		l := refLens[ref]
		pos := rng.Int64N(max(l-20, 1)) + 1
		if ref == 0 && farStart > 0 && farStart < l-200_000 && rng.IntN(2) == 0 {
			pos = farStart + rng.Int64N(200_000)
		}
		cigar := "10M"
		switch rng.IntN(10) {
		case 0:
			cigar = fmt.Sprintf("5M%dD5M", rng.IntN(200_000))
		case 1:
			cigar = fmt.Sprintf("5M%dN5M", rng.IntN(5_000_000))
		case 2:
			cigar = "3S7M"
		}
		if pos+5_000_020 > l {
			cigar = "10M"
			pos = min(pos, max(l-10, 1))
		}
		flag := 0
		if rng.IntN(12) == 0 {
			flag, cigar = 4, "*"
		}
		fmt.Fprintf(&sb, "q%d\t%d\tr%d\t%d\t30\t%s\t*\t0\t0\tACGTACGTAC\t*\n", i, flag, ref, pos, cigar)
	}
	for i := range n / 40 {
		fmt.Fprintf(&sb, "u%d\t4\t*\t0\t0\t*\t*\t0\t0\tACGT\t*\n", i)
	}
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

// TestMatchesSamtoolsIndex compares our CSI with samtools index -c on
// BAMs sorted by samtools: identical once decompressed, and with the same
// BGZF block structure.
func TestMatchesSamtoolsIndex(t *testing.T) {
	st := samtools(t)
	dir := t.TempDir()
	type input struct {
		name  string
		sam   string
		args  []string
		depth int
	}
	var inputs []input
	for _, name := range []string{"ce#5b", "ce#1000", "ce#unmap1", "ce#unmap2", "index"} {
		inputs = append(inputs, input{name: name, sam: filepath.Join(htslibTest, name+".sam"), depth: -1})
	}
	synth := []struct {
		name    string
		refLens []int64
		n       int
		far     int64
		args    []string
		depth   int
	}{
		// A reference longer than 2^29, read beyond it: depth 6.
		{"long-l6", []int64{1_000_000_000, 5_000, 3_000_000}, 20000, 1<<29 + 5_000_000, nil, 6},
		{"long-l0", []int64{1_000_000_000, 5_000, 3_000_000}, 20000, 900_000_000, []string{"-l", "0"}, 6},
		{"bai-sized", []int64{200_000_000, 1_000, 5_000_000, 50_000}, 20000, 0, nil, 5},
		{"2^31-1", []int64{1<<31 - 1, 70_000}, 5000, 1<<31 - 1_000_000, nil, 6},
		{"depth0", []int64{16_128, 9_000}, 2000, 0, []string{"-l", "1"}, 0},
		{"depth1", []int64{16_129, 100_000}, 3000, 0, nil, 1},
		{"small", []int64{200_000}, 300, 0, []string{"-l", "1"}, 2},
	}
	for i, s := range synth {
		p := filepath.Join(dir, s.name+".sam")
		if err := writeSAM(p, s.refLens, s.n, s.far, uint64(i)); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, input{s.name, p, s.args, s.depth})
	}
	for _, in := range inputs {
		t.Run(in.name, func(t *testing.T) {
			if _, err := os.Stat(in.sam); err != nil {
				corpus.Missing(t, "%s: %v", in.sam, err)
			}
			bamPath := filepath.Join(dir, strings.ReplaceAll(in.name, "#", "_")+".bam")
			args := append([]string{"sort", "--no-PG", "-o", bamPath}, in.args...)
			run(t, st, append(args, in.sam)...)
			run(t, st, "index", "-c", bamPath)
			wantFile, err := os.ReadFile(bamPath + ".csi")
			if err != nil {
				t.Fatal(err)
			}
			file, err := os.ReadFile(bamPath)
			if err != nil {
				t.Fatal(err)
			}
			f := readBAM(t, file)
			gotFile := build(t, f)
			want, err := bgzftest.DecompressAll(wantFile)
			if err != nil {
				t.Fatalf("samtools' .csi: %v", err)
			}
			got, err := bgzftest.DecompressAll(gotFile)
			if err != nil {
				t.Fatalf("our .csi: %v", err)
			}
			idx, err := parseCSI(want)
			if err != nil {
				t.Fatalf("parsing samtools' CSI: %v", err)
			}
			if in.depth >= 0 && idx.depth != in.depth {
				t.Errorf("samtools chose depth %d, test expects %d", idx.depth, in.depth)
			}
			if in.depth >= 5 {
				if nb := len(idx.refs[0].bins); nb < 50 {
					t.Errorf("only %d bins on reference 0", nb)
				}
				if idx.noCoor == 0 {
					t.Error("no unplaced reads")
				}
				if slices.IsSortedFunc(idx.refs[0].bins, func(a, b parsedBin) int { return cmp.Compare(a.bin, b.bin) }) {
					t.Error("bins in sorted order: hash order not exercised")
				}
				if len(f.recs) >= 10000 && len(want) <= bgzf.MaxBlockData {
					t.Errorf("CSI of %d bytes fits one block: block cutting not exercised", len(want))
				}
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("CSI differs from samtools index -c: got %d bytes, want %d; first difference at byte %d",
					len(got), len(want), firstDiff(got, want))
			}
			if gb, wb := blockSizes(t, gotFile), blockSizes(t, wantFile); !equalInts(gb, wb) {
				t.Errorf("BGZF blocks hold %v uncompressed bytes, samtools' %v", gb, wb)
			}
			for _, per := range []int{1, 300} {
				if merged := buildInPieces(t, f, per, uint64(len(f.recs))); !bytes.Equal(merged, gotFile) {
					t.Fatalf("merged from fragments of about %d records: differs from the CSI built record by record", per)
				}
			}
			if bytes.Equal(gotFile, wantFile) {
				t.Logf("compressed bytes identical too")
			}
		})
	}
}

// TestLongReference checks that the 1 Gbp fixture really places reads
// beyond the BAI limit and that their bins are deeper than BAI's.
func TestLongReference(t *testing.T) {
	st := samtools(t)
	dir := t.TempDir()
	sam := filepath.Join(dir, "long.sam")
	if err := writeSAM(sam, []int64{1_000_000_000}, 2000, 1<<29+1000, 9); err != nil {
		t.Fatal(err)
	}
	bamPath := filepath.Join(dir, "long.bam")
	run(t, st, "sort", "--no-PG", "-o", bamPath, sam)
	file, err := os.ReadFile(bamPath)
	if err != nil {
		t.Fatal(err)
	}
	f := readBAM(t, file)
	beyond := 0
	for _, r := range f.recs {
		if r.beg >= 1<<29 {
			beyond++
		}
	}
	if beyond < 100 {
		t.Fatalf("only %d reads beyond 2^29", beyond)
	}
	raw, err := bgzftest.DecompressAll(build(t, f))
	if err != nil {
		t.Fatal(err)
	}
	idx, err := parseCSI(raw)
	if err != nil {
		t.Fatal(err)
	}
	if idx.minShift != 14 || idx.depth != 6 {
		t.Fatalf("min_shift %d depth %d, want 14 and 6", idx.minShift, idx.depth)
	}
	// Every read beyond 2^29 must be reachable through its bin's ancestry
	// with a chunk covering it.
	for _, r := range f.recs {
		if r.tid != 0 || r.beg < 1<<29 {
			continue
		}
		if !covered(idx.refs[0], r, 6) {
			t.Fatalf("record %+v not covered", r)
		}
	}
}

func covered(ref parsedRef, r record, depth int) bool {
	for bin := bai.Reg2Bin(r.beg, max(r.end, r.beg+1), MinShift, depth); ; bin = (bin - 1) >> 3 { // the parent bin (CSIv1)
		for _, pb := range ref.bins {
			if pb.bin != bin {
				continue
			}
			for _, c := range pb.chunks {
				if c.Beg <= r.vbeg && r.vbeg < c.End {
					return true
				}
			}
		}
		if bin == 0 {
			return false
		}
	}
}

func blockSizes(tb testing.TB, file []byte) []int {
	tb.Helper()
	var sizes []int
	for off := 0; off < len(file); {
		data, n, err := bgzftest.DecodeBlock(nil, file[off:])
		if err != nil {
			tb.Fatalf("block at %d: %v", off, err)
		}
		sizes = append(sizes, len(data))
		off += n
	}
	return sizes
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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
	loff   uint64
	chunks []bai.Chunk
}

type parsedRef struct{ bins []parsedBin }

type parsedIndex struct {
	minShift, depth int
	refs            []parsedRef
	noCoor          uint64
}

// parseCSI reads an uncompressed CSI (CSIv1), checking its structure.
func parseCSI(b []byte) (*parsedIndex, error) {
	le := binary.LittleEndian
	p := 0
	need := func(n int) error {
		if n < 0 || len(b)-p < n {
			return fmt.Errorf("truncated at %d: need %d bytes", p, n)
		}
		return nil
	}
	u32 := func() uint32 { v := le.Uint32(b[p:]); p += 4; return v }
	u64 := func() uint64 { v := le.Uint64(b[p:]); p += 8; return v }
	if err := need(20); err != nil {
		return nil, err
	}
	if string(b[:4]) != "CSI\x01" {
		return nil, fmt.Errorf("bad magic %q", b[:4])
	}
	p = 4
	idx := &parsedIndex{minShift: int(u32()), depth: int(u32())}
	if lAux := int(u32()); lAux != 0 {
		return nil, fmt.Errorf("l_aux %d, want 0", lAux)
	}
	nRef := int(u32())
	if nRef > len(b)/4 {
		return nil, fmt.Errorf("n_ref %d too large", nRef)
	}
	for range nRef {
		var r parsedRef
		if err := need(4); err != nil {
			return nil, err
		}
		nBin := int(u32())
		for range nBin {
			if err := need(16); err != nil {
				return nil, err
			}
			pb := parsedBin{bin: u32(), loff: u64()}
			nc := int(u32())
			if err := need(16 * nc); err != nil {
				return nil, err
			}
			for range nc {
				pb.chunks = append(pb.chunks, bai.Chunk{Beg: u64(), End: u64()})
			}
			r.bins = append(r.bins, pb)
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
