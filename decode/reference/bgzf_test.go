package reference

import (
	"bytes"
	"compress/gzip"
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/cramfs/cramfs/encode/bgzf"
)

// writeBGZF writes text to path compressed as BGZF blocks of at most
// blockData bytes each, with the EOF block, and path.gzi as samtools faidx
// writes it; with fai, path.fai too, indexing text.
func writeBGZF(t testing.TB, path string, text []byte, blockData int, fai bool) {
	t.Helper()
	c, err := bgzf.NewCompressor(6)
	if err != nil {
		t.Fatal(err)
	}
	var gz, gzi []byte
	gzi = binary.LittleEndian.AppendUint64(gzi, 0)
	n := uint64(0)
	for off := 0; off < len(text); off += blockData {
		if off > 0 {
			gzi = binary.LittleEndian.AppendUint64(gzi, uint64(len(gz)))
			gzi = binary.LittleEndian.AppendUint64(gzi, uint64(off))
			n++
		}
		if gz, err = c.AppendBlocks(gz, text[off:min(off+blockData, len(text))]); err != nil {
			t.Fatal(err)
		}
	}
	binary.LittleEndian.PutUint64(gzi, n)
	gz = append(gz, bgzf.EOF...)
	write(t, path, string(gz))
	write(t, path+".gzi", string(gzi))
	if fai {
		write(t, path+".fai", faiOf(t, text))
	}
}

// faiOf is the .fai index samtools faidx writes for the regular FASTA text.
func faiOf(t testing.TB, text []byte) string {
	t.Helper()
	entries, err := scanFasta(text)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		if len(e.runs) > 1 {
			t.Fatalf("%s: %d runs; faiOf wants a regular FASTA", e.name, len(e.runs))
		}
		var r run // an empty contig's
		if len(e.runs) == 1 {
			r = e.runs[0]
		}
		fmt.Fprintf(&b, "%s\t%d\t%d\t%d\t%d\n", e.name, e.length, r.off, r.lineBases, r.lineWidth)
	}
	return b.String()
}

// regularFasta is a FASTA of contigs of the given lengths, 60 bases a
// line, of random bases, lowercase and N runs included.
func regularFasta(seed uint64, lengths ...int) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	for i, n := range lengths {
		fmt.Fprintf(&b, ">c%d description\n", i)
		for j := 0; j < n; j++ {
			switch {
			case j%1000 < 30:
				b.WriteByte('N')
			case j%777 < 50:
				b.WriteByte("acgtn"[rng.IntN(5)])
			default:
				b.WriteByte("ACGT"[rng.IntN(4)])
			}
			if j%60 == 59 || j == n-1 {
				b.WriteByte('\n')
			}
		}
	}
	return b.Bytes()
}

// TestBGZFMatchesPlain reads the same FASTA plain and bgzip-compressed
// (blocks that end mid-line, and samtools' full blocks) and checks that
// every way of reading bases gives the same: Bases, Scan with and without
// a digest, and MD5.
func TestBGZFMatchesPlain(t *testing.T) {
	text := regularFasta(1, 100000, 61, 0, 150001)
	dir := t.TempDir()
	plain := write(t, filepath.Join(dir, "r.fa"), string(text))
	write(t, plain+".fai", faiOf(t, text))
	for _, blockData := range []int{1000, bgzf.MaxBlockData} {
		t.Run(fmt.Sprint(blockData), func(t *testing.T) {
			gz := filepath.Join(dir, fmt.Sprintf("r%d.fa.gz", blockData))
			writeBGZF(t, gz, text, blockData, true)
			p, z := open(t, []string{plain}, Options{}), open(t, []string{gz}, Options{})
			pc, zc := p.Contigs(), z.Contigs()
			if len(pc) != len(zc) {
				t.Fatalf("%d contigs plain, %d compressed", len(pc), len(zc))
			}
			rng := rand.New(rand.NewPCG(2, 2))
			for i, c := range zc {
				if c.Name() != pc[i].Name() || c.Len() != pc[i].Len() || c.MD5() != pc[i].MD5() {
					t.Fatalf("contig %d: %s of %d bases, MD5 %s; plain %s of %d, MD5 %s", i, c.Name(), c.Len(), c.MD5(), pc[i].Name(), pc[i].Len(), pc[i].MD5())
				}
				if o := c.Origin(); o != (Origin{gz, ViaFasta}) {
					t.Errorf("origin %v, want the -T file %s", o, gz)
				}
				for range 200 {
					start := rng.Int64N(c.Len() + 1)
					end := start + rng.Int64N(min(c.Len()-start, 5000)+1)
					compareRange(t, pc[i], c, start, end)
				}
			}
		})
	}
}

