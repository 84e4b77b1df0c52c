package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "unsafe" // monotonic

	"github.com/cramfs/cramfs/decode/codec/arith"
	"github.com/cramfs/cramfs/decode/codec/fqzcomp"
	"github.com/cramfs/cramfs/decode/codec/rans4x8"
	"github.com/cramfs/cramfs/decode/codec/ransnx16"
	"github.com/cramfs/cramfs/decode/codec/tok3"
)

// codecConfig is the configuration of the codec mode (-codecs): the Go
// decoders of decode/codec/... against htscodecs' C decoders, timed by
// ../shared/bench/htscodecs-bench.c with SCALAR=1 (the goal is
// codecTarget of the C speed for each codec).
type codecConfig struct {
	blocks  string         // DIR/<codec>/<name> blocks (blockdump output), "" for none
	corpus  string         // conformance corpus with codec_vectors_manifest.tsv
	cBench  string         // prebuilt C timer, "" to build it from cSrc
	cSrc    string         // htscodecs-bench.c
	out     string         // directory for CODECS.md, "" to write nothing
	only    *regexp.Regexp // keeps files whose family or name matches
	rounds  int
	target  time.Duration // per file and round, the Go repeats last at least this long and the C repeats about as long
	cmdline string        // the command line, for the report
}

// codecSpec is one codec: the name the C timer takes (and the -blocks
// subdirectory), the codec column of the corpus manifest, and the Go
// decoder, in the form the CRAM block decoder calls it (appending to a
// reused buffer).
type codecSpec struct {
	Name     string
	Manifest string
	Decode   func(dst, src []byte, rawSize int) ([]byte, error)
}

// codecSpecs are the codecs in table order.
var codecSpecs = []codecSpec{
	{"r4x8", "rans4x8", rans4x8.AppendDecode},
	{"r4x16", "ransNx16", ransnx16.AppendDecode},
	{"arith", "arith", arith.AppendDecode},
	{"fqzcomp", "fqzcomp", fqzcomp.AppendDecode},
	{"tok3", "tok3", tok3.AppendDecode},
}

func codecIndex(name string) int {
	return slices.IndexFunc(codecSpecs, func(c codecSpec) bool { return c.Name == name })
}

// Sources of the files, in table order.
const (
	srcCorpus = "corpus"
	srcBlocks = "blocks"
)

// maxCodecFile bounds the size of one compressed file read into memory.
const maxCodecFile = 256 << 20

// codecFile is one compressed stream the codec mode times.
type codecFile struct {
	Codec   string // C timer's codec name (codecSpecs)
	Source  string // srcCorpus or srcBlocks
	Name    string // path relative to the corpus or the blocks directory
	Path    string
	RawSize int // rawSize passed to the Go decoder; -1 unknown
	Family  family
	Data    []byte
}

// family groups streams of one codec whose format bits select the same
// decoding path. Rank orders families within a codec.
type family struct {
	Name string
	Rank int
}

// Format bits of the first byte of a rANS Nx16 stream (CRAMcodecs.tex
// section 3.6, "Combined rANS Nx16 Format") and of an adaptive arithmetic
// coder stream (CRAMcodecs.tex, the flag table after "RLE with Order-0 and
// Order-1 Encoding"). Bit 4 is N32 (X32) for rANS and Ext (bzip2) for the
// arithmetic coder; bit 2 is reserved in both.
const (
	fmtOrder  = 0x03 // 1: order-1; 2 is reserved (order-2/3)
	fmtX32Ext = 0x04
	fmtStripe = 0x08
	fmtNoSize = 0x10
	fmtCat    = 0x20
	fmtRLE    = 0x40
	fmtPack   = 0x80
)

// errClassify is wrapped by classify for streams whose first bytes do not
// form a valid header.
var errClassify = errors.New("cramfs-bench: unrecognised codec stream header")

