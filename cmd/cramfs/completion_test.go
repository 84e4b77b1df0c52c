package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// bashComplete sources the bash completion script and completes the
// command line words (the last one being completed) in dir.
func bashComplete(t *testing.T, script, dir string, words ...string) []string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		corpus.Missing(t, "bash: %v", err)
	}
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	prog := "source " + script + "\nCOMP_WORDS=(" + strings.Join(quoted, " ") + ")\nCOMP_CWORD=" +
		strconv.Itoa(len(words)-1) + "\n_cramfs\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n"
	cmd := exec.Command(bash, "--norc", "--noprofile", "-c", prog)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash completion of %q: %v\n%s", words, err, out)
	}
	got := strings.Fields(string(out))
	slices.Sort(got)
	return got
}

// TestBashCompletion runs the generated bash script: it completes the
// commands, each command's options (from the same flag definitions as
// --help), directories after --cache-dir and files after -T.
func TestBashCompletion(t *testing.T) {
	rc, _, out := runCmd(t, "completion", "bash")
	if rc != 0 {
		t.Fatalf("cramfs completion bash: exit %d", rc)
	}
	dir := t.TempDir()
	script := filepath.Join(dir, "cramfs.bash")
	must(t, os.WriteFile(script, out, 0o644))
	must(t, os.Mkdir(filepath.Join(dir, "refs"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "ref.fa"), nil, 0o644))

	if got := bashComplete(t, script, dir, "cramfs", "mo"); !slices.Equal(got, []string{"mount"}) {
		t.Errorf("cramfs mo<TAB>: %q, want mount", got)
	}
	if got := bashComplete(t, script, dir, "cramfs", "mount", "--cache-"); !slices.Equal(got, []string{"--cache-dir", "--cache-size"}) {
		t.Errorf("cramfs mount --cache-<TAB>: %q", got)
	}
	if got := bashComplete(t, script, dir, "cramfs", "mount", "--cache-dir", "r"); !slices.Equal(got, []string{"refs"}) {
		t.Errorf("cramfs mount --cache-dir r<TAB>: %q, want the directory refs", got)
	}
	if got := bashComplete(t, script, dir, "cramfs", "convert", "-T", "ref"); !slices.Equal(got, []string{"ref.fa", "refs"}) {
		t.Errorf("cramfs convert -T ref<TAB>: %q", got)
	}
	if got := bashComplete(t, script, dir, "cramfs", "completion", ""); !slices.Contains(got, "bash") || !slices.Contains(got, "zsh") {
		t.Errorf("cramfs completion <TAB>: %q", got)
	}
	for _, c := range commands {
		got := bashComplete(t, script, dir, "cramfs", c.name, "--")
		for _, f := range completionFlags(c) {
			if !slices.Contains(got, "--"+f.long) {
				t.Errorf("cramfs %s --<TAB> lacks --%s: %q", c.name, f.long, got)
			}
		}
	}
}

// TestZshCompletion checks the zsh script's syntax with zsh -n and that it
// names every command and option.
func TestZshCompletion(t *testing.T) {
	rc, _, out := runCmd(t, "completion", "zsh")
	if rc != 0 {
		t.Fatalf("cramfs completion zsh: exit %d", rc)
	}
	script := string(out)
	for _, c := range commands {
		if !strings.Contains(script, "\t"+c.name+")") {
			t.Errorf("the zsh script has no case for %s", c.name)
		}
		for _, f := range completionFlags(c) {
			if !strings.Contains(script, "--"+f.long) {
				t.Errorf("the zsh script lacks --%s of %s", f.long, c.name)
			}
		}
	}
	zsh, err := exec.LookPath("zsh")
	if err != nil {
		corpus.Missing(t, "zsh: %v", err)
	}
	p := filepath.Join(t.TempDir(), "_cramfs")
	must(t, os.WriteFile(p, out, 0o644))
	if out, err := exec.Command(zsh, "-n", p).CombinedOutput(); err != nil {
		t.Fatalf("zsh -n: %v\n%s", err, out)
	}
}

// TestCompletionRefusesOtherShells: an unknown shell is a usage error.
func TestCompletionRefusesOtherShells(t *testing.T) {
	if rc, _, _ := runCmd(t, "completion", "fish"); rc != exitUsage {
		t.Errorf("cramfs completion fish: exit %d, want %d", rc, exitUsage)
	}
}
