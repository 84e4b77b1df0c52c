package main

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/internal/bgzftest"
)

func TestConvertMatchesSamtoolsForAnyThreads(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"ce_1000.3.0-multislice", "ce_5b.3.1-archive", "xx_tlen.2.1", "ce_unmap2.3.1-small"} {
		ref := testdata("ref", "ce.fa")
		if strings.HasPrefix(name, "xx_") {
			ref = testdata("ref", "xx.fa")
		}
		var first []byte
		for _, threads := range []string{"1", "2", "7"} {
			for _, level := range []string{"0", "1", "6"} {
				out := filepath.Join(dir, name+threads+level+".bam")
				rc, stderr, _ := runCmd(t, "convert", "-T", ref, "-@", threads, "--level", level, "-o", out, testdata("cram", name+".cram"))
				if rc != 0 {
					t.Fatalf("%s: exit %d: %s", name, rc, stderr)
				}
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.HasSuffix(b, []byte(bgzf.EOF)) {
					t.Errorf("%s: output does not end in the BGZF EOF block", name)
				}
				raw, err := bgzftest.DecompressAll(b)
				if err != nil {
					t.Fatal(err)
				}
				sum := md5.Sum(raw)
				if got := hex.EncodeToString(sum[:]); got != wantMD5(t, name) {
					t.Errorf("%s -@%s --level %s: BAM stream md5 %s, samtools %s", name, threads, level, got, wantMD5(t, name))
				}
				if level == "1" {
					if first == nil {
						first = b
					} else if !bytes.Equal(first, b) {
						t.Errorf("%s: -@%s output differs from -@1", name, threads)
					}
				}
			}
		}
	}
}

func TestConvertToStdout(t *testing.T) {
	rc, stderr, out := runCmd(t, "convert", "--reference", testdata("ref", "ce.fa"), testdata("cram", "ce_5b.3.0.cram"))
	if rc != 0 {
		t.Fatalf("exit %d: %s", rc, stderr)
	}
	raw, err := bgzftest.DecompressAll(out)
	if err != nil {
		t.Fatal(err)
	}
	sum := md5.Sum(raw)
	if got := hex.EncodeToString(sum[:]); got != wantMD5(t, "ce_5b.3.0") {
		t.Fatalf("md5 %s", got)
	}
}

