package service

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine"
	cfs "github.com/cramfs/cramfs/fs"
	"github.com/cramfs/cramfs/internal/corpus"
)

// The tests in this file mount real kernel FUSE filesystems in temporary
// directories and read them with samtools, comparing with what samtools
// itself makes of the same CRAM files.

// mountConfig is what cmdMount's flags would say; zero fields keep the
// flags' defaults.
type mountConfig struct {
	refs      []string
	cacheSize string // --cache-size
	level     string // --level
	readahead string // --readahead
	cacheDir  string // --cache-dir; "" is a new temporary directory
	mnt       string // the mount point; "" is a new temporary directory
	// maxOpenFiles is engine.Options.MaxOpenFiles (cramfs mount derives it
	// from the open file limit; it has no flag); 0 is the default.
	maxOpenFiles int
	// timeout, when set, is the kernel's entry and attribute timeout
	// (fs.Options), so that names are looked up again that often.
	timeout time.Duration
}

// mounted is an in-process mount built the way cmdMount builds it.
type mounted struct {
	mnt      string
	cacheDir string
	level    int // --level in effect, as `cramfs convert --level` takes it
	srv      *cfs.Server
	svc      *Service
	mgr      *engine.Manager
	store    *reference.Store
	op       *opener
	root     *os.Root // the mount's source tree
	log      *syncBuffer
	done     bool // unmounted; only the test's goroutine uses it
}

