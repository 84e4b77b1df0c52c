package main

import (
	"bufio"
	"debug/elf"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// TestREADMEInstallsStaticBinary runs the README's install command, with
// GOBIN set to a temporary directory, and checks that the binary it
// installs is static (no ELF interpreter, no shared library needed): one
// file an administrator copies to any Linux machine, whatever C compiler
// and libc the build machine had.
func TestREADMEInstallsStaticBinary(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		corpus.Missing(t, "go tool: %v", err)
	}
	line := readmeInstallLine(t)
	fields := strings.Fields(line)
	var env []string
	for len(fields) > 0 && strings.Contains(fields[0], "=") {
		env, fields = append(env, fields[0]), fields[1:]
	}
	if len(fields) < 3 || fields[0] != "go" || fields[1] != "install" {
		t.Fatalf("README install line %q: want [VAR=value ...] go install ARGS", line)
	}
	dir := t.TempDir()
	cmd := exec.Command(gobin, fields[1:]...)
	cmd.Dir = corpus.Root()
	cmd.Env = append(append(os.Environ(), "GOFLAGS=", "GOBIN="+dir), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	f, err := elf.Open(filepath.Join(dir, "cramfs"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s installs a dynamically linked binary (it has an ELF interpreter)", line)
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("%s installs a binary that needs shared libraries %v (%v)", line, libs, err)
	}
}

// readmeInstallLine returns the README's line that installs cramfs.
func readmeInstallLine(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join(corpus.Root(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); strings.Contains(l, "go install ./cmd/cramfs") {
			return l
		}
	}
	t.Fatal("README.md has no line with go install ./cmd/cramfs")
	return ""
}

// A static binary reads user and group names from /etc/passwd and
// /etc/group only: a name it does not find is refused with an error that
// says where it looked and that a number is taken; a number needs no
// lookup.
func TestLookupIDNames(t *testing.T) {
	uid := func(u *user.User) string { return u.Uid }
	_, err := lookupID("--uid", "no-such-user-cramfs", "/etc/passwd", user.Lookup, uid)
	if err == nil || !strings.Contains(err.Error(), "/etc/passwd") || !strings.Contains(err.Error(), "number") {
		t.Errorf("--uid of an unknown name: %v, want an error naming /etc/passwd and a number", err)
	}
	if n, err := lookupID("--uid", "4242", "/etc/passwd", user.Lookup, uid); err != nil || n == nil || *n != 4242 {
		t.Errorf("--uid 4242: %v, %v", n, err)
	}
	if n, err := lookupID("--uid", "root", "/etc/passwd", user.Lookup, uid); err != nil || n == nil || *n != 0 {
		t.Errorf("--uid root: %v, %v; want 0 from /etc/passwd", n, err)
	}
}
