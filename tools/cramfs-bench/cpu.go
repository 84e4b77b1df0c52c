package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// userHZ is the unit of the CPU times in /proc/PID/stat (USER_HZ, 100 on
// every Linux architecture the bench runs on).
const userHZ = 100

// processCPU is the user+sys CPU time pid's threads have used so far, dead
// threads included (/proc/PID/stat utime and stime).
func processCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseProcStatCPU(string(data))
}

// parseProcStatCPU reads utime+stime (fields 14 and 15) of a
// /proc/PID/stat line, whose second field, the command name in
// parentheses, may hold spaces and parentheses itself.
func parseProcStatCPU(line string) (time.Duration, error) {
	end := strings.LastIndexByte(line, ')')
	if end < 0 {
		return 0, fmt.Errorf("/proc stat line %.40q: no ')' closing the command name", line)
	}
	// After the name: field 3 (state) onwards; utime is field 14.
	fields := strings.Fields(line[end+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc stat line: %d fields after the command name, want at least 13", len(fields))
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("/proc stat line: CPU time %q is not a non-negative integer", f)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// childCPU is the user+sys CPU time of a process that has exited.
func childCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

// dropPageCache asks the kernel to drop path's pages from its page cache
// (posix_fadvise DONTNEED on the whole file) and fails unless none of them
// is left resident afterwards (mincore), so that the next read of path
// reaches the file system that serves it.
func dropPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("fadvise DONTNEED %s: %w", path, err)
	}
	resident, total, err := residentPages(f)
	if err != nil {
		return fmt.Errorf("mincore %s: %w", path, err)
	}
	if resident > 0 {
		return fmt.Errorf("page cache of %s not dropped: %d of %d pages still resident after fadvise DONTNEED", path, resident, total)
	}
	return nil
}

// residentPages counts the pages of f in the page cache.
func residentPages(f *os.File) (resident, total int, err error) {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return 0, 0, err
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return 0, 0, err
	}
	defer unix.Munmap(m)
	page := os.Getpagesize()
	vec := make([]byte, (len(m)+page-1)/page)
	_, _, errno := syscall.Syscall(syscall.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return 0, 0, errno
	}
	for _, v := range vec {
		resident += int(v & 1)
	}
	return resident, len(vec), nil
}

// perGiB is the seconds of cpu per GiB of bytes (an error for no bytes).
func perGiB(cpu time.Duration, bytes int64) (float64, error) {
	if bytes <= 0 {
		return 0, fmt.Errorf("no bytes served (%d)", bytes)
	}
	return cpu.Seconds() / (float64(bytes) / (1 << 30)), nil
}

// machineLoad is the machine's 1-minute load average (/proc/loadavg),
// which the report gives beside each run: the cases' times are only as
// steady as the machine was quiet.
func machineLoad() (float64, error) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, fmt.Errorf("/proc/loadavg: empty")
	}
	return strconv.ParseFloat(f[0], 64)
}
