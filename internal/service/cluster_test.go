package service

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cfs "github.com/cramfs/cramfs/fs"
	"github.com/cramfs/cramfs/internal/bgzftest"
	"github.com/cramfs/cramfs/internal/corpus"
)

// indexFiles returns name, inode and mtime of each file in the cache
// directory (its run directory of status sockets left out): a layout
// scanned again is written anew, by rename, so any rescan changes this.
func indexFiles(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".idx") {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		out = append(out, fmt.Sprintf("%s ino %d mtime %d", e.Name(), st.Ino, fi.ModTime().UnixNano()))
	}
	sort.Strings(out)
	return out
}

// TestClusterSharedCache checks what docs/clusters.md ("Clusters and
// containers") says: two `cramfs index --shared-cache --digests`
// processes (batch jobs) given overlapping sets of files write into one
// group cache directory at the same time, each file's layout lands there
// once, and a mount with --shared-cache on that directory then opens every
// file from its index, scanning none and, the digests being there already,
// rewriting no index file, and serves the exact BAM of each; `cramfs
// status --json` lists every file, none failing.
func TestClusterSharedCache(t *testing.T) {
	requireMount(t)
	bin := buildCramfs(t)
	ref := testdata("ref", "ce.fa")
	src := t.TempDir()
	fixtures := []string{"ce_1000.3.0", "ce_5b.3.0", "ce_supp.3.1-normal", "ce_unmap2.3.0"}
	var crams []string
	fixtureOf := map[string]string{}
	for i := range 12 {
		f := fixtures[i%len(fixtures)]
		name := fmt.Sprintf("s%02d", i)
		copyFile(t, testdata("cram", f+".cram"), filepath.Join(src, name+".cram"))
		crams = append(crams, filepath.Join(src, name+".cram"))
		fixtureOf[name] = f
	}
	// The group cache as docs/clusters.md sets it up: setgid, group-writable.
	cache := filepath.Join(t.TempDir(), "cache")
	if err := os.Mkdir(cache, 0o775); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cache, 0o775|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}

	// Two jobs, files 0-7 and 4-11: four files are indexed by both.
	jobs := [][]string{crams[:8], crams[4:]}
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, len(jobs))
	errs := make([]error, len(jobs))
	for i, files := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(bin, append([]string{"index", "--shared-cache", "--digests", "--cache-dir", cache, "-T", ref, "-@", "1"}, files...)...)
			cmd.Env = samtoolsEnv()
			cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
			errs[i] = cmd.Run()
		}()
	}
	wg.Wait()
	for i := range jobs {
		if errs[i] != nil {
			t.Fatalf("index job %d: %v\n%s", i, errs[i], outs[i].String())
		}
		// Each file of the job is indexed by it or, when the other job
		// was first, found already indexed.
		out := outs[i].String()
		if n := strings.Count(out, "msg=indexed") + strings.Count(out, `msg="already indexed, skipped"`); n != len(jobs[i]) {
			t.Errorf("index job %d said indexed or already indexed %d times, want %d:\n%s", i, n, len(jobs[i]), out)
		}
	}
	before := indexFiles(t, cache)
	if len(before) != len(crams) {
		t.Fatalf("%d index files for %d CRAMs:\n%s", len(before), len(crams), strings.Join(before, "\n"))
	}

	p := startMount(t, bin, src, "--shared-cache", "--cache-dir", cache)
	for _, c := range crams {
		name := strings.TrimSuffix(filepath.Base(c), ".cram")
		b, err := os.ReadFile(filepath.Join(p.Mnt, name+".bam"))
		if err != nil {
			t.Fatalf("read %s.bam: %v", name, err)
		}
		raw, err := bgzftest.DecompressAll(b)
		if err != nil {
			t.Fatalf("%s.bam: %v", name, err)
		}
		if got, want := md5Hex(raw), wantMD5(t, fixtureOf[name]); got != want {
			t.Errorf("%s.bam (%s): BAM md5 %s, want samtools' %s", name, fixtureOf[name], got, want)
		}
	}
	st := statusJSON(t, cache, p.Mnt)
	if len(st.Files) != len(crams) {
		t.Errorf("status lists %d files, want %d", len(st.Files), len(crams))
	}
	for _, f := range st.Files {
		if f.Error != "" || f.Size == 0 || f.BytesRead < f.Size {
			t.Errorf("status of %s: %+v, want served whole without error", f.Path, f)
		}
	}
	if after := indexFiles(t, cache); !slices.Equal(after, before) {
		t.Errorf("the mount rewrote layout indexes (it scanned again, or learned digests):\nbefore:\n%s\nafter:\n%s", strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
	if err := unmountProc(t, p); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p.Stderr.String(), "level=WARN") {
		t.Errorf("the mount warned:\n%s", p.Stderr.String())
	}
}

