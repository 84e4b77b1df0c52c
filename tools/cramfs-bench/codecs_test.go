package main

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cramfs/cramfs/internal/corpus"
)

func TestClassify(t *testing.T) {
	tok3Header := func(useArith byte) []byte {
		return []byte{0x10, 0, 0, 0, 2, 0, 0, 0, useArith, 0xAA}
	}
	tests := []struct {
		codec   string
		src     []byte
		want    string
		wantErr bool
	}{
		{"r4x8", []byte{0, 1, 2}, "r4x8 O0", false},
		{"r4x8", []byte{1}, "r4x8 O1", false},
		{"r4x8", []byte{2}, "", true},
		{"r4x8", nil, "", true},
		{"r4x16", []byte{0x00}, "r4x16 O0", false},
		{"r4x16", []byte{0x01}, "r4x16 O1", false},
		{"r4x16", []byte{0x04}, "r4x16 O0 X32", false},
		{"r4x16", []byte{0x05}, "r4x16 O1 X32", false},
		{"r4x16", []byte{0x09}, "r4x16 O1 STRIPE", false},
		{"r4x16", []byte{0x11}, "r4x16 O1", false}, // NOSZ does not change the family
		{"r4x16", []byte{0x20}, "r4x16 CAT", false},
		{"r4x16", []byte{0x21}, "r4x16 CAT", false}, // order is meaningless under CAT
		{"r4x16", []byte{0x60}, "r4x16 CAT RLE", false},
		{"r4x16", []byte{0xA0}, "r4x16 CAT PACK", false},
		{"r4x16", []byte{0x41}, "r4x16 O1 RLE", false},
		{"r4x16", []byte{0xC1}, "r4x16 O1 RLE PACK", false},
		{"r4x16", []byte{0x80}, "r4x16 O0 PACK", false},
		{"r4x16", nil, "", true},
		{"arith", []byte{0x00}, "arith O0", false},
		{"arith", []byte{0x01}, "arith O1", false},
		{"arith", []byte{0x04}, "arith EXT", false},
		{"arith", []byte{0x05}, "arith EXT", false},
		{"arith", []byte{0x41}, "arith O1 RLE", false},
		{"arith", []byte{0xC0}, "arith O0 RLE PACK", false},
		{"arith", []byte{0x08}, "arith O0 STRIPE", false},
		{"fqzcomp", []byte{0x87, 0x10, 5, 0}, "fqzcomp", false},
		{"fqzcomp", []byte{0x40, 5, 1, 2}, "fqzcomp multi-param", false},
		{"fqzcomp", []byte{0x81, 0x81, 0x01, 5, 6}, "fqzcomp", false}, // do_rev and have_stab: still single-param
		{"fqzcomp", []byte{0x40, 4, 0}, "", true},                     // version 4
		{"fqzcomp", []byte{0x80, 0x80}, "", true},                     // truncated uint7
		{"fqzcomp", []byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 5, 0}, "", true},
		{"fqzcomp", []byte{0x40, 5}, "", true}, // no gflags
		{"tok3", tok3Header(0), "tok3 rANS", false},
		{"tok3", tok3Header(1), "tok3 arith", false},
		{"tok3", tok3Header(2), "", true},
		{"tok3", tok3Header(0)[:8], "", true},
		{"gzip", []byte{0x1f, 0x8b}, "", true},
	}
	for _, tc := range tests {
		fam, err := classify(tc.codec, tc.src)
		if tc.wantErr {
			if !errors.Is(err, errClassify) {
				t.Errorf("classify(%s, % x) = %q, %v; want an errClassify error", tc.codec, tc.src, fam.Name, err)
			}
			continue
		}
		if err != nil || fam.Name != tc.want {
			t.Errorf("classify(%s, % x) = %q, %v; want %q", tc.codec, tc.src, fam.Name, err, tc.want)
		}
	}
}

