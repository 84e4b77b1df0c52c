// Package clitest holds what the tests of the cramfs command and of the
// serving library share: the fixtures' paths, the cramfs binary built
// once per test process, samtools run against no reference but -T, mount
// processes started and stopped as a user does. Only tests import it.
package clitest

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cramfs/cramfs/encode/bgzf"
	cfs "github.com/cramfs/cramfs/fs"
	"github.com/cramfs/cramfs/internal/corpus"
)

// Testdata is the path of p below the repository's testdata directory.
func Testdata(p ...string) string {
	return filepath.Join(append([]string{corpus.Root(), "testdata"}, p...)...)
}

// CorpusFile returns the path of a corpus file, or "" without the corpus.
func CorpusFile(rel string) string {
	dir := os.Getenv("CRAMFS_CORPUS")
	if dir == "" {
		dir = filepath.Join(corpus.Root(), "..", "shared", "corpus")
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// SamtoolsEnv is the environment of the tools the tests run, samtools
// first: the process's, under which Main made samtools look for
// references nowhere but -T.
func SamtoolsEnv() []string { return os.Environ() }

// RequireMount is corpus.RequireFUSE for tests that also read mounts with
// samtools.
func RequireMount(tb testing.TB) {
	tb.Helper()
	corpus.RequireFUSE(tb)
	if _, err := exec.LookPath("samtools"); err != nil {
		corpus.Missing(tb, "samtools: %v", err)
	}
}

// Samtools runs samtools with args and returns its standard output; a
// non-zero exit is an error carrying the standard error text.
func Samtools(args ...string) ([]byte, error) {
	cmd := exec.Command("samtools", args...)
	cmd.Env = SamtoolsEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("samtools %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// MustSamtools is Samtools, failing tb on an error.
func MustSamtools(tb testing.TB, args ...string) []byte {
	tb.Helper()
	out, err := Samtools(args...)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// MD5Hex is the hexadecimal MD5 of b.
func MD5Hex(b []byte) string {
	s := md5.Sum(b)
	return hex.EncodeToString(s[:])
}

// SyncBuffer is a log sink safe for a server's goroutines, which may
// outlive a test (t.Log would panic then).
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// CopyFile copies src to dst (a new file, renamed into place).
func CopyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".part"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// BgzipFasta writes dst, the FASTA file src compressed with BGZF as
// bgzip does (full blocks of 65280 bytes, the EOF block), and its .fai and
// .gzi index, made by samtools faidx as a user would.
func BgzipFasta(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	c, err := bgzf.NewCompressor(6)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := c.AppendBlocks(nil, b)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, append(gz, bgzf.EOF...), 0o644); err != nil {
		t.Fatal(err)
	}
	MustSamtools(t, "faidx", dst)
	for _, ext := range []string{".fai", ".gzi"} {
		if _, err := os.Stat(dst + ext); err != nil {
			t.Fatalf("samtools faidx %s made no %s: %v", dst, ext, err)
		}
	}
}

// CRAMAt writes dir/NAME.cram, samtools' encoding against ref of five
// reads of 4 bases on contig at 1-based position pos on.
func CRAMAt(t *testing.T, dir, name, ref, contig string, pos int) string {
	t.Helper()
	var sam strings.Builder
	for i, n := range []string{"a", "b", "c", "d", "e"} {
		fmt.Fprintf(&sam, "%s\t0\t%s\t%d\t10\t4M\t*\t0\t0\tACGT\tqqqq\n", n, contig, pos+100*i)
	}
	in := filepath.Join(dir, name+".sam")
	if err := os.WriteFile(in, []byte(sam.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, name+".cram")
	MustSamtools(t, "view", "-C", "--no-PG", "-T", ref, "-t", ref+".fai", "-o", out, in)
	return out
}

// Must fails t on a non-nil err.
func Must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// ReadNames lists a directory, sorted, space-separated.
func ReadNames(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return strings.Join(names, " ")
}

// Poll calls cond until it returns nil or the deadline passes, and fails
// with its last error then.
func Poll(t *testing.T, what string, deadline time.Duration, cond func() error) {
	t.Helper()
	end := time.Now().Add(deadline)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: not within %v: %v", what, deadline, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// built is the cramfs binary Binary made, once per test process.
var built struct {
	sync.Mutex
	dir, bin string // dir is removed by Cleanup
}

// Binary returns the cramfs binary, built the first time it is asked for.
func Binary(t *testing.T) string {
	t.Helper()
	built.Lock()
	defer built.Unlock()
	if built.bin != "" {
		return built.bin
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		corpus.Missing(t, "go tool: %v", err)
	}
	dir, err := os.MkdirTemp("", "cramfs-test-bin")
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "cramfs")
	cmd := exec.Command(gobin, "build", "-o", bin, "github.com/cramfs/cramfs/cmd/cramfs")
	cmd.Dir = corpus.Root()
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0") // as the README installs it
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		t.Fatalf("go build: %v\n%s", err, out)
	}
	built.dir, built.bin = dir, bin
	return bin
}

// Main is the TestMain of the packages whose tests run cramfs and
// samtools: it gives the tests, and every tool they run (samtools, pysam,
// the cramfs binary, commands run in-process), REF_PATH and REF_CACHE
// settings of the run's own under which no M5-named file is found or
// written (corpus.SetNoRefEnv); a test that wants M5-named files sets its
// own under its t.TempDir(). It removes the binary Binary built.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "cramfs-test-")
	if err == nil {
		err = corpus.SetNoRefEnv(dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "TestMain:", err)
		os.Exit(1)
	}
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// Exec runs the binary bin with args and returns its exit code, its
// standard error text and its standard output; err only when it could
// not be run.
func Exec(bin string, args ...string) (int, string, []byte, error) {
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String(), stdout.Bytes(), nil
	case errors.As(err, &ee):
		return ee.ExitCode(), stderr.String(), stdout.Bytes(), nil
	}
	return -1, stderr.String(), stdout.Bytes(), err
}

// Run runs `cramfs args...` (the binary) and returns its exit code, its
// standard error text and its standard output.
func Run(t *testing.T, args ...string) (int, string, []byte) {
	t.Helper()
	rc, stderr, stdout, err := Exec(Binary(t), args...)
	if err != nil {
		t.Fatalf("cramfs %s: %v", strings.Join(args, " "), err)
	}
	return rc, stderr, stdout
}

// IsMounted reports whether mnt is a mount point in /proc/self/mountinfo.
func IsMounted(t *testing.T, mnt string) bool {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.ReplaceAll(f[4], `\040`, " ") == mnt {
			return true
		}
	}
	return false
}

// MountProc is a `cramfs mount` process.
type MountProc struct {
	Cmd    *exec.Cmd
	Mnt    string
	Stderr *SyncBuffer
	Done   chan struct{}
	Err    error // of Wait, after Done
}

// StartMount starts the binary's `cramfs mount` of src on a new temporary
// directory and waits until the mount is in place.
func StartMount(t *testing.T, bin, src string, extra ...string) *MountProc {
	t.Helper()
	return StartMountAt(t, bin, src, t.TempDir(), extra...)
}

// StartMountAt is StartMount on a given mount point.
func StartMountAt(t *testing.T, bin, src, mnt string, extra ...string) *MountProc {
	t.Helper()
	args := append([]string{"mount", "-T", Testdata("ref", "ce.fa"), "-@", "2"}, extra...)
	return StartMountProc(t, bin, mnt, append(args, src, mnt)...)
}

// StartMountProc runs `bin args...`, a mount on mnt, and waits until the
// mount is in place; whatever happens, the process is killed and mnt
// unmounted at cleanup.
func StartMountProc(t *testing.T, bin, mnt string, args ...string) *MountProc {
	t.Helper()
	return StartMountEnv(t, bin, mnt, SamtoolsEnv(), args...)
}

// StartMountEnv is StartMountProc in the environment env.
func StartMountEnv(t *testing.T, bin, mnt string, env []string, args ...string) *MountProc {
	t.Helper()
	p := &MountProc{Cmd: exec.Command(bin, args...), Mnt: mnt, Stderr: &SyncBuffer{}, Done: make(chan struct{})}
	p.Cmd.Env = env
	p.Cmd.Stderr = p.Stderr
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.Err = p.Cmd.Wait(); close(p.Done) }()
	t.Cleanup(func() {
		select {
		case <-p.Done:
		default:
			p.Cmd.Process.Kill()
			<-p.Done
		}
		if IsMounted(t, mnt) {
			if err := cfs.Unmount(mnt); err != nil {
				t.Errorf("cleanup unmount %s: %v", mnt, err)
			}
		}
	})
	Poll(t, "cramfs mount is mounted", 10*time.Second, func() error {
		select {
		case <-p.Done:
			t.Fatalf("cramfs mount exited early: %v\n%s", p.Err, p.Stderr.String())
		default:
		}
		if !IsMounted(t, mnt) {
			return errors.New("not in /proc/self/mountinfo")
		}
		return nil
	})
	return p
}

// Wait waits (up to 10 s) for the process to exit and returns its code.
func (p *MountProc) Wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.Done:
	case <-time.After(10 * time.Second):
		t.Fatalf("cramfs mount still running 10 s later; stderr:\n%s", p.Stderr.String())
	}
	if p.Err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(p.Err, &ee) {
		return ee.ExitCode()
	}
	t.Fatalf("wait: %v", p.Err)
	return -1
}

