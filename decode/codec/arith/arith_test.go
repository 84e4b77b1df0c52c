package arith

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// readManifest returns the manifest vectors of one codec.
func readManifest(tb testing.TB, dir, codec string) []corpus.CodecVector {
	tb.Helper()
	return corpus.CodecVectors(tb, dir, codec)
}

func TestManifestVectors(t *testing.T) {
	dir := corpus.Dir(t)
	vs := readManifest(t, dir, "arith")
	if len(vs) == 0 {
		t.Fatal("no arith vectors in manifest")
	}
	for _, v := range vs {
		t.Run(v.Compressed, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, v.Compressed))
			if err != nil {
				t.Fatal(err)
			}
			want := v.Expected(t, dir)
			for _, raw := range []int{len(want), -1} {
				got, err := Decode(src, raw)
				if v.Result != "OK" {
					if err == nil {
						t.Fatalf("rawSize %d: want error, got %d bytes", raw, len(got))
					}
					continue
				}
				if err != nil {
					t.Fatalf("rawSize %d (flags %#x): %v", raw, src[0], err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("rawSize %d: decoded %d bytes differ from expected %d", raw, len(got), len(want))
				}
			}
			// Every proper prefix must fail cleanly (never panic, never
			// return the full output).
			for _, cut := range []int{0, 1, 2, len(src) / 2, len(src) - 1} {
				if cut < 0 || cut >= len(src) {
					continue
				}
				if _, err := Decode(src[:cut], len(want)); err == nil {
					t.Errorf("prefix of %d bytes decoded without error", cut)
				} else if !errors.Is(err, ErrCorrupt) {
					t.Errorf("prefix of %d bytes: error %v does not wrap ErrCorrupt", cut, err)
				}
			}
			if _, err := Decode(src, len(want)+1); err == nil {
				t.Error("wrong rawSize accepted")
			}
		})
	}
}