// envWithout is the test's environment for samtools and cramfs without
// the variables named.
func envWithout(names ...string) []string {
	var out []string
	for _, kv := range samtoolsEnv() {
		if !slices.ContainsFunc(names, func(n string) bool { return strings.HasPrefix(kv, n+"=") }) {
			out = append(out, kv)
		}
	}
	return out
}

// statusPID asks `cramfs status --json` for the mount at mnt, in the UTS
// namespace of the host name host ("" for the test's own), and returns the
// pid of the mount that answered.
func statusPID(t *testing.T, bin, host, cache, mnt string) (int, error) {
	t.Helper()
	args := []string{bin, "status", "--json", "--cache-dir", cache, mnt}
	if host != "" {
		args = append([]string{"unshare", "--uts", "sh", "-c", `hostname "$0" && exec "$@"`, host}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = envWithout("XDG_RUNTIME_DIR")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, fmt.Errorf("cramfs status on %q: %v: %s", host, err, stderr.String())
	}
	var st mountStatus
	if err := json.Unmarshal(out, &st); err != nil {
		return 0, fmt.Errorf("status JSON: %v\n%s", err, out)
	}
	return st.PID, nil
}

// TestStatusSocketPerNode checks two mounts of the same mount point path
// on two nodes that share the cache directory, without XDG_RUNTIME_DIR
// (the status sockets are then in the cache directory): each node's
// `cramfs status` reaches its own mount. The second node is a UTS and
// mount namespace with another host name, where the first mount is
// detached so that the path is free.
func TestStatusSocketPerNode(t *testing.T) {
	requireMount(t)
	if os.Geteuid() != 0 {
		corpus.Missing(t, "root, for unshare --uts --mount")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		corpus.Missing(t, "unshare (util-linux): %v", err)
	}
	bin := buildCramfs(t)
	src, cache, mnt := t.TempDir(), t.TempDir(), t.TempDir()
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), filepath.Join(src, "a.cram"))
	env := envWithout("XDG_RUNTIME_DIR")

	a := exec.Command(bin, "mount", "-T", testdata("ref", "ce.fa"), "--cache-dir", cache, src, mnt)
	b := exec.Command("unshare", "--uts", "--mount", "--propagation", "private", "sh", "-c",
		`hostname cramfs-test-node-b && umount -l "$0" && exec "$@"`, mnt,
		bin, "mount", "-T", testdata("ref", "ce.fa"), "--cache-dir", cache, src, mnt)
	logs := []*syncBuffer{{}, {}}
	for i, c := range []*exec.Cmd{a, b} {
		c.Env, c.Stderr = env, logs[i]
		if i == 1 {
			poll(t, "the first mount", 10*time.Second, func() error {
				if !strings.Contains(logs[0].String(), "msg=mounted") {
					return fmt.Errorf("not mounted: %s", logs[0].String())
				}
				return nil
			})
		}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			// SIGTERM unmounts; a mount that does not exit is killed.
			c.Process.Signal(syscall.SIGTERM)
			done := make(chan struct{})
			go func() { c.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				c.Process.Kill()
				<-done
			}
			if i == 0 && isMounted(t, mnt) { // b's mount went with its namespace
				cfs.Unmount(mnt)
			}
		})
	}
	want := map[string]int{"": a.Process.Pid, "cramfs-test-node-b": b.Process.Pid}
	for host, pid := range want {
		poll(t, "cramfs status on "+host, 10*time.Second, func() error {
			got, err := statusPID(t, bin, host, cache, mnt)
			if err == nil && got != pid {
				err = fmt.Errorf("answered by pid %d, want %d", got, pid)
			}
			return err
		})
	}
	for i, l := range logs {
		if strings.Contains(l.String(), "status will not answer") {
			t.Errorf("mount %d:\n%s", i, l.String())
		}
	}
}

