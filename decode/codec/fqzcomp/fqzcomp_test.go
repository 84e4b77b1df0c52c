package fqzcomp

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// expected returns the Phred values (first column minus 33, lines
// concatenated) of a vector's raw input.
func expected(tb testing.TB, dir string, v corpus.CodecVector) []byte {
	tb.Helper()
	var out []byte
	for _, line := range bytes.Split(v.Input(tb, dir), []byte("\n")) {
		if i := bytes.IndexByte(line, '\t'); i >= 0 {
			line = line[:i]
		}
		for _, c := range line {
			out = append(out, c-33)
		}
	}
	return out
}

func TestManifestVectors(t *testing.T) {
	dir := corpus.Dir(t)
	vs := corpus.CodecVectors(t, dir, "fqzcomp")
	if len(vs) == 0 {
		t.Fatal("no fqzcomp vectors in manifest")
	}
	for _, v := range vs {
		t.Run(v.Compressed, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, v.Compressed))
			if err != nil {
				t.Fatal(err)
			}
			want := expected(t, dir, v)
			for _, raw := range []int{len(want), -1} {
				got, err := Decode(src, raw)
				if err != nil {
					t.Fatalf("rawSize %d: %v", raw, err)
				}
				if !bytes.Equal(got, want) {
					i := 0
					for i < len(got) && i < len(want) && got[i] == want[i] {
						i++
					}
					t.Fatalf("rawSize %d: %d bytes, want %d; first difference at %d", raw, len(got), len(want), i)
				}
			}
			for _, cut := range []int{0, 1, 5, 12, len(src) / 2, len(src) - 1} {
				if cut >= len(src) {
					continue
				}
				if _, err := Decode(src[:cut], len(want)); err == nil {
					t.Errorf("prefix of %d bytes decoded without error", cut)
				} else if !errors.Is(err, ErrCorrupt) {
					t.Errorf("prefix of %d bytes: error %v does not wrap ErrCorrupt", cut, err)
				}
			}
			if _, err := Decode(src, len(want)-1); err == nil {
				t.Error("wrong rawSize accepted")
			}
		})
	}
}

func TestReadArray(t *testing.T) {
	tests := []struct {
		name    string
		src     []byte
		size    int
		want    []uint32
		used    int
		wantErr bool
	}{
		// The specification's example: A = {0,1,3,4,5,6,7,7,7,7} is stored
		// as R2 = {1,1,+0,0,1,1,+2,4}.
		{"spec example", []byte{1, 1, 0, 0, 1, 1, 2, 4}, 10, []uint32{0, 1, 3, 4, 5, 6, 7, 7, 7, 7}, 8, false},
		{"long run", []byte{255, 255, 0, 90, 10}, 610, nil, 5, false},
		{"identity", []byte{1, 1, 2}, 4, []uint32{0, 1, 2, 3}, 3, false},
		{"truncated copy", []byte{1, 1}, 4, nil, 0, true},
		{"short", []byte{2}, 4, nil, 0, true},
		{"empty", nil, 4, nil, 0, true},
		{"unterminated 255", []byte{255}, 255, nil, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := make([]uint32, tc.size)
			used, err := readArray(tc.src, a)
			if tc.wantErr {
				if err == nil || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("want ErrCorrupt, got %v (a=%v)", err, a)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if used != tc.used {
				t.Fatalf("used %d bytes, want %d", used, tc.used)
			}
			if tc.want != nil {
				for i := range tc.want {
					if a[i] != tc.want[i] {
						t.Fatalf("got %v, want %v", a, tc.want)
					}
				}
			} else if a[0] != 0 || a[599] != 0 || a[600] != 1 || a[609] != 1 {
				t.Fatalf("long run decoded wrongly: a[599..600]=%v", a[599:601])
			}
		})
	}
}

func TestHandMadeErrors(t *testing.T) {
	base := []byte{10, version, 0, 0, 0, 0, 40, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0}
	tests := []struct {
		name string
		src  []byte
		raw  int
	}{
		{"empty", nil, -1},
		{"bad version", append([]byte{10, 4}, base[2:]...), -1},
		{"short params", base[:8], -1},
		{"zero nparam", []byte{10, version, gflagMultiParam, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, -1},
		{"sel without selector", []byte{10, version, 0, 0, 0, pflagDoSel, 40, 0, 0, 0, 0, 0, 0, 0, 0, 0}, -1},
		{"size mismatch", base, 9},
		{"too big", []byte{0x84, 0x80, 0x80, 0x80, 0x00}, -1},
		{"rc truncated", base[:12], -1},
		{"all-zero range code", base, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Decode(tc.src, tc.raw)
			if err == nil {
				t.Fatalf("want error, got %d bytes", len(out))
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
		})
	}
	// A zero-length stream needs no range-coded data.
	if out, err := Decode(append([]byte{0}, base[1:11]...), 0); err != nil || len(out) != 0 {
		t.Fatalf("empty stream: %v, %d bytes", err, len(out))
	}
}

func BenchmarkDecode(b *testing.B) {
	dir := corpus.Dir(b)
	vs := corpus.CodecVectors(b, dir, "fqzcomp")
	for _, v := range vs {
		if !strings.HasPrefix(v.Compressed, "htscodecs/") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, v.Compressed))
		if err != nil {
			b.Fatal(err)
		}
		want := expected(b, dir, v)
		b.Run(filepath.Base(v.Compressed), func(b *testing.B) {
			b.SetBytes(int64(len(want)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Decode(src, len(want)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	dir := os.Getenv("CRAMFS_CORPUS")
	if dir == "" {
		dir = filepath.Join(corpus.Root(), "..", "shared", "corpus")
	}
	for _, name := range []string{"qvar.0", "qvar.1", "qvar.2", "qvar.3"} {
		if src, err := os.ReadFile(filepath.Join(dir, "htscodecs/tests/dat/fqzcomp", name)); err == nil {
			f.Add(src[:min(len(src), 600)], -1)
		}
	}
	f.Add([]byte{10, version, 0, 0, 0, 0, 40, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0}, 10)
	f.Add([]byte{20, version, gflagMultiParam | gflagHaveStab | gflagDoRev, 2, 1, 1, 1,
		0, 0, pflagDoSel | pflagDoDedup, 40, 0x62, 0x0e, 0x00,
		0, 0, pflagDoLen | pflagHaveQmap, 2, 0x11, 0, 0, 7, 9,
		1, 2, 3, 4, 5, 6, 7, 8, 9}, -1)
	f.Fuzz(func(t *testing.T, src []byte, rawSize int) {
		// Keep each execution small: bound the decoded size whether it
		// comes from rawSize or from the stream itself.
		if v, _, err := readUint7(src, 0); err == nil && v > 1<<18 {
			return
		}
		out, err := Decode(src, rawSize)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if rawSize >= 0 && len(out) != rawSize {
			t.Fatalf("decoded %d bytes, rawSize %d", len(out), rawSize)
		}
	})
}
