// Package corpus locates the shared conformance corpus (../shared/corpus
// from the module root, or $CRAMFS_CORPUS) for tests.
package corpus

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Root returns the module root directory (where go.mod is).
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// InCI reports whether the tests run under CI (CI=true), where missing
// tools or data are failures rather than skips.
func InCI() bool { return os.Getenv("CI") == "true" }

// Dir returns the corpus directory. When it is absent the test is skipped,
// or failed under CI.
func Dir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("CRAMFS_CORPUS")
	if dir == "" {
		dir = filepath.Join(Root(), "..", "shared", "corpus")
	}
	if _, err := os.Stat(filepath.Join(dir, "cram_manifest.tsv")); err != nil {
		Missing(tb, "conformance corpus %s: %v", dir, err)
	}
	return dir
}

// Missing skips the test for a missing tool or data set, or fails it
// under CI.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("missing (required under CI=true): "+format, args...)
	}
	tb.Skipf("missing: "+format, args...)
}
