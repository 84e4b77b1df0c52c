package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cramfs/cramfs/internal/service"
)

// TestMountBinary runs the cramfs binary's mount as a user does: the
// process's own settings (timer slack), signals, unmounting.
func TestMountBinary(t *testing.T) {
	requireMount(t)
	bin := buildCramfs(t)
	src := t.TempDir()
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), filepath.Join(src, "x.cram"))
	copyFile(t, testdata("cram", "ce_1000.3.0.cram"), filepath.Join(src, "y.cram"))
	wantX := convertAt(t, service.DefaultLevel, testdata("cram", "ce_5b.3.0.cram"), []string{testdata("ref", "ce.fa")})

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			p := startMount(t, bin, src, "--cache-dir", t.TempDir())
			b, err := os.ReadFile(filepath.Join(p.Mnt, "x.bam"))
			if err != nil || !bytes.Equal(b, wantX) {
				t.Fatalf("x.bam through the binary's mount: %v (equal %v)", err, bytes.Equal(b, wantX))
			}
			if err := p.Cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			if rc := p.Wait(t); rc != 0 {
				t.Errorf("exit %d after %v, want 0; stderr:\n%s", rc, sig, p.Stderr.String())
			}
			if isMounted(t, p.Mnt) {
				t.Errorf("%s still mounted after %v", p.Mnt, sig)
			}
		})
	}

	t.Run("timer slack", func(t *testing.T) {
		// The binary re-executes itself with mountTimerSlack, keeping its
		// pid (timerslack_linux.go).
		p := startMount(t, bin, src, "--cache-dir", t.TempDir())
		pid := p.Cmd.Process.Pid
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/timerslack_ns", pid))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := strings.TrimSpace(string(b)), strconv.FormatInt(int64(mountTimerSlack), 10); got != want {
			t.Errorf("the mount's timer slack is %s ns, want %s", got, want)
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(strings.Split(string(env), "\x00"), reexecEnv+"=1") {
			t.Errorf("the mount was not re-executed: %s=1 is not in its environment", reexecEnv)
		}
		if b, err := os.ReadFile(filepath.Join(p.Mnt, "x.bam")); err != nil || !bytes.Equal(b, wantX) {
			t.Errorf("x.bam through the re-executed mount: %v (equal %v)", err, bytes.Equal(b, wantX))
		}
	})

	t.Run("SIGTERM while a file is open", func(t *testing.T) {
		p := startMount(t, bin, src, "--cache-dir", t.TempDir())
		fh, err := os.Open(filepath.Join(p.Mnt, "x.bam"))
		if err != nil {
			t.Fatal(err)
		}
		defer fh.Close()
		if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		// The busy mount is detached at once; the open file still reads.
		poll(t, "busy mount detached", 10*time.Second, func() error {
			if isMounted(t, p.Mnt) {
				return errors.New("still in /proc/self/mountinfo")
			}
			return nil
		})
		b, err := io.ReadAll(fh)
		if err != nil || !bytes.Equal(b, wantX) {
			t.Errorf("reading the file open across the unmount: %v (equal %v)", err, bytes.Equal(b, wantX))
		}
		fh.Close()
		if rc := p.Wait(t); rc != 0 {
			t.Errorf("exit %d after SIGTERM of a busy mount, want 0; stderr:\n%s", rc, p.Stderr.String())
		}
	})

	t.Run("unmount command", func(t *testing.T) {
		p := startMount(t, bin, src, "--cache-dir", t.TempDir())
		if _, err := os.Stat(filepath.Join(p.Mnt, "y.bam")); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(bin, "unmount", p.Mnt).CombinedOutput(); err != nil {
			t.Fatalf("cramfs unmount: %v: %s", err, out)
		}
		if rc := p.Wait(t); rc != 0 {
			t.Errorf("mount process exit %d after cramfs unmount, want 0; stderr:\n%s", rc, p.Stderr.String())
		}
		if isMounted(t, p.Mnt) {
			t.Errorf("%s still mounted after cramfs unmount", p.Mnt)
		}
	})

	t.Run("stale mount", func(t *testing.T) {
		p := startMount(t, bin, src, "--cache-dir", t.TempDir())
		if err := p.Cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		p.Wait(t)
		if !isMounted(t, p.Mnt) {
			t.Fatal("mount vanished with its process: no stale mount to test")
		}
		var stderr bytes.Buffer
		cmd := exec.Command(bin, "mount", "-T", testdata("ref", "ce.fa"), "--cache-dir", t.TempDir(), src, p.Mnt)
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Errorf("mounting on a stale mount: %v, want exit 1", err)
		}
		if msg := stderr.String(); !strings.Contains(msg, "cramfs unmount "+p.Mnt) || !strings.Contains(msg, "not connected") {
			t.Errorf("message does not name the stale mount and `cramfs unmount`: %q", msg)
		}
		if out, err := exec.Command(bin, "unmount", p.Mnt).CombinedOutput(); err != nil {
			t.Fatalf("cramfs unmount of the stale mount: %v: %s", err, out)
		}
		if isMounted(t, p.Mnt) {
			t.Fatalf("%s still mounted after cramfs unmount", p.Mnt)
		}
		// And the mount point is usable again.
		q := startMountAt(t, bin, src, p.Mnt, "--cache-dir", t.TempDir())
		if _, err := os.Stat(filepath.Join(q.Mnt, "x.bam")); err != nil {
			t.Errorf("x.bam on the mount point reused after the stale mount: %v", err)
		}
		if err := q.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if rc := q.Wait(t); rc != 0 {
			t.Errorf("exit %d, want 0; stderr:\n%s", rc, q.Stderr.String())
		}
	})

	t.Run("index on mount", func(t *testing.T) {
		cache := t.TempDir()
		p := startMount(t, bin, src, "--cache-dir", cache, "--index-on-mount")
		// No access to the mount at all: the layouts must appear anyway.
		poll(t, "layout indexes of both CRAMs in the cache dir", 10*time.Second, func() error {
			m, err := filepath.Glob(filepath.Join(cache, "*.idx"))
			if err != nil {
				return err
			}
			if len(m) != 2 {
				return fmt.Errorf("%d index files: %v", len(m), m)
			}
			return nil
		})
		if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if rc := p.Wait(t); rc != 0 {
			t.Errorf("exit %d, want 0; stderr:\n%s", rc, p.Stderr.String())
		}
	})
}

// TestMountParallelFirstAccess makes the first accesses of a CRAM's .bam
// and .bam.bai (two names, one CRAM) at the same time, for several fresh
// files, so that the opener is asked for the same file version
// concurrently.