// classify returns the family of stream src of codec from its first bytes:
//   - r4x8: the order byte (CRAMcodecs.tex section 2, "rANS 4x8 compressed
//     data structure"): "r4x8 O0" or "r4x8 O1";
//   - r4x16 and arith: the format byte, as order plus the X32 (rANS) or EXT
//     (arith) bit and the STRIPE, CAT, RLE and PACK transforms, e.g.
//     "r4x16 O1 X32", "arith O0 RLE PACK"; NOSZ only moves the length, so it
//     is ignored, and so is the order under CAT and EXT, which bypass the
//     entropy coder;
//   - fqzcomp: the gflags byte after the uint7 length and the version byte
//     (CRAMcodecs.tex, "FQZComp Data Stream"): "fqzcomp" or "fqzcomp
//     multi-param";
//   - tok3: the use_arith byte of the header (CRAMcodecs.tex, "Name
//     tokenisation codec"): "tok3 rANS" or "tok3 arith".
func classify(codec string, src []byte) (family, error) {
	short := func(need int) error {
		return fmt.Errorf("%w: %s stream of %d bytes, need at least %d", errClassify, codec, len(src), need)
	}
	switch codec {
	case "r4x8":
		if len(src) < 1 {
			return family{}, short(1)
		}
		if o := src[0]; o <= 1 {
			return family{Name: fmt.Sprintf("r4x8 O%d", o), Rank: int(o)}, nil
		}
		return family{}, fmt.Errorf("%w: r4x8 order byte %d at offset 0, want 0 or 1", errClassify, src[0])
	case "r4x16", "arith":
		if len(src) < 1 {
			return family{}, short(1)
		}
		return flagFamily(codec, src[0]), nil
	case "fqzcomp":
		pos, err := skipUint7(src, 0)
		if err != nil {
			return family{}, err
		}
		if len(src) < pos+2 {
			return family{}, short(pos + 2)
		}
		if v := src[pos]; v != 5 {
			return family{}, fmt.Errorf("%w: fqzcomp version %d at offset %d, want 5", errClassify, v, pos)
		}
		if src[pos+1]&1 != 0 {
			return family{Name: "fqzcomp multi-param", Rank: 1}, nil
		}
		return family{Name: "fqzcomp", Rank: 0}, nil
	case "tok3":
		if len(src) < 9 {
			return family{}, short(9)
		}
		switch src[8] {
		case 0:
			return family{Name: "tok3 rANS", Rank: 0}, nil
		case 1:
			return family{Name: "tok3 arith", Rank: 1}, nil
		}
		return family{}, fmt.Errorf("%w: tok3 use_arith byte %d at offset 8, want 0 or 1", errClassify, src[8])
	}
	return family{}, fmt.Errorf("%w: unknown codec %q", errClassify, codec)
}

// flagFamily names the family of a rANS Nx16 or arith format byte.
func flagFamily(codec string, flags byte) family {
	flags &^= fmtNoSize
	ext := codec == "arith" && flags&fmtX32Ext != 0
	if flags&fmtCat != 0 || ext {
		flags &^= fmtOrder
	}
	parts := []string{codec}
	if flags&fmtCat == 0 && !ext {
		parts = append(parts, fmt.Sprintf("O%d", flags&fmtOrder))
	}
	for _, b := range []struct {
		bit  byte
		name string
	}{{fmtX32Ext, "X32"}, {fmtStripe, "STRIPE"}, {fmtCat, "CAT"}, {fmtRLE, "RLE"}, {fmtPack, "PACK"}} {
		if flags&b.bit == 0 {
			continue
		}
		if b.bit == fmtX32Ext && codec == "arith" {
			parts = append(parts, "EXT")
		} else {
			parts = append(parts, b.name)
		}
	}
	return family{Name: strings.Join(parts, " "), Rank: int(flags)}
}

