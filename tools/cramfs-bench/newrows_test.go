package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cramfs/cramfs/internal/corpus"
)

func TestParseProcStatCPU(t *testing.T) {
	// pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
	line := "4242 (cramfs (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0\n"
	got, err := parseProcStatCPU(line)
	if err != nil || got != 3250*time.Millisecond {
		t.Errorf("parseProcStatCPU = %v, %v; want 3.25 s (325 ticks)", got, err)
	}
	for _, bad := range []string{"4242 cramfs S 1", "4242 (x) S 1 2 3", "4242 (x) S 1 4242 4242 0 -1 1 1 0 0 0 x 75 0"} {
		if _, err := parseProcStatCPU(bad); err == nil {
			t.Errorf("parseProcStatCPU(%q) passed", bad)
		}
	}
	if _, err := processCPU(os.Getpid()); err != nil {
		t.Errorf("processCPU(self): %v", err)
	}
	if _, err := perGiB(time.Second, 0); err == nil {
		t.Error("perGiB of no bytes passed")
	}
	if v, err := perGiB(time.Second, 1<<29); err != nil || v != 2 {
		t.Errorf("perGiB(1 s, 0.5 GiB) = %v, %v; want 2", v, err)
	}
}

// TestStatOf: the slowest and fastest rows take the extreme job of every
// round, with the round's RSS; the whole row takes the samples as they are.
func TestStatOf(t *testing.T) {
	ss := []sample{{Secs: 5, RSSKB: 7, Jobs: []float64{3, 5, 1}}, {Secs: 6, RSSKB: 9, Jobs: []float64{2, 6, 4}}}
	if got := statWhole.of(ss); len(got) != 2 || got[0].Secs != 5 || got[1].Secs != 6 {
		t.Errorf("whole: %+v", got)
	}
	slow, fast := statSlowest.of(ss), statFastest.of(ss)
	if slow[0].Secs != 5 || slow[1].Secs != 6 || fast[0].Secs != 1 || fast[1].Secs != 2 || fast[1].RSSKB != 9 {
		t.Errorf("slowest %+v, fastest %+v; want 5, 6 and 1, 2 with the RSS", slow, fast)
	}
}

// TestRunCaseAtOnce: a case of jobs at once gives three rows per pair of
// sides, each from the samples of the same rounds.
func TestRunCaseAtOnce(t *testing.T) {
	jobs := func(js ...float64) side {
		return side{Label: "x", Run: func(context.Context) (sample, error) {
			return sample{Secs: slices.Max(js) + 0.5, Jobs: js, Out: "8 8"}, nil
		}}
	}
	k := benchCase{ID: "readers8/v30", CheckOut: "record counts", Sides: []side{jobs(1, 3), jobs(2, 8)}, Pairs: atOncePairs(0, 1, "1.23.1")}
	rs, err := runCase(context.Background(), k, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		measure string
		c, s    float64
	}{{measureAllDone, 3.5, 8.5}, {measureSlowest, 3, 8}, {measureFastest, 1, 2}}
	if len(rs) != len(want) {
		t.Fatalf("%d rows, want %d", len(rs), len(want))
	}
	for i, w := range want {
		r := rs[i]
		if r.Measure != w.measure || median(secsOf(r.Cramfs)) != w.c || median(secsOf(r.Samtools)) != w.s || len(r.Cramfs) != 3 {
			t.Errorf("row %d: %s, %v against %v; want %s, %v against %v", i, r.Measure, secsOf(r.Cramfs), secsOf(r.Samtools), w.measure, w.c, w.s)
		}
	}
}

