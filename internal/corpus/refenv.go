package corpus

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Tools that read references as htslib does (samtools, scramble, pysam,
// and cramfs itself) look for M5-named sequence files through REF_PATH and
// REF_CACHE, and htslib writes the files it finds through REF_PATH into
// REF_CACHE (creating the directory). A test must neither read what the
// machine holds there nor leave files there for another test to find, so
// every such tool a test runs gets the settings of noRefVars, or ones the
// test made under its own t.TempDir().

// noRefVars returns REF_PATH and REF_CACHE settings under which no M5-named
// file is found, fetched or written: REF_PATH names a directory under dir
// that is never created, and REF_CACHE is empty. (htslib goes to the
// network only when REF_PATH is empty, and keeps a cache only when
// REF_CACHE is set or REF_PATH is empty; cramfs reads its default cache
// only when both are unset.)
func noRefVars(dir string) (refPath, refCache string) {
	return filepath.Join(dir, "no-m5-files"), ""
}

// NoRefEnv returns the process environment with REF_PATH and REF_CACHE
// replaced by settings under which no M5-named file is found, fetched or
// written, REF_PATH naming a path under tb's own temporary directory. It
// is the environment for a tool that must use only the references given
// on its command line.
func NoRefEnv(tb testing.TB) []string {
	refPath, refCache := noRefVars(tb.TempDir())
	return RefEnv(refPath, refCache)
}

// RefEnv returns the process environment with REF_PATH and REF_CACHE
// replaced by the values given.
func RefEnv(refPath, refCache string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REF_PATH=") && !strings.HasPrefix(kv, "REF_CACHE=") {
			env = append(env, kv)
		}
	}
	return append(env, "REF_PATH="+refPath, "REF_CACHE="+refCache)
}

// SetNoRefEnv sets REF_PATH and REF_CACHE in the process environment, for
// the test binary and every tool it runs, as NoRefEnv does, REF_PATH
// naming a path under dir. A TestMain calls it with a directory of its
// own, so that no test depends on the machine's settings.
func SetNoRefEnv(dir string) error {
	refPath, refCache := noRefVars(dir)
	if err := os.Setenv("REF_PATH", refPath); err != nil {
		return err
	}
	return os.Setenv("REF_CACHE", refCache)
}
