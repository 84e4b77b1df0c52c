package corpus

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RequireFUSE skips the test (fails it under CI) without what a FUSE
// mount needs: the /dev/fuse character device and fusermount3 (or
// fusermount), looked for as fs.Mount looks for it, on PATH and then in
// /bin. It is the module's one FUSE check for tests.
func RequireFUSE(tb testing.TB) {
	tb.Helper()
	fi, err := os.Stat("/dev/fuse")
	if err != nil {
		Missing(tb, "/dev/fuse: %v", err)
	} else if fi.Mode()&os.ModeCharDevice == 0 {
		Missing(tb, "/dev/fuse is not a character device (mode %v)", fi.Mode())
	}
	for _, name := range []string{"fusermount3", "fusermount"} {
		if _, err := exec.LookPath(name); err == nil {
			return
		}
		if fi, err := os.Stat(filepath.Join("/bin", name)); err == nil && fi.Mode().IsRegular() {
			return
		}
	}
	Missing(tb, "fusermount3 not found on PATH or in /bin (the fuse3 package)")
}