// slurmShims are stand-ins for sbatch and sinfo on a cluster whose
// smallest node has 2 CPUs: sinfo says so, and sbatch refuses a task
// asking for more (on a real cluster it would wait forever), then runs the
// array's tasks one after the other as Slurm would, in the root directory,
// without TMPDIR, with a PATH of system directories only and
// SLURM_ARRAY_TASK_ID and SLURM_CPUS_PER_TASK set, its output in the
// --output pattern, and exits non-zero if any task failed (sbatch --wait).
const slurmShims = `#!/bin/sh
case $(basename "$0") in
sinfo) printf '4\n2\n8\n'; exit 0 ;;
esac
wait=0; first=0; last=0; cpus=1; out=slurm-%A_%a.out; wrap=
while [ $# -gt 0 ]; do
	case $1 in
	--wait) wait=1 ;;
	--array=*) r=${1#--array=}; first=${r%-*}; last=${r#*-} ;;
	--cpus-per-task=*) cpus=${1#--cpus-per-task=} ;;
	--output=*) out=${1#--output=} ;;
	--wrap) shift; wrap=$1 ;;
	--mem=*|--job-name=*) ;;
	*) echo "sbatch shim: unexpected $1" >&2; exit 2 ;;
	esac
	shift
done
[ $wait = 1 ] || { echo "sbatch shim: not waited for" >&2; exit 2; }
[ "$cpus" -le 2 ] || { echo "sbatch shim: $cpus CPUs a task: no node has that many, pending forever" >&2; exit 3; }
rc=0
i=$first
while [ $i -le $last ]; do
	f=$(echo "$out" | sed "s/%A/42/; s/%a/$i/")
	(cd / && env -i PATH=/usr/bin:/bin HOME=/nonexistent SLURM_ARRAY_TASK_ID=$i SLURM_CPUS_PER_TASK=$cpus sh -c "$wrap") >"$f" 2>&1 || rc=1
	i=$((i + 1))
done
exit $rc
`

// TestClusterIndexRecipe runs docs/cluster/index-array.sh as written,
// against the Slurm stand-ins (slurmShims), from a directory holding
// the list under a relative name: every CRAM listed gets its index in the
// cache, with 2 files a task, and the script says so; with a broken CRAM
// in the list, it exits non-zero and does not say so.
func TestClusterIndexRecipe(t *testing.T) {
	bin := buildCramfs(t)
	work, shims, cache := t.TempDir(), t.TempDir(), t.TempDir()
	for _, name := range []string{"sbatch", "sinfo"} {
		must(t, os.WriteFile(filepath.Join(shims, name), []byte(slurmShims), 0o755))
	}
	binDir := t.TempDir()
	copyFile(t, bin, filepath.Join(binDir, "cramfs"))
	must(t, os.Chmod(filepath.Join(binDir, "cramfs"), 0o755))
	crams := t.TempDir()
	var list []string
	for _, n := range []string{"ce_1000.3.0", "ce_5b.3.0", "ce_1000.3.1-small"} {
		p := filepath.Join(crams, n+".cram")
		copyFile(t, testdata("cram", n+".cram"), p)
		list = append(list, p)
	}
	script := filepath.Join(corpus.Root(), "docs", "cluster", "index-array.sh")
	run := func(listed []string) (string, error) {
		must(t, os.WriteFile(filepath.Join(work, "crams.txt"), []byte(strings.Join(listed, "\n")+"\n"), 0o644))
		cmd := exec.Command("sh", script, "crams.txt", cache, testdata("ref", "ce.fa"), "2")
		cmd.Dir = work
		cmd.Env = append(envWithout("PATH", "TMPDIR"), "PATH="+shims+":"+binDir+":/usr/bin:/bin")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run(list)
	if err != nil || !strings.Contains(out, "are indexed in") {
		logs, _ := filepath.Glob(filepath.Join(work, "slurm-*.out"))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("%s:\n%s", l, b)
		}
		t.Fatalf("index-array.sh: %v\n%s", err, out)
	}
	if idx, _ := filepath.Glob(filepath.Join(cache, "*.idx")); len(idx) != len(list) {
		t.Errorf("%d index files in the cache, want %d", len(idx), len(list))
	}
	if logs, _ := filepath.Glob(filepath.Join(work, "slurm-42_*.out")); len(logs) != 2 {
		t.Errorf("task outputs %q, want 2 tasks of 2 files", logs)
	}

	broken := filepath.Join(crams, "broken.cram")
	must(t, os.WriteFile(broken, []byte("not a CRAM"), 0o644))
	out, err = run(append(list, broken))
	if err == nil || strings.Contains(out, "are indexed in") {
		t.Errorf("index-array.sh with a broken CRAM: %v, %q; want a failure", err, out)
	}
}
