// Package smapstest reads /proc/self/smaps for tests that check how a
// mapping's pages are held (resident bytes, madvise flags).
package smapstest

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// Mapping returns the fields ("Rss", "VmFlags", ...) of the mapping of
// /proc/self/smaps that holds address a, each value as smaps writes it
// after the colon, trimmed. It skips t where there is no smaps and fails
// it when no mapping holds a.
func Mapping(t testing.TB, a uintptr) map[string]string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var fields map[string]string
	for sc.Scan() {
		line := sc.Text()
		if r, _, ok := strings.Cut(line, " "); ok && strings.Contains(r, "-") && !strings.HasSuffix(r, ":") {
			if fields != nil {
				return fields
			}
			lo, hi, _ := strings.Cut(r, "-")
			l, err1 := strconv.ParseUint(lo, 16, 64)
			h, err2 := strconv.ParseUint(hi, 16, 64)
			if err1 == nil && err2 == nil && uint64(a) >= l && uint64(a) < h {
				fields = map[string]string{}
			}
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok && fields != nil {
			fields[k] = strings.TrimSpace(v)
		}
	}
	if fields == nil {
		t.Fatalf("no mapping holds %#x", a)
	}
	return fields
}