// TestClassifyRanks checks that families of one codec sort by their
// format bits, with NOSZ and meaningless order bits folded away.
func TestClassifyRanks(t *testing.T) {
	rank := func(codec string, b byte) int {
		f, err := classify(codec, []byte{b})
		if err != nil {
			t.Fatal(err)
		}
		return f.Rank
	}
	if rank("r4x16", 0x11) != rank("r4x16", 0x01) || rank("r4x16", 0x21) != rank("r4x16", 0x20) {
		t.Error("NOSZ or the order under CAT changed the rank")
	}
	if !(rank("r4x16", 0x00) < rank("r4x16", 0x01) && rank("r4x16", 0x01) < rank("r4x16", 0x04) && rank("r4x16", 0x05) < rank("r4x16", 0xC1)) {
		t.Error("r4x16 ranks do not follow the format bits")
	}
}

func TestParseCBench(t *testing.T) {
	tests := []struct {
		name, out string
		want      cResult
		wantErr   bool
	}{
		{name: "line", out: "r4x16\tdat/q4.193\t151000\tbest 953.5 MB/s\tmedian 914.7 MB/s\n",
			want: cResult{Bytes: 151000, BestMBs: 953.5, MedianMBs: 914.7}},
		{name: "tab in file name", out: "tok3\ta\tb\t38516\tbest 154.7 MB/s\tmedian 150.2 MB/s\n",
			want: cResult{Bytes: 38516, BestMBs: 154.7, MedianMBs: 150.2}},
		{name: "empty", out: "", wantErr: true},
		{name: "two lines", out: "a\tb\t1\tbest 1 MB/s\tmedian 1 MB/s\nx\n", wantErr: true},
		{name: "bad size", out: "a\tb\t-1\tbest 1 MB/s\tmedian 1 MB/s\n", wantErr: true},
		{name: "bad rate", out: "a\tb\t1\tbest 1 MB/s\tmedian NaN MB/s\n", wantErr: true},
		{name: "no unit", out: "a\tb\t1\tbest 1\tmedian 1\n", wantErr: true},
		{name: "swapped labels", out: "a\tb\t1\tmedian 1 MB/s\tbest 1 MB/s\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCBench(tc.out)
			if tc.wantErr != (err != nil) || (!tc.wantErr && got != tc.want) {
				t.Errorf("parseCBench(%q) = %+v, %v; want %+v (error %v)", tc.out, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestRepsFor(t *testing.T) {
	target := 200 * time.Millisecond
	tests := []struct {
		secs float64
		want int
	}{
		{0.001, 200},
		{0.0003, 667},
		{1, minReps},
		{1e-12, maxReps},
		{0, maxReps},
	}
	for _, tc := range tests {
		if got := repsFor(tc.secs, target); got != tc.want {
			t.Errorf("repsFor(%v) = %d, want %d", tc.secs, got, tc.want)
		}
	}
}

func TestTimeGo(t *testing.T) {
	calls := 0
	var firstTimed, last time.Time
	dec := func(dst, src []byte, raw int) ([]byte, error) {
		calls++
		if raw != 7 {
			t.Fatalf("rawSize %d, want 7", raw)
		}
		if calls == 2 {
			firstTimed = time.Now()
		}
		time.Sleep(time.Millisecond)
		last = time.Now()
		return append(dst, make([]byte, 3*len(src))...), nil
	}
	const target = 12 * time.Millisecond
	secs, n, err := timeGo(dec, []byte("ab"), 7, target)
	if err != nil || n != 6 {
		t.Fatalf("timeGo = %v, %d, %v; want 6 bytes", secs, n, err)
	}
	if secs < 0.001 || secs > 0.5 {
		t.Errorf("median %v s per call, want about 1 ms", secs)
	}
	// A warm-up call, then at least minReps calls, timed for at least the
	// target and stopped once it has passed (each call sleeps 1 ms).
	if calls < 1+minReps || calls > 1+int(target/time.Millisecond) {
		t.Errorf("%d calls, want a warm-up plus %d..%d", calls, minReps, int(target/time.Millisecond))
	}
	if d := last.Sub(firstTimed); d < target {
		t.Errorf("timed calls lasted %v, want at least %v", d, target)
	}

	boom := errors.New("boom")
	calls = 0
	failing := func([]byte, []byte, int) ([]byte, error) {
		calls++
		if calls > 2 {
			return nil, boom
		}
		return []byte{1}, nil
	}
	if _, _, err := timeGo(failing, nil, 7, time.Second); !errors.Is(err, boom) {
		t.Errorf("timeGo with a failing repeat: err %v, want boom", err)
	}
}

func timing(codec, fam string, rank int, source string, bytes int, goSecs, cSecs []float64) fileTiming {
	f := &codecFile{Codec: codec, Source: source, Name: fam, Family: family{Name: fam, Rank: rank}}
	return fileTiming{File: f, Bytes: bytes, GoSecs: goSecs, CSecs: cSecs}
}

func TestAggregate(t *testing.T) {
	ts := []fileTiming{
		timing("tok3", "tok3 arith", 1, srcCorpus, 1_000_000, []float64{0.01}, []float64{0.02}),
		// Two files of one family: 3 MB over 0.01+0.02 s on Go (medians of
		// the rounds), over 0.02+0.01 s on C.
		timing("r4x16", "r4x16 O1", 1, srcBlocks, 1_000_000, []float64{0.01, 0.5, 0.009}, []float64{0.02}),
		timing("r4x16", "r4x16 O1", 1, srcBlocks, 2_000_000, []float64{0.02}, []float64{0.01, 0.01, 9}),
		timing("r4x16", "r4x16 O1", 1, srcCorpus, 500_000, []float64{0.001}, []float64{0.002}),
		timing("r4x16", "r4x16 O0", 0, srcBlocks, 100, []float64{1e-6}, []float64{1e-6}),
		timing("r4x8", "r4x8 O0", 0, srcCorpus, 100, nil, []float64{1}), // never timed: left out
	}
	fams := aggregate(ts, familyKey)
	var names []string
	for _, f := range fams {
		names = append(names, f.Name+"/"+f.Source)
	}
	if got, want := strings.Join(names, ","), "r4x16 O0/blocks,r4x16 O1/corpus,r4x16 O1/blocks,tok3 arith/corpus"; got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	o1 := fams[2]
	if o1.Files != 2 || o1.Bytes != 3_000_000 {
		t.Errorf("r4x16 O1 blocks: %d files, %d bytes; want 2, 3000000", o1.Files, o1.Bytes)
	}
	if math.Abs(o1.GoMBs()-100) > 1e-9 || math.Abs(o1.CMBs()-100) > 1e-9 || math.Abs(o1.Ratio()-1) > 1e-12 {
		t.Errorf("r4x16 O1 blocks: Go %v MB/s, C %v MB/s, ratio %v; want 100, 100, 1", o1.GoMBs(), o1.CMBs(), o1.Ratio())
	}
	if tk := fams[3]; math.Abs(tk.Ratio()-2) > 1e-12 || tk.Below() {
		t.Errorf("tok3: ratio %v below %v; want 2 (Go twice as fast), not below", tk.Ratio(), tk.Below())
	}
	codecs := aggregate(ts, codecKey)
	if len(codecs) != 3 || codecs[0].Name != "r4x16" || codecs[0].Source != srcCorpus || codecs[1].Files != 3 {
		t.Errorf("per-codec rows %+v", codecs)
	}
}

func TestWriteCodecTable(t *testing.T) {
	rs := []familyResult{
		{groupKey: groupKey{Codec: "r4x8", Name: "r4x8 O0", Source: srcCorpus}, Files: 2, Bytes: 3_000_000, GoSecs: 0.01, CSecs: 0.005},
		{groupKey: groupKey{Codec: "r4x16", Name: "r4x16 O1 X32", Source: srcBlocks}, Files: 1, Bytes: 1_500_000, GoSecs: 0.5, CSecs: 0.375}, // exactly 0.75
		{groupKey: groupKey{Codec: "arith", Name: "arith O0", Source: srcBlocks}, Files: 1, Bytes: 100, GoSecs: 0, CSecs: 1},
		{groupKey: groupKey{Codec: "tok3", Name: "tok3 a|b", Source: srcCorpus}, Files: 3, Bytes: 38_516, GoSecs: 0.0001, CSecs: 0.0002},
	}
	var b strings.Builder
	if err := writeCodecTable(&b, "family", rs); err != nil {
		t.Fatal(err)
	}
	want := "| family | source | files | decoded MB | Go MB/s | C MB/s | Go/C | target 0.75 |\n" +
		"|---|---|---:|---:|---:|---:|---:|---|\n" +
		"| r4x8 O0 | corpus | 2 | 3.000 | 300.0 | 600.0 | 0.50 | **below** |\n" +
		"| r4x16 O1 X32 | blocks | 1 | 1.500 | 3.0 | 4.0 | 0.75 | ok |\n" +
		"| arith O0 | blocks | 1 | 0.000 | - | 0.0 | - | - |\n" +
		"| tok3 a\\|b | corpus | 3 | 0.039 | 385.2 | 192.6 | 2.00 | ok |\n"
	if got := b.String(); got != want {
		t.Errorf("table:\n%s\nwant:\n%s", got, want)
	}
}

func TestWriteCodecReport(t *testing.T) {
	fams := []familyResult{
		{groupKey: groupKey{Codec: "r4x8", Name: "r4x8 O0", Source: srcCorpus}, Files: 2, Bytes: 3_000_000, GoSecs: 0.01, CSecs: 0.005},
	}
	r := codecReport{
		Cmdline: "go run ./cramfs-bench -codecs -rounds 3", When: time.Date(2025, 1, 2, 3, 4, 0, 0, time.UTC),
		Machine: "CPU X, 2 CPUs", CTimer: "prebuilt /x", Corpus: "/c", Rounds: 3, Target: 200 * time.Millisecond,
		Files: 3, Duplicates: 4, Families: fams,
		Codecs:  []familyResult{{groupKey: groupKey{Codec: "r4x8", Name: "r4x8", Source: srcCorpus}, Files: 2, Bytes: 3_000_000, GoSecs: 0.01, CSecs: 0.005}},
		Skipped: []skipped{{srcCorpus, "dat/x.1", "Go decoder: ransnx16: corrupt *stream*\nmore"}},
	}
	var b strings.Builder
	if err := writeCodecReport(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"Generated by `go run ./cramfs-bench -codecs -rounds 3` on 2025-01-02 03:04 UTC.",
		"- machine: CPU X, 2 CPUs\n",
		"SCALAR=1",
		"- corpus: /c ",
		"3 distinct selected (4 byte-identical copies dropped), 2 timed, 1 left out",
		"for 3 rounds",
		"| family | source |", "| codec | source |",
		"| r4x8 O0 | corpus | 2 | 3.000 | 300.0 | 600.0 | 0.50 | **below** |",
		"| r4x8 | corpus | 2 |",
		"- corpus/dat/x.1: Go decoder: ransnx16: corrupt \\*stream\\* more\n",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("CODECS.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "- blocks:") {
		t.Error("CODECS.md mentions blocks that were not used")
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCollectBlocks(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "r4x16", "s.c0.b1.1500"), []byte{0x01, 0xAA})
	writeFile(t, filepath.Join(dir, "r4x16", "s.c1.b2.1500"), []byte{0x01, 0xAA}) // same bytes
	writeFile(t, filepath.Join(dir, "r4x16", "odd-name"), []byte{0xC1})
	writeFile(t, filepath.Join(dir, "r4x8", "s.c0.b0.12"), []byte{7}) // bad order byte
	writeFile(t, filepath.Join(dir, "gzip", "s.c0.b0.12"), []byte{0x1f})
	files, skips, err := collectBlocks(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(skips) != 1 || skips[0].Name != filepath.Join("r4x8", "s.c0.b0.12") || !strings.Contains(skips[0].Reason, "order byte 7") {
		t.Errorf("skips %+v, want the r4x8 file with its order byte", skips)
	}
	got := map[string]*codecFile{}
	for _, f := range files {
		got[f.Name] = f
	}
	if len(files) != 3 {
		t.Fatalf("%d files, want 3: %v", len(files), got)
	}
	if f := got[filepath.Join("r4x16", "s.c0.b1.1500")]; f == nil || f.RawSize != 1500 || f.Family.Name != "r4x16 O1" || f.Source != srcBlocks {
		t.Errorf("s.c0.b1.1500: %+v, want raw size 1500, r4x16 O1, blocks", f)
	}
	if f := got[filepath.Join("r4x16", "odd-name")]; f == nil || f.RawSize != -1 || f.Family.Name != "r4x16 O1 RLE PACK" {
		t.Errorf("odd-name: %+v, want raw size -1, r4x16 O1 RLE PACK", f)
	}
	kept, dropped := dedupe(files)
	var keptNames []string
	for _, f := range kept {
		keptNames = append(keptNames, f.Name)
	}
	if got, want := strings.Join(keptNames, ","), "r4x16/odd-name,r4x16/s.c0.b1.1500"; dropped != 1 || got != want {
		t.Errorf("dedupe kept %s and dropped %d; want %s and 1", got, dropped, want)
	}
	if _, _, err := collectBlocks(t.TempDir()); err == nil {
		t.Error("collectBlocks accepted a directory without codec subdirectories")
	}
}

func TestCollectCorpusManifest(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "v", "a.0"), []byte{0})
	writeFile(t, filepath.Join(dir, "v", "b.1"), []byte{1})
	writeFile(t, filepath.Join(dir, "v", "c.9"), []byte{9})
	manifest := "compressed\tcodec\traw_input\tresult\tparams\traw_len\traw_transform\n" +
		"v/a.0\trans4x8\tin\tOK\torder0\t5\tnone\n" +
		"v/b.1\tarith\tin\tOK\to1\t5\tnone\n" +
		"v/c.9\tzstd\tin\tOK\t-\t5\tnone\n" +
		"v/bad\trans4x8\tin\tFAIL\t-\t5\tnone\n"
	writeFile(t, filepath.Join(dir, "codec_vectors_manifest.tsv"), []byte(manifest))
	files, skips, err := collectCorpus(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files[0].Codec != "r4x8" || files[0].Family.Name != "r4x8 O0" || files[0].RawSize != -1 ||
		files[1].Codec != "arith" || files[1].Family.Name != "arith O1" || files[1].Source != srcCorpus {
		t.Errorf("files %+v %+v", files[0], files[1])
	}
	if len(skips) != 1 || skips[0].Name != "v/c.9" {
		t.Errorf("skips %+v, want the zstd row", skips)
	}
}

// TestCodecsEndToEnd builds the C timer from ../shared/bench/htscodecs-bench.c
// with gcc, then runs the codec mode on two tiny corpus vectors (a 35-byte
// rANS Nx16 CAT+RLE stream and a 747-byte name tokeniser stream) and checks
// CODECS.md. It needs gcc and libhtscodecs-dev, which CI does not install,
// so it runs only when CRAMFS_BENCH_CODECS=1 is set; then a missing corpus,
// gcc or library skips it, or fails it under CI=true.
func TestCodecsEndToEnd(t *testing.T) {
	if os.Getenv("CRAMFS_BENCH_CODECS") != "1" {
		t.Skip("set CRAMFS_BENCH_CODECS=1 to run (needs gcc and libhtscodecs-dev)")
	}
	dir := corpus.Dir(t)
	if _, err := exec.LookPath("gcc"); err != nil {
		corpus.Missing(t, "gcc: %v", err)
	}
	src := filepath.Join(corpus.Root(), "..", "shared", "bench", "htscodecs-bench.c")
	if _, err := os.Stat(src); err != nil {
		corpus.Missing(t, "C timer source: %v", err)
	}
	scratch := t.TempDir()
	if _, _, err := resolveCTimer(context.Background(), "", src, scratch); err != nil {
		corpus.Missing(t, "building the C timer (libhtscodecs-dev): %v", err)
	}
	out := filepath.Join(t.TempDir(), "bench")
	var stdout, log bytes.Buffer
	cc := codecConfig{
		corpus: dir, cSrc: src, out: out, rounds: 2, target: 5 * time.Millisecond,
		only:    regexp.MustCompile(`(^|/)(qsimd\.69|nv2\.names\.17)$`),
		cmdline: "go run ./cramfs-bench -codecs (test)",
	}
	if err := runCodecs(context.Background(), cc, &stdout, &log); err != nil {
		t.Fatalf("runCodecs: %v\n%s", err, log.String())
	}
	md, err := os.ReadFile(filepath.Join(out, "CODECS.md"))
	if err != nil {
		t.Fatal(err)
	}
	rowRe := regexp.MustCompile(`(?m)^\| (r4x16 CAT RLE|tok3 arith|r4x16|tok3) \| corpus \| 1 \| (0\.001|0\.039) \| [0-9.]+ \| [0-9.]+ \| [0-9.]+ \| (ok|\*\*below\*\*) \|$`)
	if rows := rowRe.FindAllString(string(md), -1); len(rows) != 4 { // by family + by codec, for each
		t.Errorf("want 2 family rows and 2 codec rows with real rates, found %d:\n%s", len(rows), md)
	}
	if !strings.Contains(string(md), "2 distinct selected (1 byte-identical copy dropped), 2 timed") {
		t.Errorf("CODECS.md stream counts:\n%s", md)
	}
	if rows := rowRe.FindAllString(stdout.String(), -1); len(rows) != 2 {
		t.Errorf("stdout table has %d family rows, want 2:\n%s", len(rows), stdout.String())
	}
	if n := strings.Count(log.String(), "  round "); n != 4 {
		t.Errorf("%d progress lines, want 2 files x 2 rounds:\n%s", n, log.String())
	}
}

// FuzzClassify checks that classify never panics and either names a family
// of the codec or returns an errClassify error, for any codec and bytes.
// Seeds: the first bytes of the corpus's codec vectors when the corpus is
// present, and crafted headers of every codec.
func FuzzClassify(f *testing.F) {
	for _, c := range codecSpecs {
		f.Add(c.Name, []byte{0x01, 0x00})
	}
	f.Add("fqzcomp", []byte{0x87, 0x10, 5, 1, 2})
	f.Add("tok3", []byte{0x10, 0, 0, 0, 2, 0, 0, 0, 1, 0xAA})
	dir := os.Getenv("CRAMFS_CORPUS")
	if dir == "" {
		dir = filepath.Join(corpus.Root(), "..", "shared", "corpus")
	}
	for _, p := range []string{
		"htscodecs/tests/dat/r4x8/q4.1", "htscodecs/tests/dat/r4x16/q4.193", "htscodecs/tests/dat/arith/q4.9",
		"htscodecs/tests/dat/fqzcomp/q4.0", "htscodecs/tests/names/tok3/nv2.names.17",
	} {
		if data, err := os.ReadFile(filepath.Join(dir, p)); err == nil {
			f.Add(strings.Split(p, "/")[3], data[:min(len(data), 64)]) // the codec directory
		}
	}
	f.Fuzz(func(t *testing.T, codec string, src []byte) {
		fam, err := classify(codec, src)
		if err != nil {
			if !errors.Is(err, errClassify) {
				t.Fatalf("classify(%q, % x): error %v does not wrap errClassify", codec, src, err)
			}
			return
		}
		if codecIndex(codec) < 0 || !strings.HasPrefix(fam.Name, codec+" ") && fam.Name != codec {
			t.Fatalf("classify(%q, % x) = %q, not a family of that codec", codec, src, fam.Name)
		}
	})
}
