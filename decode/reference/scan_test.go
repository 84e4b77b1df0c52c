package reference

import (
	"bytes"
	"crypto/md5"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// nRuns is Scan's runs computed from the uppercased bases of [start,...).
func nRuns(bases []byte, start int64) [][2]int64 {
	var out [][2]int64
	for i := 0; i < len(bases); i++ {
		if bases[i] != 'N' {
			continue
		}
		j := i
		for j < len(bases) && bases[j] == 'N' {
			j++
		}
		out = append(out, [2]int64{start + int64(i), start + int64(j)})
		i = j
	}
	return out
}

// checkScan compares Scan of [start,end) with Bases of the same range:
// the same MD5 of the uppercased bases and the runs of 'N' in them.
func checkScan(t *testing.T, c *Contig, start, end int64) {
	t.Helper()
	want, werr := c.Bases(nil, start, end)
	for _, digest := range []bool{true, false} {
		h := md5.New()
		if !digest {
			h = nil
		}
		// A run before the range must be kept, and extended only when
		// the range's first run continues it.
		prior := [][2]int64{{start - 1, start}}
		got, err := c.Scan(start, end, h, slices.Clone(prior))
		if (err == nil) != (werr == nil) {
			t.Fatalf("%s [%d,%d): Scan error %v, Bases error %v", c.name, start, end, err, werr)
		}
		if err != nil {
			continue
		}
		wantRuns := append(slices.Clone(prior), nRuns(want, start)...)
		if len(wantRuns) > 1 && wantRuns[1][0] == start {
			wantRuns = append([][2]int64{{start - 1, wantRuns[1][1]}}, wantRuns[2:]...)
		}
		if !slices.Equal(got, wantRuns) {
			t.Fatalf("%s [%d,%d) digest %v: runs %v, want %v (bases %q)", c.name, start, end, digest, got, wantRuns, want)
		}
		if digest {
			if g, w := h.Sum(nil), md5.Sum(want); !bytes.Equal(g, w[:]) {
				t.Fatalf("%s [%d,%d): MD5 %x, want %x", c.name, start, end, g, w)
			}
		}
	}
}

// TestScanMatchesBases checks Scan against Bases on FASTA files of mixed
// case, with runs of 'N' and 'n' across line ends, short last lines and
// irregular line lengths, over random ranges.
func TestScanMatchesBases(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ACGTNacgtnRY*-")
	for file := range 40 {
		var fa bytes.Buffer
		for k := range 3 {
			fmt.Fprintf(&fa, ">c%d\n", k)
			width := 1 + rng.IntN(70)
			n := rng.IntN(3 * scanChunk / 2)
			if file%4 != 0 {
				n = rng.IntN(500)
			}
			for i := 0; i < n; i++ {
				b := alphabet[rng.IntN(len(alphabet))]
				if rng.IntN(8) == 0 { // runs
					b = "Nn"[rng.IntN(2)]
				}
				fa.WriteByte(b)
				if (i+1)%width == 0 || i == n-1 {
					fa.WriteByte('\n')
				}
			}
		}
		for _, c := range fastaContigs(t, fa.Bytes()) {
			checkScanRanges(t, rng, c, 20)
			checkScan(t, c, 0, c.length+1) // out of range
		}
	}
	// One line holding a whole sequence, as an M5-named file has it.
	seq := bytes.Repeat([]byte("ACGTnNNacgt"), scanChunk/5)
	c := &Contig{name: "m5", length: int64(len(seq)), runs: []run{{lineBases: int64(len(seq)), lineWidth: int64(len(seq)), n: int64(len(seq))}},
		m: &mapping{path: "m5", data: seq}}
	checkScan(t, c, 0, c.length)
	checkScan(t, c, 5, c.length-3)
}

// TestScanHashesInPlace is TestScanMatchesBases for references that are
// uppercase but for a few soft-masked stretches: Scan hashes their lines
// from the mapping, chunk by chunk, and gathers only the chunks that may
// hold a lowercase letter, so that both ways, and the changes from one to
// the other, meet runs of N, line ends and the ranges' ends.
func TestScanHashesInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for file := range 12 {
		var fa bytes.Buffer
		for k := range 2 {
			fmt.Fprintf(&fa, ">c%d\n", k)
			width := 1 + rng.IntN(90)
			n := 1 + rng.IntN(6*rawChunk)
			lower := 0 // bases left in a soft-masked stretch
			for i := 0; i < n; i++ {
				if file%3 != 0 && rng.IntN(4*rawChunk) == 0 {
					lower = rng.IntN(rawChunk)
				}
				b := "ACGTRY"[rng.IntN(6)]
				if rng.IntN(200) == 0 || i >= rawChunk && i < rawChunk+70 {
					b = 'N' // short runs, and one across the first chunk's end
				}
				if lower > 0 {
					b |= 0x20
					lower--
				}
				fa.WriteByte(b)
				if (i+1)%width == 0 || i == n-1 {
					fa.WriteByte('\n')
				}
			}
		}
		for _, c := range fastaContigs(t, fa.Bytes()) {
			checkScanRanges(t, rng, c, 30)
		}
	}
}

// TestMayLower checks mayLower on every byte at every place of a chunk:
// true for each lowercase letter, false for uppercase letters and line
// ends alone.
func TestMayLower(t *testing.T) {
	base := bytes.Repeat([]byte("ACGTN\r\n"), 10)
	if mayLower(base) {
		t.Fatalf("mayLower(%q) = true", base)
	}
	for c := 'a'; c <= 'z'; c++ {
		for i := range base {
			b := slices.Clone(base)
			b[i] = byte(c)
			if !mayLower(b) {
				t.Fatalf("mayLower misses %q at %d of %d", c, i, len(b))
			}
		}
	}
}

// fastaContigs returns the contigs of the FASTA fa, read from memory.
func fastaContigs(t *testing.T, fa []byte) []*Contig {
	t.Helper()
	entries, err := scanFasta(fa)
	if err != nil {
		t.Fatal(err)
	}
	m := &mapping{path: "test", data: fa}
	cs := make([]*Contig, len(entries))
	for i, e := range entries {
		cs[i] = &Contig{name: e.name, length: e.length, runs: e.runs, m: m}
	}
	return cs
}

// checkScanRanges checks Scan of c over the whole contig and over n
// random ranges of it.
func checkScanRanges(t *testing.T, rng *rand.Rand, c *Contig, n int) {
	t.Helper()
	checkScan(t, c, 0, c.length)
	for range n {
		a := rng.Int64N(c.length + 1)
		b := a + rng.Int64N(c.length-a+1)
		checkScan(t, c, a, b)
	}
}
