package bgzf

import (
	"bytes"
	stdflate "compress/flate"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/internal/bgzftest"
	"github.com/cramfs/cramfs/internal/corpus"
)

// realBAM returns the uncompressed BAM stream of the corpus' level-1.bam.
func realBAM(tb testing.TB) []byte {
	tb.Helper()
	file, err := os.ReadFile(filepath.Join(corpus.Dir(tb), "hts-specs/test/bam/passed/level-1.bam"))
	if err != nil {
		tb.Fatal(err)
	}
	data, err := bgzftest.DecompressAll(file)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// inputs returns test payloads: empty, small, exactly one block, block
// boundaries, incompressible random bytes and text.
func inputs() map[string][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 3*MaxBlockData+123)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	text := bytes.Repeat([]byte("@SQ\tSN:chr1\tLN:1000\nACGTTGCA\n"), 10000)
	return map[string][]byte{
		"one byte":   {42},
		"one block":  text[:MaxBlockData],
		"block+1":    text[:MaxBlockData+1],
		"text":       text,
		"random":     random,
		"zeros 200k": make([]byte, 200000),
	}
}

func TestRoundTrip(t *testing.T) {
	for name, src := range inputs() {
		for _, level := range []int{0, 1, 6, 9} {
			c, err := NewCompressor(level)
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.AppendBlocks(nil, src)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := c.AppendBlocks(nil, src)
			if !bytes.Equal(out, again) {
				t.Fatalf("%s level %d: output not deterministic", name, level)
			}
			// Block structure: one block per MaxBlockData bytes, each at
			// most MaxBlockSize, BSIZE consistent.
			nBlocks := 0
			for rest := out; len(rest) > 0; nBlocks++ {
				if len(rest) < 18 {
					t.Fatalf("%s level %d: %d trailing bytes", name, level, len(rest))
				}
				bsize := int(binary.LittleEndian.Uint16(rest[16:])) + 1
				if bsize > len(rest) || bsize > MaxBlockSize {
					t.Fatalf("%s level %d: BSIZE %d", name, level, bsize)
				}
				rest = rest[bsize:]
			}
			if want := (len(src) + MaxBlockData - 1) / MaxBlockData; nBlocks != want {
				t.Fatalf("%s level %d: %d blocks, want %d", name, level, nBlocks, want)
			}
			got, err := bgzftest.DecompressAll(out)
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("%s level %d: DecompressAll: %v (equal %v)", name, level, err, bytes.Equal(got, src))
			}
			// The standard gzip reader reads BGZF as multi-member gzip.
			zr, err := gzip.NewReader(bytes.NewReader(append(out, EOF...)))
			if err != nil {
				t.Fatal(err)
			}
			if std, err := io.ReadAll(zr); err != nil || !bytes.Equal(std, src) {
				t.Fatalf("%s level %d: compress/gzip: %v", name, level, err)
			}
		}
	}
}

func TestStoredFallback(t *testing.T) {
	src := inputs()["random"][:MaxBlockData]
	c, _ := NewCompressor(9)
	out, err := c.AppendBlocks(nil, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > MaxBlockSize {
		t.Fatalf("block of %d bytes", len(out))
	}
	if got, err := bgzftest.DecompressAll(out); err != nil || !bytes.Equal(got, src) {
		t.Fatal("round trip failed", err)
	}
}

func TestEOF(t *testing.T) {
	if got, err := bgzftest.DecompressAll([]byte(EOF)); err != nil || len(got) != 0 || len(EOF) != 28 {
		t.Fatalf("EOF block (%d bytes): %q %v", len(EOF), got, err)
	}
}

func TestInvalidLevel(t *testing.T) {
	if _, err := NewCompressor(10); !errors.Is(err, ErrLevel) {
		t.Errorf("level 10: %v", err)
	}
}

// TestSamtoolsReadsOurs checks that samtools accepts our BGZF and that we
// read samtools' BGZF.
func TestSamtoolsReadsOurs(t *testing.T) {
	st, err := exec.LookPath("samtools")
	if err != nil {
		corpus.Missing(t, "samtools: %v", err)
	}
	data := realBAM(t)
	dir := t.TempDir()
	for _, level := range []int{0, 1, 6} {
		c, err := NewCompressor(level)
		if err != nil {
			t.Fatal(err)
		}
		file, err := c.AppendBlocks(nil, data)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "x.bam")
		if err := os.WriteFile(p, append(file, EOF...), 0o644); err != nil {
			t.Fatal(err)
		}
		view := exec.Command(st, "view", "-u", "--no-PG", p)
		view.Env = corpus.NoRefEnv(t)
		out, err := view.Output()
		if err != nil {
			t.Fatalf("level %d: samtools view: %v", level, err)
		}
		got, err := bgzftest.DecompressAll(out)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("level %d: samtools round trip differs (%v)", level, err)
		}
		check := exec.Command(st, "quickcheck", p)
		check.Env = corpus.NoRefEnv(t)
		if err := check.Run(); err != nil {
			t.Fatalf("level %d: quickcheck: %v", level, err)
		}
	}
}

func BenchmarkAppendBlocks(b *testing.B) {
	data := realBAM(b)
	for _, level := range []int{0, 1, 6} {
		b.Run(levelName(level), func(b *testing.B) {
			c, err := NewCompressor(level)
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]byte, 0, len(data)+len(data)/10+1024)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.AppendBlocks(dst[:0], data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStdlibFlate compresses the same blocks with compress/flate, for
// comparison with BenchmarkAppendBlocks.
func BenchmarkStdlibFlate(b *testing.B) {
	data := realBAM(b)
	for _, level := range []int{1, 6} {
		b.Run(levelName(level), func(b *testing.B) {
			var out bytes.Buffer
			fw, _ := stdflate.NewWriter(&out, level)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				for p := data; len(p) > 0; {
					n := min(len(p), MaxBlockData)
					out.Reset()
					fw.Reset(&out)
					fw.Write(p[:n])
					fw.Close()
					p = p[n:]
				}
			}
		})
	}
}

func levelName(l int) string { return "level" + string(rune('0'+l)) }

// TestStoredBlocksGrowOnce checks that level 0 sizes its output up front:
// one allocation from an empty dst, none with enough capacity.
func TestStoredBlocksGrowOnce(t *testing.T) {
	c, err := NewCompressor(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, MaxBlockData, MaxBlockData + 1, 3*MaxBlockData + 7} {
		src := bytes.Repeat([]byte{'x'}, n)
		var out []byte
		allocs := testing.AllocsPerRun(5, func() {
			out, err = c.AppendBlocks(nil, src)
		})
		if err != nil {
			t.Fatal(err)
		}
		if allocs != 1 && !raceEnabled {
			t.Errorf("n=%d: %v allocations from an empty dst, want 1", n, allocs)
		}
		back, err := bgzftest.DecompressAll(out)
		if err != nil || !bytes.Equal(back, src) {
			t.Fatalf("n=%d: round trip: %v", n, err)
		}
		dst := make([]byte, 0, len(out))
		if allocs := testing.AllocsPerRun(5, func() { c.AppendBlocks(dst, src) }); allocs != 0 && !raceEnabled {
			t.Errorf("n=%d: %v allocations into a large enough dst", n, allocs)
		}
	}
}