// TestTimeAtOnce: jobs run at once (the whole takes about the longest
// job, not their sum), outputs in job order, and a failing job fails the
// sample naming it.
func TestTimeAtOnce(t *testing.T) {
	sh := func(script string) command { return command{Path: "sh", Args: []string{"-c", script}} }
	s, err := timeAtOnce(context.Background(), [][]command{
		{sh("sleep 0.3; echo a")},
		{sh("sleep 0.3; printf 'x\\ny\\nz\\n'"), sh("wc -l")},
		{sh("sleep 0.3; echo c")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.Out != "a 3 c" || len(s.Jobs) != 3 {
		t.Errorf("outputs %q, %d job times; want \"a 3 c\" and 3", s.Out, len(s.Jobs))
	}
	if s.Secs < slices.Max(s.Jobs) || s.Secs > 0.85 {
		t.Errorf("whole %.3f s, jobs %v: want at least the longest job and less than the sum of three 0.3 s sleeps", s.Secs, s.Jobs)
	}
	if s.RSSKB <= 0 {
		t.Errorf("RSS %d, want the jobs' sum", s.RSSKB)
	}
	_, err = timeAtOnce(context.Background(), [][]command{{sh("true")}, {sh("exit 3")}})
	if err == nil || !strings.Contains(err.Error(), "job 2 of 2 at once") {
		t.Errorf("err = %v, want job 2's failure", err)
	}
}

func TestProducerCPUPerGiB(t *testing.T) {
	s, err := producerCPUPerGiB(context.Background(), command{Path: "sh", Args: []string{"-c", "head -c 3000000 /dev/zero"}})
	if err != nil || s.Out != "3000000" || s.Secs < 0 {
		t.Errorf("producerCPUPerGiB = %+v, %v; want 3000000 bytes counted", s, err)
	}
	if _, err := producerCPUPerGiB(context.Background(), command{Path: "true"}); err == nil {
		t.Error("a producer writing nothing passed")
	}
}

// fakeTools writes two samtools scripts, the oracle built with libcurl
// and the newest without, as their --version says.
func fakeTools(t *testing.T) []samtool {
	dir := t.TempDir()
	var out []samtool
	for _, v := range []struct{ version, curl string }{{"1.16.1", "yes"}, {"1.23.1", "no"}} {
		p := filepath.Join(dir, "samtools-"+v.version)
		script := "#!/bin/sh\necho 'samtools " + v.version + "'\necho '    Features: build=configure libcurl=" + v.curl + "'\n"
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		out = append(out, samtool{Path: p, Version: v.version})
	}
	return out
}

func testBench(t *testing.T) (*bench, flavour) {
	dir := t.TempDir()
	f := flavour{ID: "v30", Name: "3.0", CRAM: filepath.Join(dir, "data", "sample.v30.cram")}
	b := &bench{cramfs: "/bin/cramfs", tools: fakeTools(t), data: &dataset{Dir: filepath.Dir(f.CRAM), Ref: filepath.Join(dir, "data", "ref.fa"), Flavours: []flavour{f}},
		threads: 2, scratch: filepath.Join(dir, "scratch"), warmCache: filepath.Join(dir, "scratch", "warm-cache"), regions: []string{"chr1:1-1000"}}
	return b, f
}

// TestFloorCases: dd once for both tables, view -c per samtools, every
// row the CPU of the cramfs mount against the floor's, checked against the
// floor target.
func TestFloorCases(t *testing.T) {
	b, f := testBench(t)
	ks := b.floorCases(f)
	if len(ks) != 2 || ks[0].ID != "floor-dd/v30" || ks[1].ID != "floor-view/v30" {
		t.Fatalf("cases %v, want floor-dd/v30 and floor-view/v30", ks)
	}
	dd, view := ks[0], ks[1]
	if len(dd.Sides) != 2 || len(dd.Pairs) != 2 || dd.Pairs[0].Tool != "1.16.1" || dd.Pairs[1].Tool != "1.23.1" || dd.Pairs[0].Cramfs != dd.Pairs[1].Cramfs {
		t.Errorf("dd: %d sides, pairs %+v; want one dd per server, in a row per samtools", len(dd.Sides), dd.Pairs)
	}
	if len(view.Sides) != 4 || len(view.Pairs) != 2 || view.CheckOut == "" {
		t.Errorf("view: %d sides, %d pairs, check %q; want a cramfs and a floor side per samtools, counts checked", len(view.Sides), len(view.Pairs), view.CheckOut)
	}
	for _, k := range ks {
		if k.Group != groupFloor || k.Late != 1 || k.Setup == nil {
			t.Errorf("%s: group %q, late %d; want %q, 1 and a setup", k.ID, k.Group, k.Late, groupFloor)
		}
		for _, p := range k.Pairs {
			if p.Measure != measureCPU || !strings.HasPrefix(k.Sides[p.Cramfs].Label, "cramfs mount") || !strings.HasPrefix(k.Sides[p.Baseline].Label, "go-fuse floor") {
				t.Errorf("%s: pair %+v (%s against %s)", k.ID, p, k.Sides[p.Cramfs].Label, k.Sides[p.Baseline].Label)
			}
		}
	}
	if d := dd.Sides[0].Desc; !strings.Contains(d, "--cache-size FILE+25%+64M") || !strings.Contains(d, "fadvise DONTNEED") || !strings.Contains(d, "dd if=MNT/sample.v30.bam bs=1M of=/dev/null") {
		t.Errorf("dd cramfs side: %s", d)
	}
	if !slices.ContainsFunc(ratioTargets, func(r ratioTarget) bool { return r.Group == groupFloor && r.Max == 1.25 }) {
		t.Error("no 1.25× target on the floor rows")
	}
	if got := cacheToHold(700 << 20); got != "939M" {
		t.Errorf("cacheToHold(700 MiB) = %s, want 700+175+64 = 939M", got)
	}
}

// TestReadersAndServeLoadCases: eight different copies; three rows per
// samtools; the serve rows only for a samtools that reads http://.
func TestReadersAndServeLoadCases(t *testing.T) {
	b, f := testBench(t)
	stems := copyStems(f)
	if len(stems) != 8 || len(slices.Compact(slices.Clone(stems))) != 8 || stems[7] != "sample.v30.r8" {
		t.Errorf("copy stems %v, want 8 different", stems)
	}
	r := b.readersCase(f)
	if r.ID != "readers8/v30" || len(r.Sides) != 4 || len(r.Pairs) != 6 || r.CheckOut == "" {
		t.Errorf("readers: %s, %d sides, %d pairs, check %q", r.ID, len(r.Sides), len(r.Pairs), r.CheckOut)
	}
	if !strings.Contains(r.Sides[0].Desc, b.copiesDir(f)) || !strings.Contains(r.Sides[1].Desc, "sample.v30.r1.cram") {
		t.Errorf("readers read the copies: %q; %q", r.Sides[0].Desc, r.Sides[1].Desc)
	}
	measures := map[string]stat{}
	for _, p := range r.Pairs {
		measures[p.Measure] = p.Stat
	}
	if measures[measureAllDone] != statWhole || measures[measureSlowest] != statSlowest || measures[measureFastest] != statFastest {
		t.Errorf("readers' rows: %v", measures)
	}
	ks := b.serveLoadCases(f)
	if len(ks) != 2 || ks[0].ID != "serve-cpu/v30" || ks[1].ID != "serve8/v30" {
		t.Fatalf("serve cases %v", ks)
	}
	cpu, eight := ks[0], ks[1]
	if cpu.Skip != "" || len(cpu.Pairs) != 1 || cpu.Pairs[0].Tool != "1.16.1" || cpu.Pairs[0].Measure != measureCPUPerGiB {
		t.Errorf("serve-cpu: skip %q, pairs %+v; want one row, against the samtools with libcurl", cpu.Skip, cpu.Pairs)
	}
	if len(eight.Pairs) != 3 || eight.Pairs[0].Tool != "1.16.1" {
		t.Errorf("serve8: pairs %+v", eight.Pairs)
	}
	if d := cpu.Sides[1].Desc; !strings.Contains(d, "--no-PG") || !strings.Contains(d, "-u CRAM-URL") {
		t.Errorf("serve-cpu samtools side: %s", d)
	}
	b.tools = b.tools[1:]
	for _, k := range b.serveLoadCases(f) {
		if !strings.Contains(k.Skip, "libcurl") {
			t.Errorf("%s without a samtools reading http://: skip %q", k.ID, k.Skip)
		}
	}
}

// TestCopiesSetup: eight files of their own (distinct inodes, as cramfs
// caches by identity) with their .crai, indexed once, made once per run.
func TestCopiesSetup(t *testing.T) {
	b, f := testBench(t)
	if err := os.MkdirAll(filepath.Dir(f.CRAM), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{f.CRAM, f.CRAM + ".crai"} {
		if err := os.WriteFile(p, []byte("cram bytes of "+filepath.Base(p)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	calls := filepath.Join(t.TempDir(), "calls")
	b.cramfs = filepath.Join(t.TempDir(), "cramfs")
	if err := os.WriteFile(b.cramfs, []byte("#!/bin/sh\necho \"$@\" >> "+calls+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	setup := b.copiesSetup(f)
	for range 2 {
		if err := setup(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	orig, err := os.Stat(f.CRAM)
	if err != nil {
		t.Fatal(err)
	}
	for _, stem := range copyStems(f) {
		p := filepath.Join(b.copiesDir(f), stem+".cram")
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if os.SameFile(st, orig) {
			t.Errorf("%s is the original file", p)
		}
		if got, err := os.ReadFile(p + ".crai"); err != nil || string(got) != "cram bytes of sample.v30.cram.crai" {
			t.Errorf("%s.crai: %q, %v", p, got, err)
		}
	}
	got, err := os.ReadFile(calls)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(got)), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "index ") || !strings.HasSuffix(lines[0], b.copiesDir(f)) {
		t.Errorf("cramfs ran %q, want one index of the copies' directory", lines)
	}
}

// TestBigCases: first access, sequential read and regions of the ×16
// file, made by merging 16 copies in coordinate order with a .crai.
func TestBigCases(t *testing.T) {
	b, f := testBench(t)
	ks := b.bigCases(f)
	var ids []string
	for _, k := range ks {
		ids = append(ids, k.ID)
		if k.Flavour != "3.0 ×16" || !strings.HasSuffix(k.Variant, ", file ×16") || k.Late != 1 || k.Setup == nil {
			t.Errorf("%s: flavour %q, variant %q, late %d", k.ID, k.Flavour, k.Variant, k.Late)
		}
		base, n, ok := scaledCase(k.ID)
		if !ok || n != 16 || !strings.HasSuffix(base, "/v30") {
			t.Errorf("%s: not a ×16 case of a v30 case (%q, %d)", k.ID, base, n)
		}
	}
	if got := strings.Join(ids, " "); got != "first-access-x16/v30 seq-read-x16/v30 regions-x16/v30" {
		t.Errorf("ids %s", got)
	}
	if ks[0].Group != "first access" || ks[1].Group != "sequential read" || ks[2].Group != "region queries" || ks[2].Pairs[0].Measure != measureRecords {
		t.Errorf("groups %q %q %q", ks[0].Group, ks[1].Group, ks[2].Group)
	}
	big := flavour{CRAM: filepath.Join(b.scratch, "x16", "sample.v30.x16.cram")}
	m := b.bigMerge(f, big)
	if n := strings.Count(m.String(), f.CRAM); n != 16 {
		t.Errorf("merge reads %d copies: %s", n, m)
	}
	for _, want := range []string{" merge -c -p -f ", "cram,version=3.0", "--write-index", "-o " + big.CRAM} {
		if !strings.Contains(m.String(), want) {
			t.Errorf("merge %s lacks %q", m, want)
		}
	}
}

// TestFloorMount mounts the floor and reads its file back; the page cache
// the read filled is dropped by dropPageCache. Needs FUSE.
func TestFloorMount(t *testing.T) {
	corpus.RequireFUSE(t)
	data := bytes.Repeat([]byte("floor bytes "), 300_000)
	mnt := t.TempDir()
	srv, err := mountFloor(mnt, "x.bam", data)
	if err != nil {
		corpus.Missing(t, "FUSE mount: %v", err)
	}
	defer srv.Unmount()
	p := filepath.Join(mnt, "x.bam")
	st, err := os.Stat(p)
	if err != nil || st.Size() != int64(len(data)) || st.Mode().Perm() != 0o444 {
		t.Fatalf("stat: %v, %v; want %d bytes, mode 0444", st, err, len(data))
	}
	got, err := os.ReadFile(p)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read %d bytes (%v), want the %d given", len(got), err, len(data))
	}
	if err := os.WriteFile(p, nil, 0o644); err == nil {
		t.Error("the floor took a write")
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if n, _, err := residentPages(f); err != nil || n == 0 {
		t.Errorf("after a read: %d pages resident (%v), want the file's", n, err)
	}
	if err := dropPageCache(p); err != nil {
		t.Error(err)
	}
	if n, _, err := residentPages(f); err != nil || n != 0 {
		t.Errorf("after dropPageCache: %d pages resident (%v)", n, err)
	}
	if err := floorMain([]string{"only-one"}); err == nil {
		t.Error("floorMain took one argument")
	}
}

// TestNullRows: convert at level 0 and first access also compare with
// samtools writing its BAM to /dev/null, in rows of their own after the
// written-file rows, which stay first (the scale checks read the first
// row of a case); other levels have no such rows.
func TestNullRows(t *testing.T) {
	b, f := testBench(t)
	nulls := func(k benchCase, measure string) int {
		n := 0
		for i, p := range k.Pairs {
			cram, base := k.Sides[p.Cramfs], k.Sides[p.Baseline]
			if p.Measure != measure {
				continue
			}
			n++
			if i < len(b.tools) {
				t.Errorf("%s: a /dev/null row at %d, before the written-file rows", k.ID, i)
			}
			if !strings.Contains(base.Desc, " -o /dev/null ") || !strings.HasSuffix(base.Label, "-o /dev/null") {
				t.Errorf("%s: baseline %q (%s) does not write to /dev/null", k.ID, base.Label, base.Desc)
			}
			if k.Group == "convert" && !strings.Contains(cram.Desc, " -o /dev/null ") {
				t.Errorf("%s: cramfs side %s does not write to /dev/null", k.ID, cram.Desc)
			}
		}
		return n
	}
	for _, lv := range convertLevels {
		k := b.convertCase(f, lv.variant, lv.level, lv.samOpt)
		want := 0
		if lv.level == 0 {
			want = len(b.tools)
		}
		if got := nulls(k, measureNull); got != want {
			t.Errorf("%s: %d /dev/null rows, want %d", k.ID, got, want)
		}
	}
	k := b.firstAccessCase(f)
	if got := nulls(k, measureScanNull); got != len(b.tools) {
		t.Errorf("%s: %d /dev/null rows, want %d", k.ID, got, len(b.tools))
	}
	if k.Pairs[0].Measure != measureScan {
		t.Errorf("%s: first row %q, want the written file's", k.ID, k.Pairs[0].Measure)
	}
}