func TestConvertErrors(t *testing.T) {
	dir := t.TempDir()
	trunc := filepath.Join(dir, "cut.cram")
	full, err := os.ReadFile(testdata("cram", "ce_1000.3.0.cram"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(trunc, full[:len(full)-100], 0o644); err != nil {
		t.Fatal(err)
	}
	noEOF := filepath.Join(dir, "noeof.cram")
	if err := os.WriteFile(noEOF, full[:len(full)-38], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		rc   int
		want []string
	}{
		{"truncated", []string{"convert", "-T", testdata("ref", "ce.fa"), "-o", filepath.Join(dir, "a.bam"), trunc}, 1, []string{trunc, "container at byte", "truncated"}},
		{"no EOF", []string{"convert", "-T", testdata("ref", "ce.fa"), "-o", filepath.Join(dir, "b.bam"), noEOF}, 1, []string{noEOF, "EOF"}},
		{"corrupt block", []string{"convert", "-T", testdata("ref", "ce.fa"), "-o", filepath.Join(dir, "c.bam"), testdata("cram", "corrupt.ce_1000.3.0.cram")}, 1, []string{"corrupt.ce_1000.3.0.cram", "container at byte", "CRC32"}},
		{"missing input", []string{"convert", "-o", filepath.Join(dir, "e.bam"), filepath.Join(dir, "nope.cram")}, 1, []string{"nope.cram"}},
		{"no input", []string{"convert"}, 2, []string{"want one input"}},
		{"bad level", []string{"convert", "--level", "12", "-T", testdata("ref", "ce.fa"), "-o", filepath.Join(dir, "f.bam"), testdata("cram", "ce_1000.3.0.cram")}, 2, []string{"level"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("REF_PATH", filepath.Join(t.TempDir(), "path"))
			t.Setenv("REF_CACHE", filepath.Join(t.TempDir(), "cache"))
			rc, stderr, _ := runCmd(t, c.args...)
			if rc != c.rc {
				t.Fatalf("exit %d, want %d; stderr: %s", rc, c.rc, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not mention %q", stderr, w)
				}
			}
		})
	}
	// A failed conversion leaves no output file behind.
	for _, n := range []string{"a.bam", "b.bam", "c.bam", "d.bam"} {
		if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("%s exists after a failed conversion", n)
		}
	}
}

// TestConvertOutputNotRegular writes to a FIFO and through a symbolic
// link: neither may be replaced by a regular file (as `-o /dev/null` once
// was, by the write-then-rename meant for regular files).
func TestConvertOutputNotRegular(t *testing.T) {
	dir := t.TempDir()
	args := func(out string) []string {
		return []string{"convert", "--level", "0", "-T", testdata("ref", "ce.fa"), "-o", out, testdata("cram", "ce_5b.3.0.cram")}
	}
	check := func(t *testing.T, b []byte) {
		t.Helper()
		raw, err := bgzftest.DecompressAll(b)
		if err != nil {
			t.Fatal(err)
		}
		sum := md5.Sum(raw)
		if got := hex.EncodeToString(sum[:]); got != wantMD5(t, "ce_5b.3.0") {
			t.Fatalf("md5 %s", got)
		}
	}

	t.Run("fifo", func(t *testing.T) {
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		got := make(chan []byte, 1)
		go func() {
			b, _ := os.ReadFile(fifo)
			got <- b
		}()
		if rc, stderr, _ := runCmd(t, args(fifo)...); rc != 0 {
			t.Fatalf("exit %d: %s", rc, stderr)
		}
		fi, err := os.Lstat(fifo)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeNamedPipe == 0 {
			t.Fatalf("%s is now %v, want the FIFO left in place", fifo, fi.Mode())
		}
		check(t, <-got)
		if m, _ := filepath.Glob(filepath.Join(dir, ".fifo.tmp*")); len(m) != 0 {
			t.Fatalf("temporary files left: %v", m)
		}
	})

	t.Run("symlink", func(t *testing.T) {
		target := filepath.Join(dir, "real", "x.bam")
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, "link.bam")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		if rc, stderr, _ := runCmd(t, args(link)...); rc != 0 {
			t.Fatalf("exit %d: %s", rc, stderr)
		}
		fi, err := os.Lstat(link)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s is now %v, want the link kept", link, fi.Mode())
		}
		b, err := os.ReadFile(target)
		if err != nil {
			t.Fatal(err)
		}
		check(t, b)
	})
}

// TestConvertStdinAndShortForms: `cramfs convert -` reads the CRAM from
// standard input, redirected from a file or through a pipe, and -u and
// -l LEVEL are samtools' forms of --level 0 and --level LEVEL: the same
// bytes as the long forms with the CRAM named.
func TestConvertStdinAndShortForms(t *testing.T) {
	bin := buildCramfs(t)
	cram, ref := testdata("cram", "ce_1000.3.0.cram"), testdata("ref", "ce.fa")
	run := func(stdin func(*exec.Cmd), args ...string) []byte {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"convert", "-T", ref}, args...)...)
		stdin(cmd)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("cramfs convert %s: %v: %s", strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	named := func(*exec.Cmd) {}
	redirected := func(cmd *exec.Cmd) {
		f, err := os.Open(cram)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		cmd.Stdin = f
	}
	piped := func(cmd *exec.Cmd) {
		b, err := os.ReadFile(cram)
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdin = bytes.NewReader(b) // exec copies it through a pipe
	}
	level0 := run(named, "--level", "0", cram)
	level1 := run(named, "--level", "1", cram)
	for name, got := range map[string][]byte{
		"-u -":                   run(redirected, "-u", "-"),
		"-u - (pipe)":            run(piped, "-u", "-"),
		"--level 0 - (pipe)":     run(piped, "--level", "0", "-o", "-", "-"),
		"-u -l 5 (-u wins) CRAM": run(named, "-u", "-l", "5", cram),
	} {
		if !bytes.Equal(got, level0) {
			t.Errorf("cramfs convert %s: %d bytes, not those of --level 0 (%d)", name, len(got), len(level0))
		}
	}
	if got := run(piped, "-l", "1", "-"); !bytes.Equal(got, level1) {
		t.Errorf("cramfs convert -l 1 - (pipe): not the bytes of --level 1")
	}
	raw, err := bgzftest.DecompressAll(level0)
	if err != nil {
		t.Fatal(err)
	}
	if md5 := md5Hex(raw); md5 != wantMD5(t, "ce_1000.3.0") {
		t.Errorf("uncompressed stream md5 %s, want samtools' %s", md5, wantMD5(t, "ce_1000.3.0"))
	}
}
