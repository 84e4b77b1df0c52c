package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/cramfs/cramfs/internal/clitest"
	"github.com/cramfs/cramfs/internal/corpus"
)

func mountFlagSet() *pflag.FlagSet {
	c, _ := findCommand("mount")
	return c.flagSet(c.make())
}

// TestHelperArgs: the mount helper's -o options become `cramfs mount`'s,
// generic mount options are ignored, rw and unknown options refused.
func TestHelperArgs(t *testing.T) {
	fs := mountFlagSet()
	got, err := helperArgs([]string{"/src", "/mnt", "-n", "-o", "ro,reference=/a.fa,reference=/b.fa,cache_dir=/c,allow_other,noauto,_netdev,nofail,user,dev,suid,x-systemd.automount,level=1", "-oindex_on_mount"}, fs)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--daemon", "--reference=/a.fa", "--reference=/b.fa", "--cache-dir=/c", "--allow-other", "--level=1", "--index-on-mount", "--", "/src", "/mnt"}
	if !slices.Equal(got, want) {
		t.Errorf("helperArgs:\n got %q\nwant %q", got, want)
	}
	for _, bad := range []struct{ opts, says string }{
		{"ro,rw", "read-only"},
		{"frobnicate", "unknown mount option"},
		{"level", "wants a value"},
		{"daemon", "unknown mount option"},
		{"cpuprofile=/x", "unknown mount option"},
	} {
		_, err := helperArgs([]string{"/src", "/mnt", "-o", bad.opts}, fs)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), bad.says) {
			t.Errorf("-o %s: %v, want a usage error saying %q", bad.opts, err, bad.says)
		}
	}
	if _, err := helperArgs([]string{"/src", "-o", "ro"}, fs); err == nil {
		t.Error("one operand: no error")
	}
}

// TestEveryMountOptionHasOForm: each visible option of cramfs mount but
// --daemon (implied) and --help is accepted as -o name[=value].
func TestEveryMountOptionHasOForm(t *testing.T) {
	fs := mountFlagSet()
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" || f.Name == "daemon" {
			return
		}
		o := strings.ReplaceAll(f.Name, "-", "_")
		if f.Value.Type() != "bool" {
			o += "=1"
		}
		args, err := mountOption(o, fs)
		if err != nil || len(args) != 1 || !strings.HasPrefix(args[0], "--"+f.Name) {
			t.Errorf("-o %s: %q, %v", o, args, err)
		}
	})
}

// helperFixture is a source tree with x.cram and what x.bam must hold.
func helperFixture(t *testing.T) (src, mnt, cache string, want []byte) {
	t.Helper()
	requireMount(t)
	src, mnt, cache = t.TempDir(), t.TempDir(), t.TempDir()
	copyFile(t, testdata("cram", "ce_1000.3.0.cram"), filepath.Join(src, "x.cram"))
	return src, mnt, cache, convertAt(t, 0, testdata("cram", "ce_1000.3.0.cram"), []string{testdata("ref", "ce.fa")})
}

// waitGone waits until no process runs the binary bin any more.
func waitGone(t *testing.T, bin string) {
	t.Helper()
	poll(t, "the mount process ends after the unmount", 10*time.Second, func() error {
		out, _ := exec.Command("pgrep", "-f", "^"+bin+" ").Output()
		if len(bytes.TrimSpace(out)) > 0 {
			return fmt.Errorf("still running: pid %s", bytes.TrimSpace(out))
		}
		return nil
	})
}

// TestMountDaemon: `cramfs mount --daemon` returns once the mount answers
// (exit 0), the mount serves, and the process ends after `cramfs
// unmount`; a mount that cannot start exits 1 with its reason, once.
func TestMountDaemon(t *testing.T) {
	src, mnt, cache, want := helperFixture(t)
	bin := buildCramfs(t)
	logFile := filepath.Join(t.TempDir(), "mount.log")
	cmd := exec.Command(bin, "mount", "--daemon", "-T", testdata("ref", "ce.fa"), "--cache-dir", cache, "--log-file", logFile, src, mnt)
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cramfs mount --daemon: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if isMounted(t, mnt) {
			exec.Command(bin, "unmount", mnt).Run()
		}
	})
	if !isMounted(t, mnt) {
		t.Fatal("cramfs mount --daemon returned before the mount was in place")
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "x.bam")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("x.bam through the background mount: %d bytes, %v", len(got), err)
	}
	if rc, stderr, _ := runCmd(t, "unmount", mnt); rc != 0 {
		t.Fatalf("cramfs unmount: %d %s", rc, stderr)
	}
	waitGone(t, bin)
	if b, _ := os.ReadFile(logFile); !strings.Contains(string(b), "msg=mounted") || !strings.Contains(string(b), "msg=unmounted") {
		t.Errorf("the log file does not say mounted and unmounted:\n%s", b)
	}

	cmd = exec.Command(bin, "mount", "--daemon", "-T", filepath.Join(t.TempDir(), "missing.fa"), src, mnt)
	out, err = cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "missing.fa") {
		t.Fatalf("a background mount that cannot start: %v, %q; want exit 1 naming missing.fa", err, out)
	}
	checkOneMessage(t, "mount --daemon", string(out))
}

