package fqzcomp

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/internal/codectest"
	"github.com/cramfs/cramfs/internal/corpus"
)

// decodeNew decodes src into a new slice (see codectest.Decode).
func decodeNew(src []byte, rawSize int) ([]byte, error) {
	return codectest.Decode(AppendDecode, src, rawSize)
}

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
				got, err := decodeNew(src, raw)
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
				if _, err := decodeNew(src[:cut], len(want)); err == nil {
					t.Errorf("prefix of %d bytes decoded without error", cut)
				} else if !errors.Is(err, ErrCorrupt) {
					t.Errorf("prefix of %d bytes: error %v does not wrap ErrCorrupt", cut, err)
				}
			}
			if _, err := decodeNew(src, len(want)-1); err == nil {
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
			out, err := decodeNew(tc.src, tc.raw)
			if err == nil {
				t.Fatalf("want error, got %d bytes", len(out))
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
		})
	}
	// A zero-length stream needs no range-coded data.
	if out, err := decodeNew(append([]byte{0}, base[1:11]...), 0); err != nil || len(out) != 0 {
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
				if _, err := decodeNew(src, len(want)); err != nil {
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
	for _, name := range []string{"custom1.fqz", "custom2.fqz", "custom3.fqz"} {
		if src, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(src[:min(len(src), 600)], -1)
		}
	}
	f.Add([]byte{10, version, 0, 0, 0, 0, 40, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0}, 10)
	// Alphabets at the direct layout's edges: one symbol (indirect
	// layout), two, and the largest and first too large direct models.
	for _, maxSym := range []byte{0, 1, 60, 61} {
		f.Add([]byte{40, version, 0, 0, 0, pflagDoLen, maxSym, 0x22, 0x00, 0x00,
			0x5a, 0x13, 0xc7, 0x80, 0x01, 0xff, 0x3e, 0x77, 0x00, 0x10, 0x9b, 0x42}, 40)
	}
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
		out, err := decodeNew(src, rawSize)
		// The indirect model layout must agree with the direct one.
		alt, altErr := appendDecode(nil, src, rawSize, 0)
		if (err == nil) != (altErr == nil) || err == nil && !bytes.Equal(out, alt) {
			t.Fatalf("direct layout: %v; indirect layout: %v", err, altErr)
		}
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

// TestAppendDecodeVectors decodes every corpus vector into each shape of
// dst codectest.CheckAppend makes, with the raw size given and unknown.
func TestAppendDecodeVectors(t *testing.T) {
	dir := corpus.Dir(t)
	for _, v := range corpus.CodecVectors(t, dir, "fqzcomp") {
		t.Run(v.Compressed, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, v.Compressed))
			if err != nil {
				t.Fatal(err)
			}
			want := expected(t, dir, v)
			codectest.CheckAppend(t, AppendDecode, src, len(want), want)
			codectest.CheckAppend(t, AppendDecode, src, -1, want)
		})
	}
}

// TestPooledReuse decodes the vectors repeatedly in shuffled orders, so
// that pooled decoders meet models and parameter tables left by streams of
// other alphabets and context layouts, and compares every result.
func TestPooledReuse(t *testing.T) {
	dir := corpus.Dir(t)
	type vec struct{ src, want []byte }
	var vs []vec
	for _, v := range corpus.CodecVectors(t, dir, "fqzcomp") {
		src, err := os.ReadFile(filepath.Join(dir, v.Compressed))
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, vec{src, expected(t, dir, v)})
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 3; round++ {
		for i, k := range rng.Perm(len(vs)) {
			v := vs[k]
			// Interleave a failing (truncated) decode, which must not
			// leave the pool in a bad state either.
			if _, err := decodeNew(v.src[:len(v.src)/2], len(v.want)); err == nil {
				t.Fatalf("round %d: truncated vector %d decoded", round, k)
			}
			got, err := decodeNew(v.src, len(v.want))
			if err != nil || !bytes.Equal(got, v.want) {
				t.Fatalf("round %d, step %d: vector %d decoded wrongly after reuse (%v)", round, i, k, err)
			}
		}
	}
}

// TestIndirectLayout decodes every vector with the model layout that
// streams of many symbols and contexts get, and compares with Decode.
func TestIndirectLayout(t *testing.T) {
	dir := corpus.Dir(t)
	for _, v := range corpus.CodecVectors(t, dir, "fqzcomp") {
		src, err := os.ReadFile(filepath.Join(dir, v.Compressed))
		if err != nil {
			t.Fatal(err)
		}
		want := expected(t, dir, v)
		got, err := appendDecode([]byte("x"), src, len(want), 0)
		if err != nil {
			t.Fatalf("%s: %v", v.Compressed, err)
		}
		if !bytes.Equal(got[1:], want) || got[0] != 'x' {
			t.Fatalf("%s: indirect layout decodes differently", v.Compressed)
		}
		if _, err := appendDecode(nil, src[:len(src)-len(src)/3], len(want), 0); err == nil {
			t.Fatalf("%s: truncated stream decoded", v.Compressed)
		}
	}
}

// TestFixtures decodes the project's own libhtscodecs-encoded fixtures,
// whose parameters (context locations, tables, selectors, wrapping
// contexts, reversal with and without duplicate records) the corpus
// vectors do not cover, with both model layouts.
func TestFixtures(t *testing.T) {
	for _, name := range []string{"custom1", "custom2", "custom3"} {
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata", name+".fqz"))
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join("testdata", name+".raw"))
			if err != nil {
				t.Fatal(err)
			}
			for _, limit := range []int{maxDirectModels, 0} {
				got, err := appendDecode(nil, src, len(want), limit)
				if err != nil {
					t.Fatalf("direct limit %d: %v", limit, err)
				}
				if !bytes.Equal(got, want) {
					i := 0
					for i < len(got) && i < len(want) && got[i] == want[i] {
						i++
					}
					t.Fatalf("direct limit %d: %d bytes, want %d; first difference at %d", limit, len(got), len(want), i)
				}
			}
			for _, cut := range []int{10, len(src) / 2, len(src) - 1} {
				if _, err := decodeNew(src[:cut], len(want)); !errors.Is(err, ErrCorrupt) {
					t.Errorf("prefix of %d bytes: %v, want ErrCorrupt", cut, err)
				}
			}
		})
	}
}

// TestReverse compares reverse with a byte-wise reversal for every
// length up to 40, around its eight-byte steps.
func TestReverse(t *testing.T) {
	for n := 0; n <= 40; n++ {
		q := make([]byte, n)
		want := make([]byte, n)
		for i := range q {
			q[i] = byte(i + 1)
			want[n-1-i] = byte(i + 1)
		}
		if reverse(q); !bytes.Equal(q, want) {
			t.Fatalf("length %d: reversed %v, want %v", n, q, want)
		}
	}
}
