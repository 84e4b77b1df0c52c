package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/pflag"
)

// versionCmd is `cramfs version` (and `cramfs --version`).
type versionCmd struct{}

func (*versionCmd) flags(*pflag.FlagSet) {}

func (*versionCmd) run(operands []string, e *env) error {
	if len(operands) != 0 {
		return usageError{fmt.Sprintf("want no arguments, got %q", operands)}
	}
	bi, _ := debug.ReadBuildInfo()
	fmt.Fprint(e.stdout, versionText(bi))
	return nil
}

// versionText is the module version, the commit the binary was built from
// (with its time, and "modified" for a work tree with uncommitted changes)
// when the build recorded it, and the Go version and platform.
func versionText(bi *debug.BuildInfo) string {
	version := "(unknown)"
	var rev, when, modified string
	if bi != nil {
		version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = ", modified"
				}
			}
		}
	}
	out := "cramfs " + version + "\n"
	if rev != "" {
		out += fmt.Sprintf("commit %s (%s%s)\n", rev, when, modified)
	} else {
		// go build records it only in a plain git clone, not a worktree,
		// and not with -buildvcs=false.
		out += "commit unknown (built without version control information)\n"
	}
	return out + fmt.Sprintf("%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