// openBAM opens the BAM of the CRAM rel of the mount's source through the
// mount's opener, as a lookup would.
func (m *mounted) openBAM(t *testing.T, rel string) *engine.VirtualBAM {
	t.Helper()
	v, err := m.op.OpenBAM(t.Context(), cramRef(t, m.root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return v.(*engine.VirtualBAM)
}

// cramRef is the fs.CRAMRef of the CRAM rel (no links) below root, as a
// lookup makes it.
func cramRef(t *testing.T, root *os.Root, rel string) cfs.CRAMRef {
	t.Helper()
	fi, err := root.Lstat(rel)
	if err != nil {
		t.Fatal(err)
	}
	return cfs.CRAMRef{Root: root, Rel: rel, Stat: *fi.Sys().(*syscall.Stat_t)}
}

// mountT mounts src on a fresh temporary directory, with the objects
// Service.Mount builds (reference store, engine.Manager with a temporary
// cache directory, opener, fs.Mount) from the same options and defaults as
// cramfs mount (-@ 2), and unmounts it at cleanup. Unlike Service.Mount it
// reads references only from -T (as samtools is run here), sets no
// process memory limit and starts no status server.
func mountT(t *testing.T, src string, cfg mountConfig) *mounted {
	t.Helper()
	corpus.RequireFUSE(t)
	cacheDir := cfg.cacheDir
	if cacheDir == "" {
		cacheDir = t.TempDir()
	}
	opts := Options{References: cfg.refs, CacheDir: cacheDir, Threads: 2, Level: DefaultLevel}
	sizeText := cmp.Or(cfg.cacheSize, DefaultCacheSize)
	size, err := ParseSize(sizeText)
	if err != nil {
		t.Fatal(err)
	}
	opts.CacheSize = size
	if cfg.level != "" {
		if opts.Level, err = strconv.Atoi(cfg.level); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.readahead != "" {
		if opts.Readahead, err = strconv.Atoi(cfg.readahead); err != nil {
			t.Fatal(err)
		}
	}
	logBuf := &syncBuffer{}
	opts.Log = slog.New(slog.NewTextHandler(logBuf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	level, err := opts.check()
	if err != nil {
		t.Fatal(err)
	}
	store, err := reference.Open(opts.References, reference.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	svc := newService(opts, level, store, cfg.maxOpenFiles)
	op := newOpener(svc.mgr, svc.refs, svc.copt, opts.Log)
	mnt := cfg.mnt
	if mnt == "" {
		mnt = t.TempDir()
	}
	srv, err := cfs.Mount(src, mnt, op, cfs.Options{Logger: opts.Log, EntryTimeout: cfg.timeout, AttrTimeout: cfg.timeout})
	if err != nil {
		op.Close()
		svc.Close()
		t.Fatalf("Mount: %v", err)
	}
	m := &mounted{mnt: mnt, cacheDir: cacheDir, level: opts.Level, srv: srv, svc: svc, mgr: svc.mgr, store: store, op: op, root: srv.Root(), log: logBuf}
	t.Cleanup(func() {
		m.unmount(t)
		if t.Failed() {
			t.Logf("server log:\n%s", logBuf.String())
		}
	})
	return m
}

// unmount unmounts (once: again at cleanup does nothing) and closes what
// the mount opened, as cmdMount does at exit.
func (m *mounted) unmount(t *testing.T) {
	t.Helper()
	if m.done {
		return
	}
	m.done = true
	if err := m.srv.Unmount(); err != nil {
		t.Errorf("Unmount: %v", err)
		if err := cfs.Unmount(m.mnt); err != nil {
			t.Errorf("cfs.Unmount: %v", err)
		}
	}
	m.op.Close()
	m.svc.Close()
}

// heldCRAMs counts the CRAM files the mount's opener holds open.
func (m *mounted) heldCRAMs() int {
	m.op.mu.Lock()
	defer m.op.mu.Unlock()
	n := 0
	for _, e := range m.op.entries.Values() {
		if e.src != nil && e.err == nil {
			n++
		}
	}
	return n
}

// mountFixture is one CRAM file checked through a mount.
type mountFixture struct {
	root   string   // the directory mounted (the source)
	rel    string   // the CRAM, relative to root
	refs   []string // absolute reference paths
	samMD5 string   // md5 of `samtools view -h --no-PG` of the CRAM
	sam    string   // testdata: the expected SAM file; "" for the corpus
}

func (f mountFixture) cram() string { return filepath.Join(f.root, f.rel) }

// fileExists reports whether there is an entry at p (a link not followed).
func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// bamIn returns the path of the fixture's BAM in the mount mnt.
func (f mountFixture) bamIn(mnt string) string {
	return filepath.Join(mnt, strings.TrimSuffix(f.rel, ".cram")+".bam")
}

// testdataFixtures lists the fixtures of testdata/cram/manifest.tsv that
// samtools decodes without error.
func testdataFixtures(t *testing.T) []mountFixture {
	root := testdata()
	var out []mountFixture
	for _, e := range corpus.CRAMManifest(t, testdata("cram", "manifest.tsv")) {
		if e.RC != "0" {
			continue
		}
		out = append(out, mountFixture{
			root:   root,
			rel:    e.Path,
			refs:   []string{filepath.Join(root, e.Ref)},
			samMD5: e.SAMMD5,
			sam:    filepath.Join(root, strings.TrimSuffix(e.Path, ".cram")+".expected.sam"),
		})
	}
	if len(out) == 0 {
		t.Fatal("testdata manifest lists no fixtures")
	}
	return out
}

// corpusFixtures lists the corpus files samtools reads without error,
// leaving out the truncated ones and the one without EOF container.
func corpusFixtures(t *testing.T) []mountFixture {
	dir := corpus.Dir(t)
	var out []mountFixture
	for _, e := range corpus.CRAMManifest(t, filepath.Join(dir, "cram_manifest.tsv")) {
		if e.RC != "0" || strings.Contains(e.Path, "truncated") || strings.Contains(e.Path, "noeof") {
			continue
		}
		fx := mountFixture{root: dir, rel: e.Path, samMD5: e.SAMMD5}
		if e.Ref != "" {
			fx.refs = []string{filepath.Join(dir, e.Ref)}
		}
		out = append(out, fx)
	}
	return out
}

// byRefs groups fixtures by their references: one mount per group.
func byRefs(fx []mountFixture) ([]string, map[string][]mountFixture) {
	groups := map[string][]mountFixture{}
	var order []string
	for _, f := range fx {
		k := strings.Join(f.refs, "\x00")
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], f)
	}
	return order, groups
}

// regionQueries is how many `samtools view -c` region queries each
// coordinate-sorted file of at least bigFile records gets; smaller files,
// whose few reads a handful of regions already cover, get
// smallRegionQueries (to keep the package fast).
const (
	regionQueries      = 50
	smallRegionQueries = 10
	bigFile            = 100
)

// samtoolsSide is what samtools itself makes of one CRAM content: its
// own BAM (indexed), idxstats and region counts. Files whose SAM is the
// same share it.
type samtoolsSide struct {
	bam      string
	idxstats []byte
	regions  []string
	counts   []string
}

// checker runs the mount checks and remembers samtools' side per content.
type checker struct {
	tmp  string
	mu   sync.Mutex
	side map[string]*samtoolsSide
	// sorted counts the coordinate-sorted files seen, unsorted the others.
	sorted, unsorted int
}

func TestMountServesTestdataFixtures(t *testing.T) {
	requireMount(t)
	fx := testdataFixtures(t)
	c := &checker{tmp: t.TempDir(), side: map[string]*samtoolsSide{}}
	refs := []string{testdata("ref", "ce.fa"), testdata("ref", "xx.fa")}
	m := mountT(t, testdata(), mountConfig{refs: refs})
	for _, f := range fx {
		t.Run(f.rel, func(t *testing.T) { c.check(t, m, f) })
	}
	t.Logf("%d fixtures: %d coordinate-sorted, %d not", len(fx), c.sorted, c.unsorted)
}

// TestMountServesOtherLevels checks a few fixtures through mounts serving
// deflated BGZF blocks (the default serves stored blocks).
func TestMountServesOtherLevels(t *testing.T) {
	requireMount(t)
	var fx []mountFixture
	for _, f := range testdataFixtures(t) {
		switch filepath.Base(f.rel) {
		case "ce_1000.3.0-multislice.cram", "ce_unmap2.3.1-archive.cram", "xx_tlen.2.1.cram", "ce_5b.2.1.cram":
			fx = append(fx, f)
		}
	}
	if len(fx) != 4 {
		t.Fatalf("found %d of the 4 fixtures", len(fx))
	}
	for _, level := range []string{"1", "6"} {
		t.Run("level"+level, func(t *testing.T) {
			c := &checker{tmp: t.TempDir(), side: map[string]*samtoolsSide{}}
			m := mountT(t, testdata(), mountConfig{refs: []string{testdata("ref", "ce.fa"), testdata("ref", "xx.fa")}, level: level})
			for _, f := range fx {
				t.Run(f.rel, func(t *testing.T) { c.check(t, m, f) })
			}
		})
	}
}

func TestMountServesCorpus(t *testing.T) {
	requireMount(t)
	fx := corpusFixtures(t)
	if len(fx) == 0 {
		t.Fatal("corpus manifest lists no usable files")
	}
	c := &checker{tmp: t.TempDir(), side: map[string]*samtoolsSide{}}
	order, groups := byRefs(fx)
	for _, k := range order {
		g := groups[k]
		// The corpus directory itself is the source (read only); one
		// mount per reference, as each file is decoded with its own.
		m := mountT(t, g[0].root, mountConfig{refs: g[0].refs})
		for _, f := range g {
			t.Run(f.rel, func(t *testing.T) { c.check(t, m, f) })
		}
	}
	t.Logf("%d files: %d coordinate-sorted, %d not", len(fx), c.sorted, c.unsorted)
}

// check compares the BAM and BAI that mount mnt serves for f with samtools'
// view of the CRAM, with `cramfs convert` at the mount's level, and, when the file is
// coordinate-sorted, with samtools' idxstats, index and region counts.
func (c *checker) check(t *testing.T, m *mounted, f mountFixture) {
	bam := f.bamIn(m.mnt)
	// A real x.bam beside x.cram is shown instead of the synthetic one.
	if real := strings.TrimSuffix(f.cram(), ".cram") + ".bam"; fileExists(real) {
		got, err := os.ReadFile(bam)
		want, werr := os.ReadFile(real)
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, %v; want the real %s (%d bytes, %v)", bam, len(got), err, real, len(want), werr)
		}
		t.Logf("the source has a real %s: served instead of the synthetic BAM", filepath.Base(real))
		return
	}
	sam := mustSamtools(t, "view", "-h", "--no-PG", bam)
	if f.sam != "" {
		want, err := os.ReadFile(f.sam)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(sam, want) {
			t.Errorf("samtools view -h of the mounted BAM differs from %s (%d bytes, want %d)", filepath.Base(f.sam), len(sam), len(want))
		}
	}
	if got := md5Hex(sam); got != f.samMD5 {
		t.Errorf("samtools view -h of the mounted BAM: md5 %s, want %s", got, f.samMD5)
	}
	// quickcheck wants @SQ lines unless told (-u) the file is unmapped.
	qc := []string{"quickcheck", "-v"}
	if !bytes.Contains(sam, []byte("@SQ\t")) {
		qc = append(qc, "-u")
	}
	if _, err := samtools(append(qc, bam)...); err != nil {
		t.Errorf("quickcheck: %v", err)
	}
	served, err := os.ReadFile(bam)
	if err != nil {
		t.Fatal(err)
	}
	if want := convertAt(t, m.level, f.cram(), f.refs); !bytes.Equal(served, want) {
		t.Errorf("mounted BAM (%d bytes, md5 %s) differs from cramfs convert --level %d (%d bytes, md5 %s)",
			len(served), md5Hex(served), m.level, len(want), md5Hex(want))
	}
	// Coordinate-sorted is what `samtools index` accepts.
	dir, err := os.MkdirTemp(c.tmp, "f")
	if err != nil {
		t.Fatal(err)
	}
	cp := filepath.Join(dir, "copy.bam")
	if err := os.WriteFile(cp, served, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := samtools("index", cp); err != nil {
		c.mu.Lock()
		c.unsorted++
		c.mu.Unlock()
		t.Logf("not coordinate-sorted (samtools index refuses it): %v", err)
		if _, err := os.Stat(bam + ".bai"); !os.IsNotExist(err) {
			t.Errorf("the .bai of a file samtools cannot index: %v, want not found", err)
		}
		return
	}
	c.mu.Lock()
	c.sorted++
	c.mu.Unlock()
	bai, err := os.ReadFile(bam + ".bai")
	if err != nil {
		t.Fatalf("reading the served .bai: %v", err)
	}
	want, err := os.ReadFile(cp + ".bai")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bai, want) {
		t.Errorf("served .bai (%d bytes, md5 %s) differs from samtools index of the served BAM (%d bytes, md5 %s)",
			len(bai), md5Hex(bai), len(want), md5Hex(want))
	}

	side := c.samtoolsSide(t, f, sam)
	if got := mustSamtools(t, "idxstats", bam); !bytes.Equal(got, side.idxstats) {
		t.Errorf("idxstats of the mounted BAM:\n%s\nsamtools' BAM:\n%s", got, side.idxstats)
	}
	got := countRegions(t, bam, side.regions)
	bad := 0
	for i, r := range side.regions {
		if got[i] != side.counts[i] {
			bad++
			if bad <= 5 {
				t.Errorf("samtools view -c %s: mount %s, samtools' BAM %s", r, got[i], side.counts[i])
			}
		}
	}
	if bad > 5 {
		t.Errorf("... %d of %d region counts differ", bad, len(side.regions))
	}
	nonzero := 0
	for _, c := range side.counts {
		if c != "0" {
			nonzero++
		}
	}
	t.Logf("idxstats, .bai and %d region counts (%d non-zero) checked", len(side.regions), nonzero)
}

// samtoolsSide makes (once per content) samtools' own BAM of f, indexes
// it, and answers idxstats and the region queries on it.
func (c *checker) samtoolsSide(t *testing.T, f mountFixture, sam []byte) *samtoolsSide {
	c.mu.Lock()
	s := c.side[f.samMD5]
	c.mu.Unlock()
	if s != nil {
		return s
	}
	dir, err := os.MkdirTemp(c.tmp, "s")
	if err != nil {
		t.Fatal(err)
	}
	s = &samtoolsSide{bam: filepath.Join(dir, "samtools.bam")}
	args := []string{"view", "-b", "--no-PG", "-o", s.bam}
	for _, r := range f.refs {
		args = append(args, "-T", r)
	}
	mustSamtools(t, append(args, f.cram())...)
	mustSamtools(t, "index", s.bam)
	s.idxstats = mustSamtools(t, "idxstats", s.bam)
	n := smallRegionQueries
	if records := bytes.Count(sam, []byte("\n")) - bytes.Count(sam, []byte("\n@")); records >= bigFile {
		n = regionQueries
	}
	s.regions = pickRegions(f.samMD5, sam, n)
	s.counts = countRegions(t, s.bam, s.regions)
	c.mu.Lock()
	c.side[f.samMD5] = s
	c.mu.Unlock()
	return s
}

// pickRegions derives n deterministic pseudo-random regions from the SAM
// text (its @SQ lines and alignment positions): "*", whole references,
// windows around aligned reads, and windows anywhere.
func pickRegions(seed string, sam []byte, n int) []string {
	type sq struct {
		name string
		ln   int
	}
	var sqs []sq
	type hit struct {
		ref string
		pos int
	}
	var hits []hit
	for _, line := range strings.Split(string(sam), "\n") {
		if strings.HasPrefix(line, "@SQ\t") {
			var s sq
			for _, f := range strings.Split(line, "\t")[1:] {
				if v, ok := strings.CutPrefix(f, "SN:"); ok {
					s.name = v
				} else if v, ok := strings.CutPrefix(f, "LN:"); ok {
					s.ln, _ = strconv.Atoi(v)
				}
			}
			if s.name != "" && s.ln > 0 && !strings.ContainsAny(s.name, ":,{}") {
				sqs = append(sqs, s)
			}
			continue
		}
		if line == "" || line[0] == '@' {
			continue
		}
		f := strings.SplitN(line, "\t", 5)
		if len(f) < 5 || f[2] == "*" || strings.ContainsAny(f[2], ":,{}") {
			continue
		}
		if p, err := strconv.Atoi(f[3]); err == nil && p > 0 {
			hits = append(hits, hit{f[2], p})
		}
	}
	if len(sqs) == 0 {
		return []string{"*"}
	}
	h := fnv.New64a()
	io.WriteString(h, seed)
	rng := rand.New(rand.NewPCG(h.Sum64(), 0x5eed))
	out := []string{"*"}
	for _, s := range sqs {
		if len(out) >= n/5 {
			break
		}
		out = append(out, s.name)
	}
	for len(out) < n {
		if len(hits) > 0 && rng.IntN(4) != 0 {
			a := hits[rng.IntN(len(hits))]
			beg := max(1, a.pos-rng.IntN(300))
			out = append(out, fmt.Sprintf("%s:%d-%d", a.ref, beg, beg+rng.IntN(2000)))
			continue
		}
		s := sqs[rng.IntN(len(sqs))]
		beg := 1 + rng.IntN(s.ln)
		out = append(out, fmt.Sprintf("%s:%d-%d", s.name, beg, min(s.ln, beg+rng.IntN(max(1, s.ln/8)))))
	}
	return out
}

// countRegions runs `samtools view -c bam region` for every region, a few
// at a time, and returns the counts in order.
func countRegions(t *testing.T, bam string, regions []string) []string {
	t.Helper()
	out := make([]string, len(regions))
	errs := make([]error, len(regions))
	sem := make(chan struct{}, 3)
	var wg sync.WaitGroup
	for i, r := range regions {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			b, err := samtools("view", "-c", bam, r)
			out[i], errs[i] = strings.TrimSpace(string(b)), err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMountConcurrentReadersTinyCache(t *testing.T) {
	requireMount(t)
	type file struct {
		cram string
		refs []string
	}
	files := []file{
		// Four small segments, all held by the cache.
		{testdata("cram", "ce_1000.3.0-multislice.cram"), []string{testdata("ref", "ce.fa")}},
	}
	if ref := corpusFile("hts-specs/test/cram/ce.fa"); ref != "" {
		files = append(files,
			// Seven segments each larger than the whole cache: never
			// kept, rebuilt for every read.
			file{corpusFile("hts-specs/test/cram/3.0/passed/level-1.cram"), nil})
	}
	for _, f := range files {
		if f.cram == "" {
			t.Fatal("corpus file missing")
		}
		t.Run(filepath.Base(f.cram), func(t *testing.T) { concurrentReaders(t, f.cram, f.refs) })
	}
}

// concurrentReaders reads the BAM of cram with 8 readers at once through
// a mount with a 64 KiB cache, bypassing the page cache (O_DIRECT) so that
// every read reaches the server; half read in order, half in a
// pseudo-random order of chunks.
func concurrentReaders(t *testing.T, cram string, refs []string) {
	src := t.TempDir()
	copyFile(t, cram, filepath.Join(src, "x.cram"))
	m := mountT(t, src, mountConfig{refs: refs, cacheSize: "64K"})
	wantBytes := convertAt(t, m.level, cram, refs)
	want := md5Hex(wantBytes)
	bam := filepath.Join(m.mnt, "x.bam")
	fi, err := os.Stat(bam)
	if err != nil {
		t.Fatal(err)
	}
	size := fi.Size()
	if size != int64(len(wantBytes)) {
		t.Fatalf("stat size %d, convert gives %d bytes", size, len(wantBytes))
	}
	const readers = 8
	sums := make([]string, readers)
	errs := make([]error, readers)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fh, err := os.OpenFile(bam, os.O_RDONLY|syscall.O_DIRECT, 0)
			if err != nil {
				errs[i] = err
				return
			}
			defer fh.Close()
			got := make([]byte, size)
			// Chunk sizes differ per reader so requests do not line up.
			chunk := int64(64<<10*(1+i%3) + 4096*i + 512)
			var offs []int64
			for off := int64(0); off < size; off += chunk {
				offs = append(offs, off)
			}
			if i%2 == 1 {
				rng := rand.New(rand.NewPCG(uint64(i), 7))
				rng.Shuffle(len(offs), func(a, b int) { offs[a], offs[b] = offs[b], offs[a] })
			}
			for _, off := range offs {
				end := min(size, off+chunk)
				if _, err := fh.ReadAt(got[off:end], off); err != nil && !(err == io.EOF && end == size) {
					errs[i] = fmt.Errorf("ReadAt %d: %w", off, err)
					return
				}
			}
			sums[i] = md5Hex(got)
		}()
	}
	wg.Wait()
	for i := range readers {
		if errs[i] != nil {
			t.Errorf("reader %d: %v", i, errs[i])
		} else if sums[i] != want {
			t.Errorf("reader %d: md5 %s, convert at the mount's level gives %s", i, sums[i], want)
		}
	}
	st := m.mgr.CacheStats()
	nseg := 0
	nseg = len(m.openBAM(t, "x.cram").Layout().Segments)
	t.Logf("%d bytes, %d segments; cache %+v", size, nseg, st)
	if st.MaxBytes != 64<<10 {
		t.Errorf("cache bound %d, want 64K", st.MaxBytes)
	}
	if st.Bytes > st.MaxBytes {
		t.Errorf("cache holds %d bytes over its bound %d", st.Bytes, st.MaxBytes)
	}
	switch {
	case size > 2*st.MaxBytes && st.Misses <= uint64(nseg):
		t.Errorf("%d cache misses for %d segments read by %d readers: segments were not rebuilt", st.Misses, nseg, readers)
	case size <= st.MaxBytes && (st.Adds != uint64(nseg) || st.Evictions != 0):
		t.Errorf("a file smaller than the cache: %d segments built for %d (evictions %d), want each once", st.Adds, nseg, st.Evictions)
	}
}

func TestMountCorruptFileIsEIOOthersRead(t *testing.T) {
	requireMount(t)
	src := t.TempDir()
	ref := []string{testdata("ref", "ce.fa")}
	good := []string{"ce_1000.3.0", "ce_5b.3.1-archive"}
	for _, n := range good {
		copyFile(t, testdata("cram", n+".cram"), filepath.Join(src, n+".cram"))
	}
	copyFile(t, testdata("cram", "corrupt.ce_1000.3.0.cram"), filepath.Join(src, "corrupt.cram"))
	m := mountT(t, src, mountConfig{refs: ref})

	// A listing reads no CRAM: before any was opened it names no index.
	names := readNames(t, m.mnt)
	wantNames := "ce_1000.3.0.bam ce_5b.3.1-archive.bam corrupt.bam"
	if names != wantNames {
		t.Errorf("listing %q, want %q", names, wantNames)
	}
	for round := range 2 {
		for _, p := range []string{"corrupt.bam", "corrupt.bam.bai"} {
			_, err := os.ReadFile(filepath.Join(m.mnt, p))
			if !errors.Is(err, syscall.EIO) {
				t.Errorf("round %d: reading %s: %v, want EIO", round, p, err)
			}
		}
		for _, n := range good {
			b, err := os.ReadFile(filepath.Join(m.mnt, n+".bam"))
			if err != nil {
				t.Fatalf("round %d: %s: %v", round, n, err)
			}
			if want := convertAt(t, m.level, testdata("cram", n+".cram"), ref); !bytes.Equal(b, want) {
				t.Errorf("round %d: %s.bam differs from convert at the mount's level", round, n)
			}
		}
	}
	// Once opened, the good files' indexes are listed, the broken one's not.
	names = readNames(t, m.mnt)
	wantNames = "ce_1000.3.0.bai ce_1000.3.0.bam ce_1000.3.0.bam.bai ce_5b.3.1-archive.bai ce_5b.3.1-archive.bam ce_5b.3.1-archive.bam.bai corrupt.bam"
	if names != wantNames {
		t.Errorf("listing after reading %q, want %q", names, wantNames)
	}
	if !strings.Contains(m.log.String(), "corrupt.bam") {
		t.Errorf("server log does not name corrupt.bam:\n%s", m.log.String())
	}
}

func TestMountFollowsSourceChanges(t *testing.T) {
	requireMount(t)
	src := t.TempDir()
	ref := []string{testdata("ref", "ce.fa")}
	oldCRAM := testdata("cram", "ce_5b.3.0.cram")
	newCRAM := testdata("cram", "ce_1000.3.1-normal.cram")
	copyFile(t, oldCRAM, filepath.Join(src, "a.cram"))
	copyFile(t, oldCRAM, filepath.Join(src, "b.cram"))
	m := mountT(t, src, mountConfig{refs: ref})
	oldBAM, newBAM := convertAt(t, m.level, oldCRAM, ref), convertAt(t, m.level, newCRAM, ref)
	const deadline = 10 * time.Second

	if b, err := os.ReadFile(filepath.Join(m.mnt, "b.bam")); err != nil || !bytes.Equal(b, oldBAM) {
		t.Fatalf("b.bam before any change: %v (equal %v)", err, bytes.Equal(b, oldBAM))
	}
	// An open handle keeps the version it opened, whatever happens later.
	held, err := os.Open(filepath.Join(m.mnt, "b.bam"))
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	half := make([]byte, len(oldBAM)/2)
	if _, err := io.ReadFull(held, half); err != nil {
		t.Fatal(err)
	}

	t.Run("added", func(t *testing.T) {
		copyFile(t, newCRAM, filepath.Join(src, "c.cram"))
		poll(t, "c.bam appears", deadline, func() error {
			b, err := os.ReadFile(filepath.Join(m.mnt, "c.bam"))
			if err == nil && !bytes.Equal(b, newBAM) {
				t.Fatalf("c.bam: %d bytes, not the convert output", len(b))
			}
			return err
		})
		if !strings.Contains(readNames(t, m.mnt), "c.bam.bai") {
			t.Errorf("listing lacks c.bam.bai: %s", readNames(t, m.mnt))
		}
	})
	t.Run("removed", func(t *testing.T) {
		if err := os.Remove(filepath.Join(src, "a.cram")); err != nil {
			t.Fatal(err)
		}
		poll(t, "a.bam disappears", deadline, func() error {
			if _, err := os.Stat(filepath.Join(m.mnt, "a.bam")); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("stat a.bam: %v", err)
			}
			if _, err := os.Stat(filepath.Join(m.mnt, "a.bam.bai")); !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("stat a.bam.bai: %v", err)
			}
			if n := readNames(t, m.mnt); strings.Contains(n, "a.bam") {
				return fmt.Errorf("listing still has a.bam: %s", n)
			}
			return nil
		})
	})
	t.Run("rewritten in place", func(t *testing.T) {
		// Same inode, new content: open(O_TRUNC) and write.
		p := filepath.Join(src, "d.cram")
		copyFile(t, oldCRAM, p)
		poll(t, "d.bam appears", deadline, func() error {
			_, err := os.Stat(filepath.Join(m.mnt, "d.bam"))
			return err
		})
		if b, err := os.ReadFile(filepath.Join(m.mnt, "d.bam")); err != nil || !bytes.Equal(b, oldBAM) {
			t.Fatalf("d.bam: %v", err)
		}
		content, err := os.ReadFile(newCRAM)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, content, 0o644); err != nil {
			t.Fatal(err)
		}
		poll(t, "d.bam serves the rewritten CRAM", deadline, func() error {
			b, err := os.ReadFile(filepath.Join(m.mnt, "d.bam"))
			switch {
			case err != nil:
				return err
			case bytes.Equal(b, newBAM):
				return nil
			case bytes.Equal(b, oldBAM):
				return errors.New("still the old version")
			}
			t.Fatalf("d.bam is neither version (%d bytes): mixed bytes", len(b))
			return nil
		})
	})
	t.Run("replaced", func(t *testing.T) {
		copyFile(t, newCRAM, filepath.Join(src, "b.cram"))
		seenOld := 0
		poll(t, "b.bam serves the new CRAM", deadline, func() error {
			b, err := os.ReadFile(filepath.Join(m.mnt, "b.bam"))
			switch {
			case err != nil:
				return err
			case bytes.Equal(b, newBAM):
				return nil
			case bytes.Equal(b, oldBAM):
				seenOld++
				return errors.New("still the old version")
			}
			t.Fatalf("b.bam is neither version (%d bytes; old %d, new %d): mixed bytes", len(b), len(oldBAM), len(newBAM))
			return nil
		})
		bai, err := os.ReadFile(filepath.Join(m.mnt, "b.bam.bai"))
		if err != nil {
			t.Fatal(err)
		}
		if c, _ := os.ReadFile(filepath.Join(m.mnt, "c.bam.bai")); !bytes.Equal(bai, c) {
			t.Errorf("b.bam.bai after the replacement differs from c.bam.bai, the same CRAM's")
		}
		t.Logf("old version seen %d times after the replacement", seenOld)
		// The handle opened before keeps serving the old bytes to its end.
		rest, err := io.ReadAll(held)
		if err != nil {
			t.Fatalf("reading the held handle after the replacement: %v", err)
		}
		if got := append(half, rest...); !bytes.Equal(got, oldBAM) {
			t.Errorf("handle opened before the replacement read %d bytes that are not the old BAM (%d bytes)", len(got), len(oldBAM))
		}
	})
}