// skipUint7 returns the offset after the uint7 (CRAMcodecs.tex section
// 1.4: 7 bits per byte, most significant first, high bit = more) at pos.
func skipUint7(src []byte, pos int) (int, error) {
	for i := pos; i < pos+5; i++ {
		if i >= len(src) {
			return 0, fmt.Errorf("%w: uint7 at offset %d truncated", errClassify, pos)
		}
		if src[i]&0x80 == 0 {
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("%w: uint7 at offset %d longer than 5 bytes", errClassify, pos)
}

// skipped is a file left out of the timing, and why.
type skipped struct {
	Source, Name, Reason string
}

// collectCorpus reads the OK rows of dir/codec_vectors_manifest.tsv for the
// codecs of codecSpecs.
func collectCorpus(dir string) ([]*codecFile, []skipped, error) {
	f, err := os.Open(filepath.Join(dir, "codec_vectors_manifest.tsv"))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var files []*codecFile
	var skips []skipped
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		col := strings.Split(sc.Text(), "\t")
		if line == 1 || len(col) < 4 || col[3] != "OK" {
			continue
		}
		i := slices.IndexFunc(codecSpecs, func(c codecSpec) bool { return c.Manifest == col[1] })
		if i < 0 {
			skips = append(skips, skipped{srcCorpus, col[0], "codec " + col[1] + " has no C timer"})
			continue
		}
		cf, reason, err := loadCodecFile(codecSpecs[i].Name, srcCorpus, col[0], filepath.Join(dir, col[0]), -1)
		if err != nil {
			return nil, nil, err
		}
		if reason != "" {
			skips = append(skips, skipped{srcCorpus, col[0], reason})
			continue
		}
		files = append(files, cf)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	return files, skips, nil
}

// collectBlocks reads dir/<codec>/* for the codecs of codecSpecs. A name
// ending in .<digits> (blockdump's <stem>.c<container>.b<n>.<rawsize>)
// gives the Go decoder its raw size; other names decode with -1.
func collectBlocks(dir string) ([]*codecFile, []skipped, error) {
	var files []*codecFile
	var skips []skipped
	found := false
	for _, c := range codecSpecs {
		ents, err := os.ReadDir(filepath.Join(dir, c.Name))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		found = true
		for _, e := range ents {
			if !e.Type().IsRegular() {
				continue
			}
			name := filepath.Join(c.Name, e.Name())
			raw := -1
			if i := strings.LastIndexByte(e.Name(), '.'); i >= 0 {
				if n, err := strconv.Atoi(e.Name()[i+1:]); err == nil && n >= 0 && n <= math.MaxInt32 {
					raw = n
				}
			}
			cf, reason, err := loadCodecFile(c.Name, srcBlocks, name, filepath.Join(dir, name), raw)
			if err != nil {
				return nil, nil, err
			}
			if reason != "" {
				skips = append(skips, skipped{srcBlocks, name, reason})
				continue
			}
			files = append(files, cf)
		}
	}
	if !found {
		return nil, nil, fmt.Errorf("%s has none of the codec directories %s", dir, strings.Join(codecNames(), ", "))
	}
	return files, skips, nil
}

func codecNames() []string {
	var out []string
	for _, c := range codecSpecs {
		out = append(out, c.Name)
	}
	return out
}

// loadCodecFile reads and classifies one stream. It returns a reason
// instead of a file when the stream cannot be used.
func loadCodecFile(codec, source, name, path string, raw int) (*codecFile, string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, "", err
	}
	if st.Size() > maxCodecFile {
		return nil, fmt.Sprintf("%d bytes, over the %d-byte limit", st.Size(), maxCodecFile), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	fam, err := classify(codec, data)
	if err != nil {
		return nil, err.Error(), nil
	}
	return &codecFile{Codec: codec, Source: source, Name: name, Path: path, RawSize: raw, Family: fam, Data: data}, "", nil
}

// dedupe keeps the first of the files of one source with the same codec
// and bytes (the corpus holds most vectors twice, under hts-specs/ and
// htscodecs/) and returns how many it dropped.
func dedupe(files []*codecFile) ([]*codecFile, int) {
	type key struct {
		codec, source string
		sum           [32]byte
	}
	seen := map[key]bool{}
	out := files[:0:0]
	for _, f := range files {
		k := key{f.Codec, f.Source, sha256.Sum256(f.Data)}
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, f)
	}
	return out, len(files) - len(out)
}

// fileTiming is the measurement of one file: its decoded length and, per
// round, the median seconds of one decode on each side.
type fileTiming struct {
	File   *codecFile
	Bytes  int
	CReps  int
	CSecs  []float64
	GoSecs []float64
}

// Timing bounds.
const (
	minReps = 5       // fewest timed calls per file and round, each side
	maxReps = 1 << 20 // most timed calls per file and round, each side
)

// cTimer runs the htscodecs-bench binary.
type cTimer struct{ bin string }

// cResult is the parsed output line of htscodecs-bench.
type cResult struct {
	Bytes     int
	BestMBs   float64
	MedianMBs float64
}

// run times one file with reps repeats under SCALAR=1.
func (t cTimer) run(ctx context.Context, codec, path string, reps int) (cResult, error) {
	c := command{Path: t.bin, Args: []string{codec, path, strconv.Itoa(reps)}, Env: []string{"SCALAR=1"}}
	cmd := c.exec(ctx)
	var stdout, stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return cResult{}, fmt.Errorf("%s: %w: %s", c, err, strings.TrimSpace(stderr.String()))
	}
	r, err := parseCBench(stdout.String())
	if err != nil {
		return cResult{}, fmt.Errorf("%s: %w", c, err)
	}
	return r, nil
}