// inMountNamespace runs script with sh in a private mount namespace in
// which /usr/local/bin holds only the cramfs binary bin, as an installed
// cramfs would be found by mount(8), and returns its output.
func inMountNamespace(t *testing.T, bin, script string) (string, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		corpus.Missing(t, "root, for mount(8)")
	}
	for _, tool := range []string{"unshare", "mount", "umount", "mount.fuse3"} {
		if _, err := exec.LookPath(tool); err != nil {
			if _, err := os.Stat("/sbin/" + tool); err != nil {
				corpus.Missing(t, "%s (util-linux, fuse3): %v", tool, err)
			}
		}
	}
	binDir := t.TempDir()
	if err := os.Link(bin, filepath.Join(binDir, "cramfs")); err != nil {
		copyFile(t, bin, filepath.Join(binDir, "cramfs"))
		must(t, os.Chmod(filepath.Join(binDir, "cramfs"), 0o755))
	}
	full := "set -e\nmount --bind " + binDir + " /usr/local/bin\n" + script
	out, err := exec.Command("unshare", "--mount", "--propagation", "private", "sh", "-c", full).CombinedOutput()
	return string(out), err
}

// TestMountHelperForms mounts through mount(8), as an admin does: `mount -t
// fuse.cramfs SRC MNT -o ...` and an /etc/fstab line (here a temporary
// fstab, `mount --fstab`), each returning once the mount answers; the BAM
// read through it is convert's, and umount ends the process. rw and a
// missing reference fail the mount command with the reason.
func TestMountHelperForms(t *testing.T) {
	src, mnt, cache, want := helperFixture(t)
	bin := buildCramfs(t)
	ref := testdata("ref", "ce.fa")
	wantMD5 := md5Hex(want)
	fstab := filepath.Join(t.TempDir(), "fstab")
	must(t, os.WriteFile(fstab, fmt.Appendf(nil, "%s %s fuse.cramfs ro,noauto,_netdev,nofail,x-systemd.automount,reference=%s,cache_dir=%s 0 0\n", src, mnt, ref, cache), 0o644))
	script := fmt.Sprintf(`
mount -t fuse.cramfs %[1]s %[2]s -o ro,reference=%[3]s,cache_dir=%[4]s,_netdev
echo "type: $(grep -c " %[2]s fuse.cramfs " /proc/self/mounts)"
echo "md5: $(md5sum < %[2]s/x.bam | cut -d' ' -f1)"
umount %[2]s
mount --fstab %[5]s %[2]s
echo "fstab md5: $(md5sum < %[2]s/x.bam | cut -d' ' -f1)"
umount %[2]s
if mount -t fuse.cramfs %[1]s %[2]s -o rw,reference=%[3]s 2>&1; then echo "rw: mounted"; else echo "rw: refused"; fi
if mount -t fuse.cramfs %[1]s %[2]s -o ro,reference=%[1]s/missing.fa 2>&1; then echo "missing: mounted"; else echo "missing: refused"; fi
`, src, mnt, ref, cache, fstab)
	out, err := inMountNamespace(t, bin, script)
	if err != nil {
		t.Fatalf("mount(8) forms: %v\n%s", err, out)
	}
	for _, w := range []string{"type: 1", "md5: " + wantMD5, "fstab md5: " + wantMD5, "read-only", "rw: refused", "missing.fa", "missing: refused"} {
		if !strings.Contains(out, w) {
			t.Errorf("mount(8) forms: output lacks %q:\n%s", w, out)
		}
	}
	waitGone(t, filepath.Join("/usr/local/bin", "cramfs"))
}

// TestMountNotifiesSystemd starts a mount as systemd starts a Type=notify
// service: with NOTIFY_SOCKET naming a socket the test listens on, it
// says READY=1 once the mount answers and STOPPING=1 when it unmounts.
func TestMountNotifiesSystemd(t *testing.T) {
	src, mnt, cache, _ := helperFixture(t)
	bin := buildCramfs(t)
	sock := filepath.Join(t.TempDir(), "notify")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	receive := func() string {
		ln.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 4096)
		n, err := ln.Read(buf)
		if err != nil {
			t.Fatalf("no notification: %v", err)
		}
		return string(buf[:n])
	}
	env := append(os.Environ(), "NOTIFY_SOCKET="+sock)
	p := startMountEnv(t, bin, mnt, env, "mount", "-T", testdata("ref", "ce.fa"), "--cache-dir", cache, src, mnt)
	if got := receive(); got != "READY=1" {
		t.Fatalf("first notification %q, want READY=1", got)
	}
	if !isMounted(t, mnt) {
		t.Error("READY=1 before the mount is in place")
	}
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if got := receive(); got != "STOPPING=1" {
		t.Fatalf("notification at SIGTERM %q, want STOPPING=1", got)
	}
	if rc := p.Wait(t); rc != 0 {
		t.Errorf("exit %d after SIGTERM", rc)
	}
}