// UnmountProc stops a mount process the way a user does, with `cramfs
// unmount`, and waits for it to exit with status 0.
func UnmountProc(t *testing.T, p *MountProc) error {
	t.Helper()
	if rc, stderr, _ := Run(t, "unmount", p.Mnt); rc != 0 {
		return fmt.Errorf("cramfs unmount %s: exit %d: %s", p.Mnt, rc, stderr)
	}
	select {
	case <-p.Done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("cramfs mount did not exit after unmount; stderr:\n%s", p.Stderr.String())
	}
	if p.Err != nil {
		return fmt.Errorf("cramfs mount exited with %v after unmount; stderr:\n%s", p.Err, p.Stderr.String())
	}
	return nil
}

// ConvertAt runs `cramfs convert --level LEVEL` and returns the BAM
// bytes: what a mount serving that level must serve.
func ConvertAt(t *testing.T, level int, cram string, refs []string) []byte {
	t.Helper()
	args := []string{"convert", "--level", strconv.Itoa(level), "-@", "2", "-o", "-"}
	for _, r := range refs {
		args = append(args, "-T", r)
	}
	rc, stderr, out := Run(t, append(args, cram)...)
	if rc != 0 {
		t.Fatalf("cramfs convert %s: exit %d: %s", cram, rc, stderr)
	}
	return out
}