// parseCBench parses "codec\tfile\tbytes\tbest X MB/s\tmedian Y MB/s", the
// line htscodecs-bench prints. The fields are taken from the end, so a
// file name with a tab does no harm.
func parseCBench(out string) (cResult, error) {
	line := strings.TrimRight(out, "\r\n")
	f := strings.Split(line, "\t")
	if len(f) < 5 || strings.Contains(line, "\n") {
		return cResult{}, fmt.Errorf("unexpected htscodecs-bench output %q", out)
	}
	f = f[len(f)-3:]
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 0 {
		return cResult{}, fmt.Errorf("htscodecs-bench decoded size %q: not a count", f[0])
	}
	mbs := func(s, label string) (float64, error) {
		v, ok := strings.CutPrefix(s, label+" ")
		v, ok2 := strings.CutSuffix(v, " MB/s")
		x, err := strconv.ParseFloat(v, 64)
		if !ok || !ok2 || err != nil || x < 0 || math.IsInf(x, 0) || math.IsNaN(x) {
			return 0, fmt.Errorf("htscodecs-bench field %q: want %q", s, label+" N MB/s")
		}
		return x, nil
	}
	best, err := mbs(f[1], "best")
	if err != nil {
		return cResult{}, err
	}
	med, err := mbs(f[2], "median")
	if err != nil {
		return cResult{}, err
	}
	return cResult{Bytes: n, BestMBs: best, MedianMBs: med}, nil
}

// secsPerDecode converts a decoded size and MB/s (1e6 bytes) into seconds
// per decode; ok is false when the rate is zero.
func secsPerDecode(bytes int, mbs float64) (float64, bool) {
	if mbs <= 0 {
		return 0, false
	}
	return float64(bytes) / (mbs * 1e6), true
}

// repsFor is the number of calls of secs each that last target, within
// [minReps, maxReps].
func repsFor(secs float64, target time.Duration) int {
	if secs <= 0 {
		return maxReps
	}
	n := math.Ceil(target.Seconds() / secs)
	return int(max(minReps, min(maxReps, n)))
}

