package source

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestIdentityReusesItsWindow: the identity check that every first build
// of a segment makes reads the file's ends without a fresh buffer each
// time (800 builds of a file made 50 MB of garbage).
func TestIdentityReusesItsWindow(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, bytes.Repeat([]byte("cramfs"), identityWindow), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	first, err := FileIdentity(f)
	if err != nil {
		t.Fatal(err)
	}
	if first.Size < 2*identityWindow {
		t.Fatalf("fixture of %d bytes, want at least %d", first.Size, 2*identityWindow)
	}
	const calls = 20
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		if id, err := FileIdentity(f); err != nil || id != first {
			t.Fatalf("identity %+v, %v; want %+v", id, err, first)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / calls; per > identityWindow/4 {
		t.Errorf("%d bytes allocated per identity check of a %d KiB window", per, identityWindow>>10)
	}
}
