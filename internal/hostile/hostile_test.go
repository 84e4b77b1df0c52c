package hostile

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

func fixture(t testing.TB, name string) []byte {
	b, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata", "cram", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestVarintRoundTrip(t *testing.T) {
	for _, v := range []int32{0, 1, 0x7f, 0x80, 0x3fff, 0x4000, 0x1fffff, 0x200000, 0xfffffff, 0x10000000, 1 << 30, 0x7fffffff, -1, -0x80000000} {
		b := putITF8(nil, v)
		f, err := getITF8(b, 0)
		if err != nil || f.len != len(b) || int32(f.val) != v {
			t.Errorf("ITF-8 %d: encoded %x, decoded %+v, %v", v, b, f, err)
		}
	}
	for _, v := range []int64{0, 0x7f, 0x80, 1 << 14, 1 << 21, 1 << 28, 1 << 35, 1 << 42, 1 << 49, 1 << 56, 1<<56 - 1, 1 << 62, -1} {
		b := putLTF8(nil, v)
		f, err := getLTF8(b, 0)
		if err != nil || f.len != len(b) || f.val != v {
			t.Errorf("LTF-8 %d: encoded %x, decoded %+v, %v", v, b, f, err)
		}
	}
}

func TestRebuildUnchangedIsIdentity(t *testing.T) {
	for _, name := range []string{"ce_1000.3.0-multislice.cram", "ce_1000.3.1-archive.cram", "ce_1000.2.1.cram", "ce_5b.3.0.cram"} {
		orig := fixture(t, name)
		l, err := parse(orig)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for ci := range l.containers {
			if ci == 0 && l.containers[0].blocksEnd() < l.containers[0].end {
				continue // the SAM header container's padding is not kept
			}
			got := l.rebuild(orig, ci, func(*headerSpec, []blockSpec) {})
			if !bytes.Equal(got, orig) {
				t.Errorf("%s: rebuilding container %d changed the file", name, ci)
			}
		}
		b := bytes.Clone(orig)
		l.fixCRCs(b)
		if !bytes.Equal(b, orig) {
			t.Errorf("%s: recomputing the CRCs changed the file", name)
		}
	}
}

func TestVariantsDeterministicAndDamaged(t *testing.T) {
	orig := fixture(t, "ce_1000.3.0.cram")
	a, err := Variants(orig, 7, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Variants(orig, 7, Options{})
	if len(a) != len(b) {
		t.Fatalf("%d then %d variants for one seed", len(a), len(b))
	}
	kinds := map[Kind]int{}
	for i := range a {
		if a[i].Name != b[i].Name || !bytes.Equal(a[i].Data, b[i].Data) {
			t.Fatalf("variant %d differs between runs: %q / %q", i, a[i].Name, b[i].Name)
		}
		if !a[i].NoReference && bytes.Equal(a[i].Data, orig) {
			t.Errorf("variant %q is the original", a[i].Name)
		}
		kinds[a[i].Kind]++
	}
	for _, k := range []Kind{Truncate, Flip, FlipFixed, Lie, RefMD5, NoReference} {
		if kinds[k] == 0 {
			t.Errorf("no variant of kind %s", k)
		}
	}
	if _, err := Variants([]byte("not a cram"), 1, Options{}); err == nil {
		t.Error("a non-CRAM input was accepted")
	}
	t.Logf("%d variants: %v", len(a), kinds)
}