// timeGo times dec on src in this process: one warm-up call, then calls
// until target has passed (at least minReps, at most maxReps), each timed
// alone like the C timer does, decoding into the buffer of the previous
// call as the CRAM block decoder does. It returns the median seconds per call and
// the decoded length.
func timeGo(dec func([]byte, []byte, int) ([]byte, error), src []byte, raw int, target time.Duration) (float64, int, error) {
	out, err := dec(nil, src, raw)
	if err != nil {
		return 0, 0, err
	}
	n := len(out)
	runtime.GC()
	ds := make([]float64, 0, 1024)
	start := monotonic()
	for len(ds) < maxReps {
		t0 := monotonic()
		var err error
		out, err = dec(out[:0], src, raw)
		t1 := monotonic()
		if err != nil {
			return 0, 0, err
		}
		ds = append(ds, float64(t1-t0)*1e-9)
		if len(ds) >= minReps && time.Duration(t1-start) >= target {
			break
		}
	}
	return median(ds), n, nil
}

// monotonic returns the runtime's monotonic clock in nanoseconds: the
// clock the C timer reads with clock_gettime(CLOCK_MONOTONIC), read once.
// time.Now reads the wall clock too, which fell inside every timed
// interval: back-to-back time.Now calls measure 50 ns apart against 20 ns
// here and 30 ns for the C timer's pair (medians of 10^6 pairs): a bias
// of 20 ns against Go became one of 10 ns for it, which matters only for
// streams decoded in well under a microsecond.
//
//go:linkname monotonic runtime.nanotime
func monotonic() int64

// goDecoder returns the Go decoder of codec.
func goDecoder(codec string) func([]byte, []byte, int) ([]byte, error) {
	if i := codecIndex(codec); i >= 0 {
		return codecSpecs[i].Decode
	}
	return nil
}

// accept checks that both decoders decode f to the same length and sizes
// the C repeats to last about target. It returns a reason when the file is
// left out; err is only for a cancelled context.
func accept(ctx context.Context, ct cTimer, f *codecFile, target time.Duration) (fileTiming, string, error) {
	dec := goDecoder(f.Codec)
	if dec == nil {
		return fileTiming{}, "no Go decoder for " + f.Codec, nil
	}
	out, err := dec(nil, f.Data, f.RawSize)
	if err != nil {
		return fileTiming{}, "Go decoder: " + err.Error(), nil
	}
	cr, err := ct.run(ctx, f.Codec, f.Path, minReps)
	if ctx.Err() != nil {
		return fileTiming{}, "", ctx.Err()
	}
	if err != nil {
		return fileTiming{}, "C decoder: " + oneLine(err.Error()), nil
	}
	if cr.Bytes != len(out) {
		return fileTiming{}, fmt.Sprintf("decoded sizes differ: Go %d bytes, C %d", len(out), cr.Bytes), nil
	}
	if len(out) == 0 {
		return fileTiming{}, "decodes to 0 bytes: no rate to measure", nil
	}
	secs, ok := secsPerDecode(cr.Bytes, cr.MedianMBs)
	if !ok {
		return fileTiming{}, "C timer reported 0 MB/s", nil
	}
	return fileTiming{File: f, Bytes: len(out), CReps: repsFor(secs, target)}, "", nil
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	return strings.Join(strings.Fields(s), " ")
}

