package fs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Errors wrapped (together with ErrMount) by the mount-time checks and by
// Unmount, so callers can tell the cases apart.
var (
	// ErrNoFUSEAccess: a user other than root can neither open /dev/fuse
	// nor run a setuid-root fusermount3.
	ErrNoFUSEAccess = errors.New("no access to FUSE")
	// ErrAllowOther: --allow-other asked by a user other than root
	// without user_allow_other in /etc/fuse.conf.
	ErrAllowOther = errors.New("allow_other not permitted")
	// ErrNotMounted: Unmount of a directory nothing is mounted on.
	ErrNotMounted = errors.New("not mounted")
	// ErrNotCramfs: Unmount of a mount that is not a cramfs one, or that
	// belongs to another user.
	ErrNotCramfs = errors.New("not a cramfs mount")
)

// fuseConf is the FUSE configuration file that fusermount3 reads.
const fuseConf = "/etc/fuse.conf"

// cramfsFSType is the file system type of a cramfs mount in mountinfo
// (go-fuse names it fuse.NAME, NAME being MountOptions.Name).
const cramfsFSType = "fuse.cramfs"

// fuseAccessProblem returns why the user with effective id euid cannot
// mount with FUSE through the fusermount binary fm, or "" when they can
// (root, or /dev/fuse readable and writable, or fm setuid root and
// executable by them). A readable and writable /dev/fuse does not prove
// that the mount will work, only that nothing here rules it out.
func fuseAccessProblem(euid int, fm string) string {
	if euid == 0 {
		return ""
	}
	devRW := unix.Faccessat(unix.AT_FDCWD, "/dev/fuse", unix.R_OK|unix.W_OK, unix.AT_EACCESS) == nil
	if devRW {
		return ""
	}
	setuid := false
	fmDesc := fm
	if fi, err := os.Stat(fm); err == nil {
		st, _ := fi.Sys().(*syscall.Stat_t)
		setuid = fi.Mode()&os.ModeSetuid != 0 && st != nil && st.Uid == 0 &&
			unix.Faccessat(unix.AT_FDCWD, fm, unix.X_OK, unix.AT_EACCESS) == nil
		fmDesc = fmt.Sprintf("%s (%v %s)", fm, fi.Mode(), owner(st))
	}
	if setuid {
		return ""
	}
	dev := "/dev/fuse"
	if fi, err := os.Stat(dev); err == nil {
		st, _ := fi.Sys().(*syscall.Stat_t)
		dev = fmt.Sprintf("/dev/fuse (c%s %s)", fi.Mode().Perm().String()[1:], owner(st))
	}
	return fmt.Sprintf("user %d can neither open %s nor run a setuid-root fusermount3: %s is not setuid root;"+
		" run cramfs as root, or ask an administrator to let users mount (chmod u+s %s, or chmod 0666 /dev/fuse)",
		euid, dev, fmDesc, fm)
}

// owner formats a file's owner and group as ls -n does, "uid:gid".
func owner(st *syscall.Stat_t) string {
	if st == nil {
		return "?"
	}
	return fmt.Sprintf("%d:%d", st.Uid, st.Gid)
}

// CheckAllowOther says whether the current user may ask for allow_other:
// root may; anyone else needs user_allow_other in /etc/fuse.conf, or
// fusermount3 refuses the mount.
func CheckAllowOther() error {
	return allowOtherProblem(os.Geteuid(), fuseConf)
}

func allowOtherProblem(euid int, conf string) error {
	if euid == 0 {
		return nil
	}
	f, err := os.Open(conf)
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if line, _, _ := strings.Cut(sc.Text(), "#"); strings.TrimSpace(line) == "user_allow_other" {
				return nil
			}
		}
	}
	return fmt.Errorf("%w: --allow-other: %w for user %d: %s does not contain the line user_allow_other;"+
		" add it (as root), or mount without --allow-other", ErrMount, ErrAllowOther, euid, conf)
}

// mountEntry is one line of /proc/self/mountinfo (proc(5)).
type mountEntry struct {
	point  string // mount point, unescaped
	fstype string
	source string
	userID int // the user_id= super option of FUSE mounts, -1 when absent
}

// parseMountinfo parses one mountinfo line: ID, parent ID, MAJ:MIN, root,
// mount point, options, optional fields up to "-", then the file system
// type, the source and the super options.
func parseMountinfo(line string) (mountEntry, bool) {
	f := strings.Fields(line)
	if len(f) < 5 {
		return mountEntry{}, false
	}
	e := mountEntry{point: unescapeMount(f[4]), userID: -1}
	for i := 5; i < len(f); i++ {
		if f[i] != "-" {
			continue
		}
		if i+1 < len(f) {
			e.fstype = f[i+1]
		}
		if i+2 < len(f) {
			e.source = unescapeMount(f[i+2])
		}
		if i+3 < len(f) {
			for _, o := range strings.Split(f[i+3], ",") {
				if v, ok := strings.CutPrefix(o, "user_id="); ok {
					if n, err := strconv.Atoi(v); err == nil {
						e.userID = n
					}
				}
			}
		}
		break
	}
	return e, true
}

// findMount returns the last (topmost) mount on dir, from
// /proc/self/mountinfo.
func findMount(dir string) (mountEntry, bool, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return mountEntry{}, false, err
	}
	defer f.Close()
	var found mountEntry
	ok := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if e, good := parseMountinfo(sc.Text()); good && e.point == dir {
			found, ok = e, true
		}
	}
	return found, ok, sc.Err()
}

// unmountable checks that mnt (an absolute, clean path) holds a cramfs
// mount that the user with effective id euid may unmount.
func unmountable(mnt string, euid int) error {
	e, ok, err := findMount(mnt)
	if err != nil {
		return nil // no mount table: let fusermount3 decide
	}
	if !ok {
		return fmt.Errorf("%w: nothing to unmount: %s is %w", ErrMount, mnt, ErrNotMounted)
	}
	if e.fstype != cramfsFSType {
		return fmt.Errorf("%w: %s is %w but a %s mount of %s; left alone (unmount it with umount if you mean it)",
			ErrMount, mnt, ErrNotCramfs, e.fstype, e.source)
	}
	if euid != 0 && e.userID >= 0 && e.userID != euid {
		return fmt.Errorf("%w: %s: %w of yours: it belongs to user %d, you are user %d; only they or root can unmount it",
			ErrMount, mnt, ErrNotCramfs, e.userID, euid)
	}
	return nil
}
