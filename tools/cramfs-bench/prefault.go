package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// prefaultChunk is how much memory prefault maps at a time.
const prefaultChunk = 256 << 20

// prefaultEnv names the environment variable under which cramfs-bench,
// run again by prefaultChild, only touches memory and exits.
const prefaultEnv = "CRAMFS_BENCH_PREFAULT_GIB"

// prefaultChild runs prefault(gib) in a child process: the benchmark's
// commands are its children, and a child's peak RSS (ru_maxrss) starts
// from the forking parent's, so the bench process must not touch it.
func prefaultChild(gib int) (time.Duration, error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("prefault: %w", err)
	}
	start := time.Now()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", prefaultEnv, gib))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("prefault: %w", err)
	}
	return time.Since(start), nil
}

// prefault writes one byte of every page of gib GiB of fresh anonymous
// memory, a chunk at a time, and unmaps it. On a virtual machine whose
// host backs guest memory only when the guest first touches it (a
// Firecracker VM, this one), the first use of memory costs ~20 times its
// later uses; the page cache a mount fills (the kernel keeps what it was
// served) then pays that on its first large read while a pipe, whose
// buffers are reused, does not. Touching the memory once before the cases
// makes every case see the machine in its steady state.
func prefault(gib int) (time.Duration, error) {
	start := time.Now()
	page := os.Getpagesize()
	for done := int64(0); done < int64(gib)<<30; done += prefaultChunk {
		b, err := syscall.Mmap(-1, 0, prefaultChunk, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			return 0, fmt.Errorf("prefault: %w", err)
		}
		for i := 0; i < len(b); i += page {
			b[i] = 1
		}
		if err := syscall.Munmap(b); err != nil {
			return 0, fmt.Errorf("prefault: %w", err)
		}
	}
	return time.Since(start), nil
}