// benchFiles keeps the files both decoders accept, then for each round
// times every file with the C timer and, right after, with the Go decoder.
// Progress goes to log.
func benchFiles(ctx context.Context, ct cTimer, files []*codecFile, rounds int, target time.Duration, log io.Writer) ([]fileTiming, []skipped, error) {
	var ts []fileTiming
	var skips []skipped
	for i, f := range files {
		ft, reason, err := accept(ctx, ct, f, target)
		if err != nil {
			return nil, nil, err
		}
		if reason != "" {
			fmt.Fprintf(log, "  skip %s/%s: %s\n", f.Source, f.Name, reason)
			skips = append(skips, skipped{f.Source, f.Name, reason})
			continue
		}
		if (i+1)%50 == 0 {
			fmt.Fprintf(log, "  checked %d/%d files\n", i+1, len(files))
		}
		ts = append(ts, ft)
	}
	for r := 0; r < rounds; r++ {
		for i := range ts {
			t := &ts[i]
			f := t.File
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			cr, err := ct.run(ctx, f.Codec, f.Path, t.CReps)
			if err != nil {
				return nil, nil, fmt.Errorf("round %d, %s/%s: %w", r+1, f.Source, f.Name, err)
			}
			cs, ok := secsPerDecode(cr.Bytes, cr.MedianMBs)
			if !ok || cr.Bytes != t.Bytes {
				return nil, nil, fmt.Errorf("round %d, %s/%s: C timer reported %d bytes at %v MB/s, want %d bytes at a positive rate",
					r+1, f.Source, f.Name, cr.Bytes, cr.MedianMBs, t.Bytes)
			}
			gs, n, err := timeGo(goDecoder(f.Codec), f.Data, f.RawSize, target)
			if err != nil {
				return nil, nil, fmt.Errorf("round %d, %s/%s: Go decoder: %w", r+1, f.Source, f.Name, err)
			}
			if n != t.Bytes {
				return nil, nil, fmt.Errorf("round %d, %s/%s: Go decoded %d bytes, want %d", r+1, f.Source, f.Name, n, t.Bytes)
			}
			t.CSecs = append(t.CSecs, cs)
			t.GoSecs = append(t.GoSecs, gs)
			fmt.Fprintf(log, "  round %d [%d/%d] %-22s %-52s C %9.1f MB/s  Go %9.1f MB/s\n", r+1, i+1, len(ts),
				f.Family.Name, f.Source+"/"+f.Name, cr.MedianMBs, float64(t.Bytes)/gs/1e6)
		}
	}
	return ts, skips, nil
}

