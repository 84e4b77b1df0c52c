package main

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/encode/bam"
	"github.com/cramfs/cramfs/internal/bgzftest"
	"github.com/cramfs/cramfs/internal/hostile"
)

// hostileCaseTimeout bounds one conversion of a damaged file.
const hostileCaseTimeout = 10 * time.Second

// hostileAllocCap bounds the bytes one conversion may allocate.
const hostileAllocCap = 512 << 20

// hostileOffsetRE finds the position an error message must give.
var hostileOffsetRE = regexp.MustCompile(`(byte|offset) -?[0-9]+`)

// hostileErrorKinds classify rejection messages by the sentinels they
// carry.
var hostileErrorKinds = []struct{ name, text string }{
	{"checksum", decode.ErrChecksum.Error()},
	{"truncated", decode.ErrTruncated.Error()},
	{"reference", decode.ErrReference.Error()},
	{"unsupported", decode.ErrUnsupported.Error()},
	{"corrupt", decode.ErrCorrupt.Error()},
	{"invalid BAM record", bam.ErrInvalid.Error()},
}

// hostileResult is the outcome of one guarded conversion.
type hostileResult struct {
	rc     int
	stderr string
	out    []byte
	panic  any
	alloc  uint64
}

// hostileConvertGuarded runs `cramfs convert` in-process on its own goroutine,
// turning a panic into a result and giving up after the timeout.
func hostileConvertGuarded(args []string) (hostileResult, bool) {
	done := make(chan hostileResult, 1)
	go func() {
		var r hostileResult
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		defer func() {
			if p := recover(); p != nil {
				r.panic = fmt.Sprintf("%v\n%s", p, hostileStack())
			}
			runtime.ReadMemStats(&after)
			r.alloc = after.TotalAlloc - before.TotalAlloc
			done <- r
		}()
		var stdout, stderr bytes.Buffer
		r.rc = run(args, &stdout, &stderr)
		r.stderr, r.out = stderr.String(), stdout.Bytes()
	}()
	select {
	case r := <-done:
		return r, true
	case <-time.After(hostileCaseTimeout):
		return hostileResult{}, false
	}
}

// hostileSamtoolsVerdict says whether samtools 1.16.1, when installed,
// decodes the damaged file to the same BAM stream.
func hostileSamtoolsVerdict(in, ref string, raw []byte) string {
	if _, err := exec.LookPath("samtools"); err != nil {
		return "not installed"
	}
	out, err := exec.Command("samtools", "view", "-u", "--no-PG", "-T", ref, in).Output()
	if err != nil {
		return "rejects it"
	}
	got, err := bgzftest.DecompressAll(out)
	if err != nil {
		return "unreadable output"
	}
	if bytes.Equal(got, raw) {
		return "same records"
	}
	return "other records"
}

// hostileDump saves a variant worth a look under $HOSTILE_DUMP, when set.
func hostileDump(v hostile.Variant, fixture, why string) {
	dir := os.Getenv("HOSTILE_DUMP")
	if dir == "" {
		return
	}
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == ':' || r == '(' || r == ')' {
			return '_'
		}
		return r
	}, fixture+"."+v.Name)
	os.WriteFile(filepath.Join(dir, name+".cram"), v.Data, 0o644)
	os.WriteFile(filepath.Join(dir, name+".txt"), []byte(why+"\n"), 0o644)
}

// hostileStack is the current goroutine's stack, for panic reports.
func hostileStack() string {
	buf := make([]byte, 64<<10)
	return string(buf[:runtime.Stack(buf, false)])
}

