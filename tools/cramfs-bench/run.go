package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// command is one external command line with its environment additions.
type command struct {
	Path string
	Args []string
	Env  []string // KEY=VALUE added to the inherited environment
}

// String is the command line without the environment.
func (c command) String() string {
	var b strings.Builder
	b.WriteString(c.Path)
	for _, a := range c.Args {
		b.WriteString(" " + a)
	}
	return b.String()
}

func (c command) exec(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// timeRun runs c to completion and returns its wall-clock time, peak RSS
// and trimmed standard output (kept only up to a small size).
func timeRun(ctx context.Context, c command) (sample, error) {
	cmd := c.exec(ctx)
	var stdout limitedBuffer
	var stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	secs := time.Since(start).Seconds()
	if err != nil {
		return sample{}, fmt.Errorf("%s: %w\n%s", c, err, stderr.String())
	}
	return sample{Secs: secs, RSSKB: maxRSS(cmd.ProcessState), Out: strings.TrimSpace(stdout.String())}, nil
}

// pipe runs a | b, failing when either fails.
func pipe(ctx context.Context, a, b command) error {
	_, err := timePipe(ctx, a, b)
	return err
}

// timePipe runs a | b and measures it as one step: the wall-clock time
// until both exited, the sum of their peak RSS (they run at once) and b's
// trimmed standard output.
func timePipe(ctx context.Context, a, b command) (sample, error) {
	ca, cb := a.exec(ctx), b.exec(ctx)
	r, err := ca.StdoutPipe()
	if err != nil {
		return sample{}, err
	}
	cb.Stdin = r
	var ea, eb, out limitedBuffer
	ca.Stderr, cb.Stderr, cb.Stdout = &ea, &eb, &out
	start := time.Now()
	if err := ca.Start(); err != nil {
		return sample{}, fmt.Errorf("%s: %w", a, err)
	}
	errB := cb.Run()
	// With b gone, a's writers (a's children too) get EPIPE instead of
	// blocking on a full pipe that Wait would wait out.
	r.Close()
	if errB != nil {
		ca.Process.Kill()
		ca.Wait()
		return sample{}, fmt.Errorf("%s: %w\n%s", b, errB, eb.String())
	}
	if err := ca.Wait(); err != nil {
		return sample{}, fmt.Errorf("%s: %w\n%s", a, err, ea.String())
	}
	return sample{Secs: time.Since(start).Seconds(), RSSKB: maxRSS(ca.ProcessState) + maxRSS(cb.ProcessState),
		Out: strings.TrimSpace(out.String())}, nil
}

// maxRSS returns ru_maxrss (KiB on Linux) of a finished process.
func maxRSS(ps *os.ProcessState) int64 {
	if ps == nil {
		return 0
	}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return int64(ru.Maxrss)
	}
	return 0
}

// limitedBuffer keeps the first 64 KiB written to it and discards the
// rest, so a chatty command cannot fill memory. Write is its only way in
// (no ReadFrom or WriteString that would bypass the limit).
type limitedBuffer struct{ buf bytes.Buffer }

const limitedBufferMax = 64 << 10

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := limitedBufferMax - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (l *limitedBuffer) Len() int       { return l.buf.Len() }
func (l *limitedBuffer) String() string { return l.buf.String() }

// mountSession is a running FUSE server child process (`cramfs mount`,
// the floor) or `cramfs serve`.
type mountSession struct {
	unmount command // unmounts mnt; empty for a server that mounts nothing
	mnt     string
	cmd     *exec.Cmd
	stderr  limitedBuffer
	done    chan struct{}
	err     error // Wait's result, valid after done is closed
}

// startMount starts c (a `cramfs mount ... SRC MNT` command, or another
// FUSE server that unmount unmounts) and waits until MNT lists files. The
// caller must call close, also on error.
func startMount(ctx context.Context, unmount, c command, mnt string) (*mountSession, error) {
	m := &mountSession{unmount: unmount, mnt: mnt, done: make(chan struct{})}
	m.cmd = c.exec(context.WithoutCancel(ctx)) // stopped by close, not by the context
	m.cmd.Stdout = io.Discard
	m.cmd.Stderr = &m.stderr
	if err := m.cmd.Start(); err != nil {
		close(m.done)
		return m, fmt.Errorf("%s: %w", c, err)
	}
	go func() { m.err = m.cmd.Wait(); close(m.done) }()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ents, err := os.ReadDir(mnt); err == nil && len(ents) > 0 {
			return m, nil
		}
		select {
		case <-m.done:
			return m, fmt.Errorf("%s exited before the mount appeared: %v\n%s", c, m.err, m.stderr.String())
		case <-ctx.Done():
			return m, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return m, fmt.Errorf("%s: %s did not list files within 60 s\n%s", c, mnt, m.stderr.String())
		}
	}
}

// stop sends SIGTERM and waits for the mount process to exit; it returns
// the process's peak RSS.
func (m *mountSession) stop() (int64, error) {
	if m.cmd == nil || m.cmd.Process == nil {
		return 0, errors.New("mount process not started")
	}
	select {
	case <-m.done:
	default:
		if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			return 0, fmt.Errorf("signal mount: %w", err)
		}
		select {
		case <-m.done:
		case <-time.After(60 * time.Second):
			return 0, fmt.Errorf("mount of %s did not exit 60 s after SIGTERM", m.mnt)
		}
	}
	if m.err != nil {
		return maxRSS(m.cmd.ProcessState), fmt.Errorf("cramfs mount exited with %v\n%s", m.err, m.stderr.String())
	}
	return maxRSS(m.cmd.ProcessState), nil
}

// close makes sure nothing is left mounted or running: it runs the
// unmount command (`cramfs unmount MNT`, ignoring "not mounted") and kills
// the child if it is still alive.
func (m *mountSession) close() {
	if m.unmount.Path != "" {
		un := exec.Command(m.unmount.Path, m.unmount.Args...)
		un.Stdout, un.Stderr = io.Discard, io.Discard
		_ = un.Run()
	}
	if m.cmd == nil || m.cmd.Process == nil {
		return
	}
	select {
	case <-m.done:
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.done
	}
}