// runCodecs is the -codecs mode: collect, select, time, report.
func runCodecs(ctx context.Context, cc codecConfig, stdout, log io.Writer) error {
	if cc.rounds < 1 || cc.target <= 0 {
		return errors.New("-codecs wants -rounds >= 1 and -codec-time > 0")
	}
	var files []*codecFile
	var skips []skipped
	if cc.corpus != "" {
		if _, err := os.Stat(filepath.Join(cc.corpus, "codec_vectors_manifest.tsv")); err != nil {
			if cc.blocks == "" {
				return fmt.Errorf("corpus: %w (pass -corpus DIR or -blocks DIR)", err)
			}
			fmt.Fprintf(log, "cramfs-bench: no corpus (%v); timing the blocks only\n", err)
			cc.corpus = ""
		} else {
			fs, ss, err := collectCorpus(cc.corpus)
			if err != nil {
				return fmt.Errorf("corpus: %w", err)
			}
			files, skips = append(files, fs...), append(skips, ss...)
		}
	}
	if cc.blocks != "" {
		fs, ss, err := collectBlocks(cc.blocks)
		if err != nil {
			return fmt.Errorf("-blocks: %w", err)
		}
		files, skips = append(files, fs...), append(skips, ss...)
	}
	if cc.only != nil {
		files = slices.DeleteFunc(files, func(f *codecFile) bool {
			return !cc.only.MatchString(f.Family.Name) && !cc.only.MatchString(f.Name)
		})
	}
	files, dups := dedupe(files)
	if len(files) == 0 {
		return errors.New("no codec streams to time")
	}

	scratch, err := os.MkdirTemp("", "cramfs-bench-codecs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	bin, built, err := resolveCTimer(ctx, cc.cBench, cc.cSrc, scratch)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "cramfs-bench: %d streams, C timer %s, %d rounds\n", len(files), bin, cc.rounds)
	ts, ss, err := benchFiles(ctx, cTimer{bin}, files, cc.rounds, cc.target, log)
	if err != nil {
		return err
	}
	skips = append(skips, ss...)
	fams := aggregate(ts, familyKey)
	if err := writeCodecTable(stdout, "family", fams); err != nil {
		return err
	}
	if cc.out == "" {
		return nil
	}
	rep := codecReport{
		Cmdline: cc.cmdline, When: time.Now().UTC(), Machine: machine(),
		CTimer: cTimerDesc(bin, built), Corpus: cc.corpus, Blocks: cc.blocks,
		Rounds: cc.rounds, Target: cc.target, Files: len(files), Duplicates: dups,
		Families: fams, Codecs: aggregate(ts, codecKey), Skipped: skips,
	}
	if err := os.MkdirAll(cc.out, 0o755); err != nil {
		return err
	}
	var md bytes.Buffer
	if err := writeCodecReport(&md, rep); err != nil {
		return err
	}
	p := filepath.Join(cc.out, "CODECS.md")
	if err := os.WriteFile(p, md.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(log, "cramfs-bench: wrote %s\n", p)
	return nil
}

// resolveCTimer returns the prebuilt timer bin, or builds src with gcc
// into dir; built tells which.
func resolveCTimer(ctx context.Context, bin, src, dir string) (string, bool, error) {
	if bin != "" {
		abs, err := filepath.Abs(bin)
		if err != nil {
			return "", false, err
		}
		st, err := os.Stat(abs)
		if err != nil {
			return "", false, fmt.Errorf("-htscodecs-bench: %w", err)
		}
		if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			return "", false, fmt.Errorf("-htscodecs-bench %s is not an executable file", abs)
		}
		return abs, false, nil
	}
	if _, err := os.Stat(src); err != nil {
		return "", false, fmt.Errorf("htscodecs-bench source: %w (pass -htscodecs-bench-src FILE.c or -htscodecs-bench BINARY)", err)
	}
	out := filepath.Join(dir, "htscodecs-bench")
	cmd := exec.CommandContext(ctx, "gcc", "-O2", "-o", out, src, "-lhtscodecs")
	var stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return "", false, fmt.Errorf("gcc -O2 -o %s %s -lhtscodecs: %w (needs gcc and libhtscodecs-dev)\n%s", out, src, err, stderr.String())
	}
	return out, true, nil
}

func cTimerDesc(bin string, built bool) string {
	lib := "libhtscodecs " + dpkgVersion("libhtscodecs2")
	if built {
		return fmt.Sprintf("htscodecs-bench.c built with `gcc -O2 ... -lhtscodecs` (%s), %s", firstLine("gcc", "--version"), lib)
	}
	return fmt.Sprintf("prebuilt %s, %s", bin, lib)
}

func dpkgVersion(pkg string) string {
	out, err := exec.Command("dpkg-query", "-W", "-f", "${Version}", pkg).Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		return "(version unknown)"
	}
	return string(bytes.TrimSpace(out))
}

func machine() string {
	return fmt.Sprintf("%s, %d CPUs visible, %s %s/%s", cpuModel(), runtime.NumCPU(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// moduleRoot is the directory of go.mod: searched upwards from the working
// directory, else the source tree this command was built from.
func moduleRoot() string {
	if wd, err := os.Getwd(); err == nil {
		for d := wd; ; d = filepath.Dir(d) {
			if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.Contains(data, []byte("module github.com/cramfs/cramfs\n")) {
				return d
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// defaultCorpus is $CRAMFS_CORPUS or ../shared/corpus from the module
// root, as internal/corpus finds it.
func defaultCorpus() string {
	if d := os.Getenv("CRAMFS_CORPUS"); d != "" {
		return d
	}
	return filepath.Join(moduleRoot(), "..", "shared", "corpus")
}

// shellQuote quotes args for display where they hold shell specials.
func shellQuote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\n'\"\\$|&;<>()*?[]{}`!#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}
