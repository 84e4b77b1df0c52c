package main

import (
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// mountTimerSlack is the timer slack (prctl(2) PR_SET_TIMERSLACK) the
// mount process runs with, instead of the kernel's 50 us.
//
// Go's sysmon thread sleeps 20 us at a time for a millisecond after every
// time it takes a P back from a thread blocked in a system call for long,
// and the mount always has such threads: go-fuse's readers wait in read(2)
// on /dev/fuse. Each wake-up displaces a decoding worker or the reader;
// with 1 ms of slack the short sleeps end on the next timer or tick
// instead. No answer of the mount waits on a timer. Measurements in
// bench/archive/NOTES.md.
const mountTimerSlack = time.Millisecond

// reexecEnv marks a process that raiseTimerSlack already re-executed.
const reexecEnv = "CRAMFS_TIMERSLACK_REEXEC"

// raiseTimerSlack re-executes the program with mountTimerSlack as its timer
// slack when the slack is smaller. A thread's slack can only be set by the
// thread itself and new threads inherit their creator's, but the Go
// runtime starts sysmon before main runs; execve keeps the calling thread's
// slack, so the re-executed runtime starts every thread with it. On any
// failure the program carries on with the slack it has.
func raiseTimerSlack() {
	if os.Getenv(reexecEnv) != "" {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cur, err := unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
	if err != nil || cur >= int(mountTimerSlack) {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(mountTimerSlack), 0, 0, 0); err != nil {
		return
	}
	env := append(os.Environ(), reexecEnv+"=1")
	_ = unix.Exec(exe, os.Args, env) // returns only on failure
	_ = unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(cur), 0, 0, 0)
}