// TestHostileConvert converts every damaged variant of a few fixtures:
// each either converts to exactly samtools' BAM or fails with a message
// naming the file and an offset; none panics, hangs or allocates without
// bound.
func TestHostileConvert(t *testing.T) {
	if testing.Short() {
		t.Skip("long: thousands of conversions")
	}
	// No reference from the environment or the user's cache.
	t.Setenv("REF_PATH", filepath.Join(t.TempDir(), "none"))
	t.Setenv("REF_CACHE", filepath.Join(t.TempDir(), "none"))
	// HOSTILE_SEED and HOSTILE_PER_KIND widen the search by hand.
	seed, perKind := uint64(1), 150
	if v, err := strconv.ParseUint(os.Getenv("HOSTILE_SEED"), 10, 64); err == nil {
		seed = v
	}
	if v, err := strconv.Atoi(os.Getenv("HOSTILE_PER_KIND")); err == nil && v > 0 {
		perKind = v
	}
	tmp := t.TempDir()
	start := time.Now()
	var maxAlloc uint64
	var maxName string
	total := 0
	for _, fx := range []struct{ name, ref string }{
		{"ce_1000.3.0-multislice", "ce.fa"},
		{"ce_1000.3.1-archive", "ce.fa"},
		{"ce_1000.2.1", "ce.fa"},
	} {
		orig, err := os.ReadFile(testdata("cram", fx.name+".cram"))
		if err != nil {
			t.Fatal(err)
		}
		want := wantMD5(t, fx.name)
		vs, err := hostile.Variants(orig, seed, hostile.Options{PerKind: perKind})
		if err != nil {
			t.Fatal(err)
		}
		in := filepath.Join(tmp, fx.name+".cram")
		out := filepath.Join(tmp, fx.name+".bam")
		counts := map[string]int{}
		for _, v := range vs {
			if err := os.WriteFile(in, v.Data, 0o644); err != nil {
				t.Fatal(err)
			}
			args := []string{"convert", "-@", "1", "--level", "0", "-o", out}
			if !v.NoReference {
				args = append(args, "-T", testdata("ref", fx.ref))
			}
			args = append(args, in)
			r, ok := hostileConvertGuarded(args)
			if !ok {
				t.Fatalf("%s: %s: no result after %v (hang)", fx.name, v.Name, hostileCaseTimeout)
			}
			total++
			if r.alloc > maxAlloc {
				maxAlloc, maxName = r.alloc, fx.name+": "+v.Name
			}
			switch {
			case r.panic != nil:
				counts["PANIC"]++
				t.Errorf("%s: %s: panic: %v", fx.name, v.Name, r.panic)
				continue
			case r.alloc > hostileAllocCap:
				t.Errorf("%s: %s: allocated %d MiB", fx.name, v.Name, r.alloc>>20)
			}
			if r.rc != 0 {
				kind := "other"
				for _, k := range hostileErrorKinds {
					if strings.Contains(r.stderr, k.text) {
						kind = k.name
						break
					}
				}
				if kind == "other" {
					hostileDump(v, fx.name, r.stderr)
				}
				counts["rejected"]++
				counts["rejected/"+kind]++
				if !strings.Contains(r.stderr, in) || !hostileOffsetRE.MatchString(r.stderr) {
					t.Errorf("%s: %s: exit %d, message does not name the file and an offset: %s", fx.name, v.Name, r.rc, r.stderr)
				}
				if _, err := os.Stat(out); err == nil {
					t.Errorf("%s: %s: failed conversion left %s behind", fx.name, v.Name, out)
				}
				continue
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			os.Remove(out)
			raw, err := bgzftest.DecompressAll(b)
			if err != nil {
				t.Errorf("%s: %s: exit 0 but the output is not BGZF: %v", fx.name, v.Name, err)
				continue
			}
			sum := md5.Sum(raw)
			if hex.EncodeToString(sum[:]) == want {
				counts["ok"]++
				continue
			}
			if v.Strict {
				t.Errorf("%s: %s: exit 0 with BAM md5 %x, samtools %s", fx.name, v.Name, sum, want)
				continue
			}
			// Damage hidden behind recomputed CRCs (or in CRAM 2.x, which
			// has none) can decode to other valid records, as in samtools.
			// samtools, when installed, must then agree byte for byte.
			verdict := hostileSamtoolsVerdict(in, testdata("ref", fx.ref), raw)
			counts["ok/different records, samtools: "+verdict]++
			if verdict != "same records" {
				hostileDump(v, fx.name, verdict)
			}
			if verdict == "other records" || verdict == "unreadable output" {
				t.Errorf("%s: %s: decodes to other records (md5 %x) than samtools", fx.name, v.Name, sum)
			}
		}
		keys := make([]string, 0, len(counts))
		for k := range counts {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var sb strings.Builder
		for _, k := range keys {
			fmt.Fprintf(&sb, " %s=%d", k, counts[k])
		}
		t.Logf("%s: %d variants:%s", fx.name, len(vs), sb.String())
	}
	t.Logf("%d cases in %v; largest allocation %d MiB (%s)", total, time.Since(start).Round(time.Millisecond), maxAlloc>>20, maxName)
}
