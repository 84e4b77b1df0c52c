package main

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// cramfs as a mount helper. `mount -t fuse.cramfs SRC MNT -o OPTS` (or an
// /etc/fstab line of type fuse.cramfs) runs mount.fuse3, which runs
// `cramfs SRC MNT -o OPTS`; mount(8) runs /sbin/mount.fuse.cramfs (a link
// to cramfs) the same way, with -n, -s, -f or -v before -o. In that form
// every option of `cramfs mount` is an -o option, its long name with
// underscores (`reference=FASTA`, repeatable; `cache_dir=DIR`;
// `allow_other`), the generic mount options that mean nothing to a
// read-only FUSE mount are accepted and ignored, `rw` is refused, and the
// mount goes to the background once it answers (mount(8) waits for that).

// isHelperName reports whether the program was called as a mount helper.
func isHelperName(argv0 string) bool {
	switch filepath.Base(argv0) {
	case "mount.fuse.cramfs", "mount.cramfs":
		return true
	}
	return false
}

// ignoredMountOptions are mount(8)'s and fstab's generic options, which
// say nothing to cramfs: it is read-only, and never executes, honours
// set-user-ID bits or devices from SRC. ro is what it is anyway.
var ignoredMountOptions = []string{
	"ro", "defaults", "auto", "noauto", "user", "nouser", "users", "owner", "group", "_netdev", "nofail",
	"dev", "nodev", "suid", "nosuid", "exec", "noexec", "async", "sync",
	"atime", "noatime", "diratime", "nodiratime", "relatime", "norelatime", "strictatime", "lazytime",
	"default_permissions",
}

// helperArgs turns the mount helper's command line (SRC MNT, with -o OPTS
// and mount(8)'s -n, -s, -f, -v anywhere after them) into the arguments
// of `cramfs mount`, with --daemon first. fs is the mount command's flag
// set, which names the options -o may give.
func helperArgs(args []string, fs *pflag.FlagSet) ([]string, error) {
	var operands, opts []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-o":
			if i+1 == len(args) {
				return nil, usageError{"-o: want a list of mount options"}
			}
			i++
			opts = append(opts, args[i])
		case strings.HasPrefix(a, "-o"):
			opts = append(opts, a[2:])
		case a == "-n", a == "-s", a == "-f", a == "-v":
			// no mtab, sloppy, fake, verbose: mount(8)'s business
		case a == "-t", a == "-N":
			i++ // the type (fuse.cramfs) or a namespace: mount(8)'s
		case strings.HasPrefix(a, "-"):
			return nil, usageError{fmt.Sprintf("%s: not an option of a mount helper (want SRC MNT -o OPTIONS)", a)}
		default:
			operands = append(operands, a)
		}
	}
	if len(operands) != 2 {
		return nil, usageError{fmt.Sprintf("want SRC and MNT, got %d arguments", len(operands))}
	}
	out := []string{"--daemon"}
	for _, list := range opts {
		for _, o := range strings.Split(list, ",") {
			flags, err := mountOption(o, fs)
			if err != nil {
				return nil, err
			}
			out = append(out, flags...)
		}
	}
	return append(out, "--", operands[0], operands[1]), nil
}

// mountOption is the `cramfs mount` argument of one -o option.
func mountOption(o string, fs *pflag.FlagSet) ([]string, error) {
	name, value, hasValue := strings.Cut(o, "=")
	switch {
	case name == "":
		return nil, nil
	case name == "rw":
		return nil, usageError{"-o rw: cramfs is read-only: give -o ro (mount(8) passes rw unless ro is given)"}
	case slices.Contains(ignoredMountOptions, name), strings.HasPrefix(name, "x-"), name == "comment":
		return nil, nil
	}
	long := strings.ReplaceAll(name, "_", "-")
	f := fs.Lookup(long)
	if f == nil || f.Hidden || long == "help" || long == "daemon" {
		return nil, usageError{fmt.Sprintf("-o %s: unknown mount option (see `cramfs mount --help`; -o takes each option's long name with _ for -)", o)}
	}
	if f.Value.Type() == "bool" {
		if hasValue {
			return []string{"--" + long + "=" + value}, nil
		}
		return []string{"--" + long}, nil
	}
	if !hasValue {
		return nil, usageError{fmt.Sprintf("-o %s: wants a value (%s=VALUE)", name, name)}
	}
	return []string{"--" + long + "=" + value}, nil
}
