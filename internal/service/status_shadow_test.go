package service

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStatusShowsShadowed: real entries of SRC named like a CRAM's
// synthetic files (a directory v.bam beside v.cram, a real x.bai) are
// listed by `cramfs status`, text and --json, once a listing met them.
func TestStatusShowsShadowed(t *testing.T) {
	requireMount(t)
	bin := buildCramfs(t)
	src, cache := t.TempDir(), t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "sub", "v.bam"), 0o755))
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), filepath.Join(src, "x.cram"))
	copyFile(t, testdata("cram", "ce_5b.3.0.cram"), filepath.Join(src, "sub", "v.cram"))
	must(t, os.WriteFile(filepath.Join(src, "x.bai"), []byte("a real x.bai"), 0o644))
	p := startMount(t, bin, src, "--cache-dir", cache)
	for _, dir := range []string{p.Mnt, filepath.Join(p.Mnt, "sub")} {
		if _, err := os.ReadDir(dir); err != nil {
			t.Fatal(err)
		}
	}

	st := statusJSON(t, cache, p.Mnt)
	want := []shadowStatus{
		{Dir: ".", Name: "x.bai", Kind: "file", CRAM: "x.cram"},
		{Dir: "sub", Name: "v.bam", Kind: "directory", CRAM: "v.cram"},
	}
	got := slices.Clone(st.Shadowed)
	slices.SortFunc(got, func(a, b shadowStatus) int { return strings.Compare(a.Dir, b.Dir) })
	if !slices.Equal(got, want) || st.ShadowedMore {
		t.Errorf("status shadowed %+v (more: %v), want %+v", st.Shadowed, st.ShadowedMore, want)
	}
	rc, stderr, out := runCmd(t, "status", "--cache-dir", cache, p.Mnt)
	for _, line := range []string{
		"shadowed: x.bai (file) is shown instead of the synthetic file of x.cram",
		"shadowed: sub/v.bam (directory) is shown instead of the synthetic file of sub/v.cram",
	} {
		if rc != 0 || !strings.Contains(string(out), line) {
			t.Errorf("cramfs status: exit %d, stderr %q, stdout without %q:\n%s", rc, stderr, line, out)
		}
	}
}