// WantMD5 is the MD5 of the uncompressed BAM stream samtools gives for
// the fixture testdata/cram/NAME.cram (its NAME.bam.md5).
func WantMD5(t *testing.T, name string) string {
	b, err := os.ReadFile(Testdata("cram", name+".bam.md5"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))[0]
}

// doubledPrefix matches a message prefix given twice, as in
// "cramfs mount: cramfs mount: ...".
var doubledPrefix = regexp.MustCompile(`cramfs \w+: .*cramfs \w+: `)

// CheckOneMessage fails when stderr repeats a line or a "cramfs X:"
// prefix, or holds the whole option list.
func CheckOneMessage(t *testing.T, cmdline, stderr string) {
	t.Helper()
	seen := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		if seen[l] && l != "" {
			t.Errorf("cramfs %s: line printed twice: %q", cmdline, l)
		}
		seen[l] = true
		if doubledPrefix.MatchString(l) {
			t.Errorf("cramfs %s: prefix repeated: %q", cmdline, l)
		}
	}
	if strings.Contains(stderr, "--reference") || strings.Contains(stderr, "Usage of") {
		t.Errorf("cramfs %s: the option list was printed on an error:\n%s", cmdline, stderr)
	}
}

// Nobody is the user id tests run cramfs (or a reader) as, a user other
// than the root running the tests.
const Nobody = 65534

// SharedDir returns a new directory that user nobody can reach, removed
// at cleanup (t.TempDir's parents are private to root).
func SharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "cramfs-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// RunAsNobody runs the binary as user nobody and returns its exit code
// and standard error.
func RunAsNobody(t *testing.T, bin string, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: Nobody, Gid: Nobody}}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String()
	}
	if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	return 0, stderr.String()
}

// NobodyCan reports whether user nobody has the access mode to path,
// checked in a child process running as nobody (test(1)).
func NobodyCan(t *testing.T, flag, path string) bool {
	t.Helper()
	rc, _ := RunAsNobody(t, "/usr/bin/test", nil, flag, path)
	return rc == 0
}