// TestMountReopensLogOnSIGHUP: after logrotate moves the log file away,
// SIGHUP makes the mount write to a new file of that name, and keeps it
// mounted (SIGHUP no longer unmounts).
func TestMountReopensLogOnSIGHUP(t *testing.T) {
	src, mnt, cache, want := helperFixture(t)
	bin := buildCramfs(t)
	logFile := filepath.Join(t.TempDir(), "cramfs.log")
	p := startMountProc(t, bin, mnt, "mount", "-T", testdata("ref", "ce.fa"), "--cache-dir", cache, "--log-file", logFile, src, mnt)
	poll(t, "the log says mounted", 10*time.Second, func() error {
		if b, _ := os.ReadFile(logFile); !strings.Contains(string(b), "msg=mounted") {
			return errors.New("not yet")
		}
		return nil
	})
	must(t, os.Rename(logFile, logFile+".1"))
	must(t, p.Cmd.Process.Signal(syscall.SIGHUP))
	poll(t, "a new log file after SIGHUP", 10*time.Second, func() error {
		b, err := os.ReadFile(logFile)
		if err != nil || !strings.Contains(string(b), "log file reopened") {
			return fmt.Errorf("%q %v", b, err)
		}
		return nil
	})
	if !isMounted(t, mnt) {
		t.Fatal("SIGHUP unmounted")
	}
	if got, err := os.ReadFile(filepath.Join(mnt, "x.bam")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("x.bam after SIGHUP: %d bytes, %v", len(got), err)
	}
	if err := unmountProc(t, p); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(logFile); !strings.Contains(string(b), "msg=unmounted") {
		t.Errorf("the reopened log lacks the unmount:\n%s", b)
	}
}

// TestMountSIGHUPWhileStarting: SIGHUPs sent from the moment the mount's
// log file exists until it is mounted, and after (a logrotate or a
// systemd reload racing the start), reopen the log and never end the
// process, which mounts, serves and unmounts as usual.
func TestMountSIGHUPWhileStarting(t *testing.T) {
	src, mnt, cache, want := helperFixture(t)
	bin := buildCramfs(t)
	logFile := filepath.Join(t.TempDir(), "cramfs.log")
	cmd := exec.Command(bin, "mount", "-T", testdata("ref", "ce.fa"), "--cache-dir", cache, "--log-file", logFile, src, mnt)
	cmd.Env = clitest.SamtoolsEnv()
	var stderr clitest.SyncBuffer
	cmd.Stderr = &stderr
	must(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		if isMounted(t, mnt) {
			runCmd(t, "unmount", mnt)
		}
	})
	alive := func() error {
		select {
		case err := <-done:
			t.Fatalf("cramfs mount ended: %v; stderr:\n%s", err, stderr.String())
		default:
		}
		return nil
	}
	poll(t, "the log file is created", 10*time.Second, func() error {
		alive()
		_, err := os.Stat(logFile)
		return err
	})
	// A SIGHUP every 200 µs, so that some arrive while the mount starts.
	stop, hups := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		defer func() { hups <- n }()
		for {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Microsecond):
			}
			if cmd.Process.Signal(syscall.SIGHUP) != nil {
				return
			}
			n++
		}
	}()
	poll(t, "mounted while receiving SIGHUPs", 10*time.Second, func() error {
		alive()
		if !isMounted(t, mnt) {
			return errors.New("not mounted yet")
		}
		return nil
	})
	time.Sleep(50 * time.Millisecond)
	close(stop)
	n := <-hups
	if got, err := os.ReadFile(filepath.Join(mnt, "x.bam")); err != nil || !bytes.Equal(got, want) {
		t.Errorf("x.bam after %d SIGHUPs: %d bytes, %v", n, len(got), err)
	}
	alive()
	if rc, stderr, _ := runCmd(t, "unmount", mnt); rc != 0 {
		t.Fatalf("cramfs unmount: exit %d: %s", rc, stderr)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("cramfs mount after unmount: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("cramfs mount still running 10 s after its unmount")
	}
	if b, _ := os.ReadFile(logFile); !strings.Contains(string(b), "log file reopened") || !strings.Contains(string(b), "msg=unmounted") {
		t.Errorf("log:\n%s\nwant reopenings and the unmount", b)
	}
}
