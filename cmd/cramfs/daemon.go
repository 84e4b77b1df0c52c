package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/term"
)

// A mount in the background (--daemon, and always as a mount helper):
// the command starts itself again in a new session, without --daemon's
// effect, and waits until that process says, on a pipe, that its mount
// answers ("ready") or why it failed; it then exits 0, or 1 with that
// message, so that mount(8), a shell script or fstab knows the outcome.
// The mount process keeps running after it; its log goes to --log-file,
// or to the standard error it was given unless that is a terminal.

// readyEnv names, in the background mount process, the descriptor of the
// pipe its starter waits on.
const readyEnv = "CRAMFS_READY_FD"

// readyMessage is what the mount process writes once its mount answers.
const readyMessage = "ready"

// startBackground starts this command again as the background mount and
// waits for its word. logFile is --log-file ("" for none).
func startBackground(logFile string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("starting the mount in the background: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("starting the mount in the background: %w", err)
	}
	defer r.Close()
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		w.Close()
		return err
	}
	defer devnull.Close()
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(os.Environ(), readyEnv+"=3")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, os.Stderr
	if logFile != "" || term.IsTerminal(int(os.Stderr.Fd())) {
		cmd.Stderr = devnull
	}
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		w.Close()
		return fmt.Errorf("starting the mount in the background: %w", err)
	}
	w.Close()
	msg, _ := io.ReadAll(bufio.NewReader(io.LimitReader(r, 64<<10)))
	word := strings.TrimSpace(string(msg))
	if word == readyMessage {
		cmd.Process.Release()
		return nil
	}
	werr := cmd.Wait()
	if word == "" {
		return fmt.Errorf("the background mount ended before it was ready: %v", werr)
	}
	return errors.New(word)
}

// readyPipe is, in the background mount process, the pipe to its starter;
// nil in a foreground mount.
type readyPipe struct{ f *os.File }

// openReadyPipe returns the pipe readyEnv names, or nil.
func openReadyPipe() *readyPipe {
	fd, err := strconv.Atoi(os.Getenv(readyEnv))
	if err != nil || fd < 3 {
		return nil
	}
	os.Unsetenv(readyEnv)
	return &readyPipe{f: os.NewFile(uintptr(fd), "ready pipe")}
}

// ready tells the starter the mount answers.
func (p *readyPipe) ready() {
	if p != nil {
		fmt.Fprintln(p.f, readyMessage)
		p.f.Close()
	}
}

// failed tells the starter why the mount failed (the one line it prints).
func (p *readyPipe) failed(line string) {
	if p != nil {
		fmt.Fprintln(p.f, line)
		p.f.Close()
	}
}
