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
// on /dev/fuse. During `samtools view -c -@2` through the mount, on two
// cores, sysmon woke about 7,000 times and used 120-140 ms of CPU per
// read of the quality-binned benchmark file, each wake-up displacing a
// decoding worker or the reader. With 1 ms of slack its short sleeps end
// on the next timer or tick instead: about 1,000 wake-ups and 20-30 ms,
// and the read took 1.05-1.36 s (median 1.15) against 1.14-1.73 s (median
// 1.28) in 8 alternating rounds. No answer of the mount waits on a timer;
// the runtime's other short sleeps (a thread stealing work sleeps 3 us)
// also get coarser, which those measurements include. The 3.1 archive
// file's read, whose containers take longest to decode, measured within
// its noise (median 3.88 s without, 3.95 s with, 4 rounds).
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