// compareRange checks that z reads [start,end) as p does.
func compareRange(t *testing.T, p, z *Contig, start, end int64) {
	t.Helper()
	want, err := p.Bases(nil, start, end)
	if err != nil {
		t.Fatal(err)
	}
	got, err := z.Bases(nil, start, end)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s [%d,%d): %q, %v; plain %q", z.Name(), start, end, got, err, want)
	}
	wantRuns, err := p.Scan(start, end, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := md5.New()
	gotRuns, err := z.Scan(start, end, h, nil)
	if err != nil || fmt.Sprint(gotRuns) != fmt.Sprint(wantRuns) || !bytes.Equal(h.Sum(nil), md5Sum(want)) {
		t.Fatalf("%s [%d,%d): Scan with digest: runs %v, %v; want %v", z.Name(), start, end, gotRuns, err, wantRuns)
	}
	if gotRuns, err = z.Scan(start, end, nil, nil); err != nil || fmt.Sprint(gotRuns) != fmt.Sprint(wantRuns) {
		t.Fatalf("%s [%d,%d): Scan: runs %v, %v; want %v", z.Name(), start, end, gotRuns, err, wantRuns)
	}
}

func md5Sum(b []byte) []byte { s := md5.Sum(b); return s[:] }

// TestBGZFBoundedMemory reads a 64 MB bgzip FASTA from end to end, in
// windows as the decoder does, and checks that neither the compressed
// file's pages (beyond the keptRegions most recent regions) nor inflated
// blocks stay with the process: the heap after the read holds the block
// cache, not the reference.
func TestBGZFBoundedMemory(t *testing.T) {
	text := regularFasta(3, 64<<20)
	gz := filepath.Join(t.TempDir(), "big.fa.gz")
	writeBGZF(t, gz, text, bgzf.MaxBlockData, true)
	text = nil
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	s := open(t, []string{gz}, Options{})
	c := s.Contigs()[0]
	var buf []byte
	var err error
	for start := int64(0); start < c.Len(); start += 100000 {
		if buf, err = c.Bases(buf[:0], start, min(start+150000, c.Len())); err != nil {
			t.Fatal(err)
		}
	}
	if len(c.m.data) < 2*keptResident {
		t.Fatalf("the compressed mapping is %d bytes, too small to tell %d bytes kept from all", len(c.m.data), keptResident)
	}
	if rss := mappedRSS(t, uintptr(unsafe.Pointer(unsafe.SliceData(c.m.data)))); rss > keptResident {
		t.Errorf("%d bytes of the %d-byte compressed mapping still resident after reading it, want at most %d", rss, len(c.m.data), keptResident)
	}
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > blockCacheBlocks*maxBlockData+2<<20 {
		t.Errorf("heap grew by %d bytes reading a %d-byte reference; the block cache holds at most %d", grown, c.Len(), blockCacheBlocks*maxBlockData)
	}
}

// TestBGZFRefused checks the compressed FASTA files Open refuses, saying
// what to do: plain gzip (recompress with bgzip, as samtools says), and
// bgzip without its .fai or .gzi (samtools faidx makes them), or with
// an index that does not fit the file.
func TestBGZFRefused(t *testing.T) {
	dir := t.TempDir()
	text := regularFasta(4, 5000)
	var gzBuf bytes.Buffer
	zw := gzip.NewWriter(&gzBuf)
	zw.Write(text)
	must(t, zw.Close())
	plainGz := write(t, filepath.Join(dir, "gzip.fa.gz"), gzBuf.String())
	write(t, plainGz+".fai", faiOf(t, text))
	noFai := filepath.Join(dir, "nofai.fa.gz")
	writeBGZF(t, noFai, text, 1000, false)
	noGzi := filepath.Join(dir, "nogzi.fa.gz")
	writeBGZF(t, noGzi, text, 1000, true)
	os.Remove(noGzi + ".gzi")
	badGzi := filepath.Join(dir, "badgzi.fa.gz")
	writeBGZF(t, badGzi, text, 1000, true)
	gzi, _ := os.ReadFile(badGzi + ".gzi")
	binary.LittleEndian.PutUint64(gzi[8:], 1<<40) // the first entry past the file
	write(t, badGzi+".gzi", string(gzi))
	short := filepath.Join(dir, "short.fa.gz")
	writeBGZF(t, short, text, 1000, true)
	write(t, short+".fai", faiOf(t, regularFasta(4, 9000))) // a longer contig than the file holds
	for _, tc := range []struct {
		name, path string
		want       error
		says       []string
	}{
		{"gzip", plainGz, ErrUnsupported, []string{plainGz, "compressed with gzip, not bgzip", "recompress it with bgzip"}},
		{"no .fai", noFai, ErrUnsupported, []string{noFai + ".fai", "samtools faidx " + noFai}},
		{"no .gzi", noGzi, ErrUnsupported, []string{noGzi + ".gzi", "samtools faidx " + noGzi}},
		{"bad .gzi", badGzi, ErrCorrupt, []string{badGzi + ".gzi", "entry 1", "stale"}},
		{"stale .fai", short, ErrCorrupt, []string{short + ".fai", "runs past the end"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open([]string{tc.path}, Options{NoEnv: true})
			if err == nil {
				s.Close()
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("Open: %v, want %v", err, tc.want)
			}
			for _, w := range tc.says {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err, w)
				}
			}
		})
	}
}