func TestMountParallelFirstAccess(t *testing.T) {
	requireMount(t)
	src := t.TempDir()
	ref := []string{testdata("ref", "ce.fa")}
	names := []string{"ce_1000.3.0", "ce_1000.3.1-archive", "ce_5b.3.0", "ce_unmap2.3.0-multislice", "ce_supp.3.1-fast"}
	for _, n := range names {
		copyFile(t, testdata("cram", n+".cram"), filepath.Join(src, n+".cram"))
	}
	m := mountT(t, src, mountConfig{refs: ref})
	var wg sync.WaitGroup
	got := make([][]byte, 4*len(names))
	errs := make([]error, len(got))
	for i := range got {
		n, suffix := names[i/4], [...]string{".bam", ".bam.bai", ".bam", ".bam.bai"}[i%4]
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = os.ReadFile(filepath.Join(m.mnt, n+suffix))
		}()
	}
	wg.Wait()
	for i, n := range names {
		want := convertAt(t, m.level, testdata("cram", n+".cram"), ref)
		for j := range 4 {
			k := 4*i + j
			switch {
			case errs[k] != nil:
				t.Errorf("%s (%d): %v", n, j, errs[k])
			case j%2 == 0 && !bytes.Equal(got[k], want):
				t.Errorf("%s.bam differs from convert at the mount's level", n)
			case j%2 == 1 && !bytes.Equal(got[k], got[4*i+1]):
				t.Errorf("%s.bam.bai differs between two readers", n)
			}
		}
	}
}
