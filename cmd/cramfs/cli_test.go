package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// TestHelpGoesToStdout checks that -h and --help print the help on
// standard output, exit 0 and print nothing on standard error.
func TestHelpGoesToStdout(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"},
		{"convert", "--help"}, {"convert", "-h"}, {"index", "--help"}, {"mount", "--help"},
		{"mount", "-h"}, {"unmount", "--help"}, {"help", "mount"},
		{"mount", "-T", "x.fa", "--help", "SRC"},
	} {
		rc, stderr, stdout := runCmd(t, args...)
		if rc != 0 || stderr != "" || !strings.Contains(string(stdout), "Usage:") {
			t.Errorf("cramfs %s: exit %d, stderr %q, stdout %q; want exit 0, the help on stdout only", strings.Join(args, " "), rc, stderr, stdout)
		}
	}
}

// TestUsageErrorsExitTwo checks that command line mistakes exit 2 with one
// message, prefixed once, and a pointer to --help.
func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"convert", "--bogus", "x.cram"},
		{"convert"},
		{"convert", "a.cram", "b.cram"},
		{"convert", "--level", "12", "x.cram"},
		{"convert", "-@", "many", "x.cram"},
		{"mount", "--bogus", "a", "b"},
		{"mount", "onlysrc"},
		{"mount", "--cache-size", "lots", "a", "b"},
		{"index"},
		{"unmount"},
		{"unmount", "-x", "mnt"},
		{"version", "extra"},
	} {
		rc, stderr, stdout := runCmd(t, args...)
		line := strings.Join(args, " ")
		if rc != 2 {
			t.Errorf("cramfs %s: exit %d, want 2 (stderr %q)", line, rc, stderr)
		}
		if len(stdout) != 0 {
			t.Errorf("cramfs %s: wrote %q on stdout", line, stdout)
		}
		checkOneMessage(t, line, stderr)
	}
}

// TestErrorsPrintedOnce checks that a failing command prints its error
// once, as "cramfs COMMAND: message", exit 1.
func TestErrorsPrintedOnce(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"mount", filepath.Join(dir, "nosrc"), dir},
		{"mount", dir, filepath.Join(dir, "nomnt")},
		{"convert", "-o", filepath.Join(dir, "x.bam"), filepath.Join(dir, "nope.cram")},
		{"index", filepath.Join(dir, "nope.cram")},
		{"unmount", dir},
	} {
		rc, stderr, _ := runCmd(t, args...)
		line := strings.Join(args, " ")
		if rc != 1 {
			t.Errorf("cramfs %s: exit %d, want 1 (stderr %q)", line, rc, stderr)
		}
		if want := "cramfs " + args[0] + ": "; !strings.HasPrefix(stderr, want) || strings.Count(stderr, want) != 1 {
			t.Errorf("cramfs %s: stderr %q, want one message starting %q", line, stderr, want)
		}
		if strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("cramfs %s: want one line on stderr, got:\n%s", line, stderr)
		}
		checkOneMessage(t, line, stderr)
	}
}

// TestVersion checks `cramfs version` and `cramfs --version` in-process:
// the module's version line and the Go version.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		rc, stderr, stdout := runCmd(t, args...)
		if rc != 0 || stderr != "" || !strings.HasPrefix(string(stdout), "cramfs ") || !strings.Contains(string(stdout), runtime.Version()) {
			t.Errorf("cramfs %s: exit %d, stderr %q, stdout %q; want the version and %s", args[0], rc, stderr, stdout, runtime.Version())
		}
	}
}

// TestVersionNamesCommit builds cramfs from a clone of this commit (the Go
// tool records the commit only for a plain clone, not a git worktree) and
// checks that `cramfs version` names the commit.
func TestVersionNamesCommit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		corpus.Missing(t, "git: %v", err)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		corpus.Missing(t, "go tool: %v", err)
	}
	top, err := exec.Command(git, "rev-parse", "--show-toplevel").Output()
	if err != nil {
		corpus.Missing(t, "not in a git checkout: %v", err)
	}
	head, err := exec.Command(git, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "src")
	if out, err := exec.Command(git, "clone", "-q", "--shared", strings.TrimSpace(string(top)), clone).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	bin := filepath.Join(t.TempDir(), "cramfs")
	build := exec.Command(gobin, "build", "-buildvcs=true", "-o", bin, "./cmd/cramfs")
	build.Dir = clone
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		t.Fatalf("cramfs --version: %v", err)
	}
	if want := "commit " + strings.TrimSpace(string(head)); !strings.Contains(string(out), want) {
		t.Errorf("cramfs --version = %q, want it to name %q", out, want)
	}
}

// TestOptionForms checks samtools' attached short forms (-@2, -Tref.fa)
// and GNU long forms with = (--level=0, --output=FILE), with options after
// the operand.
func TestOptionForms(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.bam")
	in := testdata("cram", "ce_5b.3.0.cram")
	rc, stderr, _ := runCmd(t, "convert", in, "-@2", "-T"+testdata("ref", "ce.fa"), "--level=0", "--output="+out)
	if rc != 0 {
		t.Fatalf("exit %d: %s", rc, stderr)
	}
	rc, stderr, want := runCmd(t, "convert", "-@", "2", "-T", testdata("ref", "ce.fa"), "--level", "0", in)
	got, err := os.ReadFile(out)
	if rc != 0 || err != nil || string(got) != string(want) {
		t.Errorf("attached and separate forms gave different output (exit %d, %v): %s", rc, err, stderr)
	}
}