// TestBGZFChanged checks reads of a bgzip FASTA that changes while
// mapped: truncated (the fault is caught: ErrChanged, not SIGBUS), or
// rewritten in place (a block that no longer inflates: ErrChanged, not
// ErrCorrupt, since the file is not the one opened); and a file that was
// damaged before it was opened (ErrCorrupt, naming the block).
func TestBGZFChanged(t *testing.T) {
	text := regularFasta(5, 300000)
	dir := t.TempDir()
	for _, tc := range []struct {
		name   string
		change func(t *testing.T, path string)
		before bool // change the file before Open
		want   error
		says   string
	}{
		{"truncated", func(t *testing.T, p string) { must(t, os.Truncate(p, 4096)) }, false, ErrChanged, "truncated while mapped"},
		{"rewritten", damage, false, ErrChanged, "changed since it was opened"},
		{"damaged before", damage, true, ErrCorrupt, "BGZF block at byte"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gz := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "")+".fa.gz")
			writeBGZF(t, gz, text, bgzf.MaxBlockData, true)
			// An mtime of the past, so that a change now is seen whatever
			// the clock's granularity.
			old := time.Now().Add(-time.Hour)
			must(t, os.Chtimes(gz, old, old))
			if tc.before {
				tc.change(t, gz)
			}
			s := open(t, []string{gz}, Options{})
			c := s.Contigs()[0]
			if !tc.before {
				tc.change(t, gz)
			}
			got, err := c.Bases([]byte("x"), c.Len()-100, c.Len())
			if !errors.Is(err, tc.want) || string(got) != "x" || !strings.Contains(err.Error(), gz) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Bases after the change: %q, %v; want %v naming %s and saying %q, dst unchanged", got, err, tc.want, gz, tc.says)
			}
			if _, err := c.Scan(c.Len()-100, c.Len(), md5.New(), nil); !errors.Is(err, tc.want) {
				t.Errorf("Scan after the change: %v, want %v", err, tc.want)
			}
		})
	}
}

// damage overwrites bytes in the middle of the last data block of the
// BGZF file at path, in place.
func damage(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(bytes.Repeat([]byte{0x55}, 64), int64(len(b)-len(bgzf.EOF)-200)); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestBGZFConcurrentReaders reads random ranges of a bgzip FASTA of many
// more blocks than the cache holds from several goroutines at once, as the
// decoding threads do, and checks every range against the plain file;
// then that Close makes reads fail with ErrClosed.
func TestBGZFConcurrentReaders(t *testing.T) {
	text := regularFasta(6, 200000, 100000)
	dir := t.TempDir()
	plain := write(t, filepath.Join(dir, "r.fa"), string(text))
	gz := filepath.Join(dir, "r.fa.gz")
	writeBGZF(t, gz, text, 1000, true) // 300 blocks
	p := open(t, []string{plain}, Options{})
	z, err := Open([]string{gz}, Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			var got, want []byte
			for range 300 {
				i := rng.IntN(2)
				pc, zc := p.Contigs()[i], z.Contigs()[i]
				start := rng.Int64N(zc.Len())
				end := min(start+rng.Int64N(20000), zc.Len())
				var err error
				if want, err = pc.Bases(want[:0], start, end); err != nil {
					errs <- err
					return
				}
				if got, err = zc.Bases(got[:0], start, end); err != nil || !bytes.Equal(got, want) {
					errs <- fmt.Errorf("%s [%d,%d): %v, or other bases than the plain file's", zc.Name(), start, end, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent reads: %v", err)
	}
	c := z.Contigs()[0]
	must(t, z.Close())
	if _, err := c.Bases(nil, 0, 10); !errors.Is(err, ErrClosed) {
		t.Errorf("Bases after Close: %v, want ErrClosed", err)
	}
}

// TestBGZFThroughUR resolves an @SQ line whose UR: names a bgzip FASTA:
// read as a -T one is, its origin the UR: file.
func TestBGZFThroughUR(t *testing.T) {
	text := regularFasta(7, 3000)
	gz := filepath.Join(t.TempDir(), "ur.fa.gz")
	writeBGZF(t, gz, text, 1000, true)
	s := open(t, nil, Options{})
	c, err := s.Resolve(SQ{Name: "c0", Length: 3000, UR: "file://" + gz})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := scanFasta(text)
	if err != nil {
		t.Fatal(err)
	}
	want, err := (&Contig{name: "c0", length: entries[0].length, runs: entries[0].runs, m: &mapping{data: text}}).Bases(nil, 0, 3000)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := c.Bases(nil, 0, 3000); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Bases through UR: %.20q..., %v; want %.20q...", got, err, want)
	}
	if o := c.Origin(); o != (Origin{gz, ViaUR}) || o.String() != "the FASTA "+gz+" (@SQ UR:)" {
		t.Errorf("origin %v (%s), want the UR: file %s", o, o, gz)
	}
}