func TestHandMade(t *testing.T) {
	tests := []struct {
		name    string
		src     []byte
		rawSize int
		want    []byte
		wantErr bool
	}{
		{"cat", []byte{flagCat, 3, 'a', 'b', 'c'}, -1, []byte("abc"), false},
		{"cat nosize", []byte{flagCat | flagNoSize, 'x', 'y'}, 2, []byte("xy"), false},
		{"cat short", []byte{flagCat, 4, 'a', 'b', 'c'}, -1, nil, true},
		{"empty length 0", []byte{0, 0}, 0, []byte{}, false},
		{"nosize unknown", []byte{flagNoSize, 1, 2}, -1, nil, true},
		{"size mismatch", []byte{flagCat, 3, 'a', 'b', 'c'}, 2, nil, true},
		{"empty", nil, -1, nil, true},
		{"pack constant", []byte{flagPack, 5, 1, 'Q', 0}, -1, []byte("QQQQQ"), false},
		{"pack 1-bit cat", []byte{flagPack | flagCat, 10, 2, 'a', 'b', 2, 0x55, 0x02}, -1, []byte("babababaab"), false},
		{"pack 2-bit cat", []byte{flagPack | flagCat, 5, 4, 'a', 'b', 'c', 'd', 2, 0xE4, 0x01}, -1, []byte("abcdb"), false},
		{"pack 4-bit cat", []byte{flagPack | flagCat, 3, 5, '0', '1', '2', '3', '4', 2, 0x43, 0x02}, -1, []byte("342"), false},
		{"pack too many syms", []byte{flagPack | flagCat, 1, 17}, -1, nil, true},
		{"pack short data", []byte{flagPack | flagCat, 10, 2, 'a', 'b', 1, 0x55}, -1, nil, true},
		{"pack plen > len", []byte{flagPack | flagCat, 1, 2, 'a', 'b', 9, 1, 2, 3}, -1, nil, true},
		{"stripe cat", []byte{flagStripe, 5, 2, 4, 4, flagCat | flagNoSize, 'a', 'c', 'e', flagCat, 2, 'b', 'd'}, -1, []byte("abcde"), false},
		{"stripe zero N", []byte{flagStripe, 5, 0}, -1, nil, true},
		{"stripe sub too long", []byte{flagStripe, 2, 1, 9, flagCat | flagNoSize, 'a', 'b'}, -1, nil, true},
		{"stripe size mismatch", []byte{flagStripe, 4, 2, 4, 3, flagCat | flagNoSize, 'a', 'c', flagCat, 1, 'b'}, -1, nil, true},
		{"ext bad magic", []byte{flagExt, 3, 'X', 'Y', 'Z'}, -1, nil, true},
		{"uint7 overflow", []byte{0, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F}, -1, nil, true},
		{"order0 truncated rc", []byte{0, 4, 0, 1, 2}, -1, nil, true},
		{"huge size", []byte{0, 0x84, 0x80, 0x80, 0x80, 0x00, 0}, -1, nil, true},
		{"order0 one symbol", []byte{0, 100, 1, 0, 0, 0, 0, 0}, -1, make([]byte, 100), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode(tc.src, tc.rawSize)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("want error, got %q", got)
				}
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("error %v does not wrap ErrCorrupt", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestModelAdapts(t *testing.T) {
	// A one-symbol model always yields symbol 0, keeps the range coder
	// consistent and renormalises its total below the limit.
	var rc RangeDecoder
	if err := rc.Init(make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	m := NewModel(3)
	for i := 0; i < 10000; i++ {
		if s := rc.Decode(m); s != 0 {
			t.Fatalf("step %d: symbol %d, want 0 for an all-zero code", i, s)
		}
		if m[0] > maxFreq {
			t.Fatalf("total %d above limit", m[0])
		}
	}
	if rc.Err() != nil {
		t.Fatal(rc.Err())
	}
	if f := m[1] >> 8; f < m[2]>>8 || f < m[3]>>8 {
		t.Fatalf("decoded symbol not first by frequency: %x", m)
	}
	if InitModel(make([]uint32, 2), 2) != nil || NewModel(0) != nil || NewModel(257) != nil {
		t.Fatal("invalid model sizes accepted")
	}
}

func benchVectors(b *testing.B, names ...string) {
	dir := corpus.Dir(b)
	vs := readManifest(b, dir, "arith")
	for _, name := range names {
		var v corpus.CodecVector
		for _, x := range vs {
			if x.Compressed == name {
				v = x
			}
		}
		if v.Compressed == "" {
			b.Fatalf("%s not in manifest", name)
		}
		src, err := os.ReadFile(filepath.Join(dir, v.Compressed))
		if err != nil {
			b.Fatal(err)
		}
		want := v.Expected(b, dir)
		b.Run(filepath.Base(name), func(b *testing.B) {
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

func BenchmarkDecode(b *testing.B) {
	benchVectors(b,
		"htscodecs/tests/dat/arith/q4.0",
		"htscodecs/tests/dat/arith/q4.1",
		"htscodecs/tests/dat/arith/q40+dir.0",
		"htscodecs/tests/dat/arith/q40+dir.1",
		"htscodecs/tests/dat/arith/q8.65",
		"htscodecs/tests/dat/arith/q4.193",
		"htscodecs/tests/dat/arith/u32.9",
	)
}

func FuzzDecode(f *testing.F) {
	// Seeds from the corpus when present; the fuzz target itself runs
	// without it.
	dir := os.Getenv("CRAMFS_CORPUS")
	if dir == "" {
		dir = filepath.Join(corpus.Root(), "..", "shared", "corpus")
	}
	// Short prefixes keep executions (and minimisation) fast while still
	// covering each format's header and first symbols.
	for _, name := range []string{"qvar.32", "u32.9", "q4.193", "qvar.65", "u32.4", "q8.1"} {
		if src, err := os.ReadFile(filepath.Join(dir, "htscodecs/tests/dat/arith", name)); err == nil {
			f.Add(src[:min(len(src), 400)], -1)
		}
	}
	f.Add([]byte{flagCat, 3, 'a', 'b', 'c'}, -1)
	f.Add([]byte{flagPack | flagCat, 10, 2, 'a', 'b', 2, 0x55, 0x02}, 10)
	f.Add([]byte{flagStripe, 5, 2, 4, 4, flagCat | flagNoSize, 'a', 'c', 'e', flagCat, 2, 'b', 'd'}, -1)
	f.Add([]byte{flagRLE | 1, 50, 3, 1, 2, 3, 4, 5, 6, 7, 8}, -1)
	f.Add([]byte{flagNoSize | 1, 4, 9, 9, 9, 9, 9, 9}, 20)
	f.Fuzz(func(t *testing.T, src []byte, rawSize int) {
		// Keep each execution small: bound the decoded size whether it
		// comes from rawSize or from the stream itself.
		if rawSize > 1<<16 {
			rawSize = 1 << 16
		}
		if rawSize < 0 && len(src) > 1 {
			if v, _, err := readUint7(src, 1); err == nil && v > 1<<16 {
				return
			}
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
