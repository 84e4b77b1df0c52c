package ransnx16

import (
	"bytes"
	"errors"
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

func TestCorpusVectors(t *testing.T) {
	dir := corpus.Dir(t)
	for _, v := range corpus.DecodableCodecVectors(t, dir, "ransNx16") {
		t.Run(v.Compressed, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, v.Compressed))
			if err != nil {
				t.Fatal(err)
			}
			want := v.Expected(t, dir)
			if len(want) != v.RawLen {
				t.Fatalf("expected bytes: %d, manifest says %d", len(want), v.RawLen)
			}
			for _, size := range []int{-1, len(want)} {
				got, err := decodeNew(src, size)
				if err != nil {
					t.Fatalf("decodeNew(rawSize=%d): %v", size, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("decodeNew(rawSize=%d): %d bytes differ from expected %d bytes (%s)", size, len(got), len(want), v.Params)
				}
			}
			if _, err := decodeNew(src, len(want)+1); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode with wrong rawSize: err = %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestAppendDecode decodes every corpus vector with AppendDecode into
// each shape of dst codectest.CheckAppend makes, twice over so that
// recycled tables and buffers are exercised.
func TestAppendDecode(t *testing.T) {
	dir := corpus.Dir(t)
	for round := 0; round < 2; round++ {
		for _, v := range corpus.DecodableCodecVectors(t, dir, "ransNx16") {
			t.Run(v.Compressed, func(t *testing.T) {
				src, err := os.ReadFile(filepath.Join(dir, v.Compressed))
				if err != nil {
					t.Fatal(err)
				}
				want := v.Expected(t, dir)
				codectest.CheckAppend(t, AppendDecode, src, len(want), want)
			})
		}
	}
}

// TestTruncated checks that every proper prefix of a few real streams fails
// cleanly (never a panic, never a silently short result).
func TestTruncated(t *testing.T) {
	dir := corpus.Dir(t)
	for _, name := range []string{"q4.0", "q4.1", "q4.4", "q4.5", "q4.8", "q4.64", "q4.129", "q4.193", "qsimd.69", "qvar.32"} {
		src, err := os.ReadFile(filepath.Join(dir, "htscodecs/tests/dat/r4x16", name))
		if err != nil {
			t.Fatal(err)
		}
		step := len(src)/300 + 1
		for n := 0; n < len(src); n += step {
			if out, err := decodeNew(src[:n], -1); err == nil {
				t.Errorf("%s cut to %d bytes: decoded %d bytes without error", name, n, len(out))
			} else if !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s cut to %d bytes: error %v does not wrap ErrCorrupt", name, n, err)
			}
		}
	}
}

// handMade are tiny streams built by hand from CRAMcodecs section 3.
var handMade = []struct {
	name    string
	src     []byte
	rawSize int
	want    string
	ok      bool
}{
	{"empty", []byte{0x00, 0x00}, -1, "", true},
	{"empty with a truncated table", []byte{0x00, 0x00, '0'}, 0, "", false},
	{"cat", []byte{0x20, 0x03, 'a', 'b', 'c'}, -1, "abc", true},
	{"cat order bit ignored", []byte{0x21, 0x03, 'a', 'b', 'c'}, 3, "abc", true},
	{"cat short", []byte{0x20, 0x04, 'a', 'b', 'c'}, -1, "", false},
	{"nosz cat", []byte{0x30, 'x', 'y'}, 2, "xy", true},
	{"nosz without size", []byte{0x30, 'x', 'y'}, -1, "", false},
	{"size mismatch", []byte{0x20, 0x03, 'a', 'b', 'c'}, 2, "", false},
	{"pack constant", []byte{0x80, 0x05, 0x01, 'x', 0x00}, -1, "xxxxx", true},
	{"pack 2 symbols cat", []byte{0xa0, 0x05, 0x02, 'a', 'b', 0x01, 0x15}, -1, "babab", true},
	{"pack 4 symbols cat", []byte{0xa0, 0x03, 0x03, 'a', 'b', 'c', 0x01, 0x24}, -1, "abc", true},
	{"pack 16 symbols cat", []byte{0xa0, 0x03, 0x10, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 0x02, 0xf0, 0x01}, -1, "apb", true},
	{"pack passthrough", []byte{0xa0, 0x02, 0x00, 0x02, 'h', 'i'}, -1, "hi", true},
	{"pack short data", []byte{0xa0, 0x09, 0x02, 'a', 'b', 0x01, 0x15}, -1, "", false},
	{"rle run too long", []byte{0x60, 0x06, 0x09, 0x03, 0x01, 'a', 0x05, 0x00, 'a', 'b', 'a'}, -1, "", false},
	{"rle cat runs", []byte{0x60, 0x06, 0x09, 0x03, 0x01, 'a', 0x03, 0x00, 'a', 'b', 'a'}, -1, "aaaaba", true},
	{"rle runs missing", []byte{0x60, 0x06, 0x07, 0x03, 0x01, 'a', 0x03, 'a', 'b', 'a'}, -1, "", false},
	{"rle runs missing, long output", append([]byte{0x60, 20, 0x05, 20, 0x01, 'a', 'a'}, bytes.Repeat([]byte{'b'}, 19)...), -1, "", false},
	{"rle long output", append([]byte{0x60, 40, 0x09, 21, 0x01, 'a', 9, 10, 'a'}, append(bytes.Repeat([]byte{'b'}, 19), 'a')...), -1, strings.Repeat("a", 10) + strings.Repeat("b", 19) + strings.Repeat("a", 11), true},
	{"rle pack runs cat", []byte{0xe0, 0x99, 0x00, 0x02, 'a', 'b', 0x83, 0x10, 0x09, 0x02, 0x01, 0x55, 0x83, 0x0e, 0x55, 0x0f}, -1,
		strings.Repeat("ba", 399*4) + "bbbbaaaa", true},
	{"rle pack runs cat, run too long", []byte{0xe0, 0x99, 0x00, 0x02, 'a', 'b', 0x83, 0x10, 0x09, 0x02, 0x01, 0x55, 0x99, 0x64, 0x55, 0x0f}, -1, "", false},
	{"stripe cat", []byte{0x08, 0x04, 0x02, 0x03, 0x03, 0x30, 'a', 'c', 0x30, 'b', 'd'}, -1, "abcd", true},
	{"stripe zero streams", []byte{0x08, 0x04, 0x00}, -1, "", false},
	{"o0 single symbol", []byte{0x00, 0x05, 'A', 0x00, 0xa0, 0x00,
		0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0}, -1, "AAAAA", true},
	{"o0 freq 1 normalised", []byte{0x00, 0x06, 'A', 0x00, 0x01,
		0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0}, -1, "AAAAAA", true},
	{"o0 bad freq sum", []byte{0x00, 0x05, 'A', 'C', 0x00, 0x01, 0x02,
		0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0}, -1, "", false},
	{"o0 state too small", []byte{0x00, 0x05, 'A', 0x00, 0x01,
		0x00, 0x10, 0, 0, 0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0}, -1, "", false},
	{"o0 too few states", []byte{0x00, 0x05, 'A', 0x00, 0x01, 0x00, 0x80, 0, 0}, -1, "", false},
	{"huge size", []byte{0x00, 0x8f, 0xff, 0xff, 0xff, 0x7f}, -1, "", false},
	{"o1 two contexts", []byte{0x01, 0x05, 0xc0, 0x00, 'A', 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x01,
		0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0}, -1, "AAAAA", true},
	{"o1 bad bits", []byte{0x01, 0x05, 0x80, 0x00, 'A', 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x01,
		0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0}, -1, "", false},
	{"o1 missing context", []byte{0x01, 0x05, 0xc0, 'A', 0x00, 0x01,
		0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0, 0x00, 0x80, 0, 0}, -1, "", false},
}

func TestHandMade(t *testing.T) {
	for _, tc := range handMade {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeNew(tc.src, tc.rawSize)
			if !tc.ok {
				if err == nil {
					t.Fatalf("decoded %q, want an error", got)
				}
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("error %v does not wrap ErrCorrupt", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	for _, tc := range handMade {
		f.Add(tc.src, tc.rawSize)
	}
	dir := os.Getenv("CRAMFS_CORPUS")
	if dir == "" {
		dir = filepath.Join(corpus.Root(), "..", "shared", "corpus")
	}
	for _, N := range []int{4, 32} {
		f.Add(o1Long(N, 401, '0', false), 401) // flat 12-bit table
	}
	for _, name := range []string{"qsimd.69", "qvar.32", "qvar.1", "q4.193", "q4.4", "q4.5"} {
		if src, err := os.ReadFile(filepath.Join(dir, "htscodecs/tests/dat/r4x16", name)); err == nil {
			if len(src) > 4096 {
				src = src[:4096]
			}
			f.Add(src, -1)
		}
	}
	f.Fuzz(func(t *testing.T, src []byte, rawSize int) {
		if rawSize > 1<<20 {
			rawSize = 1 << 20
		}
		out, err := decodeNew(src, rawSize)
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

func BenchmarkDecode(b *testing.B) {
	dir := corpus.Dir(b)
	for _, name := range []string{"q4.0", "q4.1", "q4.4", "q4.5", "q4.8", "q4.64", "q4.128", "q4.193", "q40+dir.1", "q8.1", "qvar.32"} {
		src, err := os.ReadFile(filepath.Join(dir, "htscodecs/tests/dat/r4x16", name))
		if err != nil {
			b.Fatal(err)
		}
		out, err := decodeNew(src, -1)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(out)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeNew(src, len(out)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// o1Long builds an order-1 stream of n symbols over the alphabet {0, a}
// with N states, long enough for the fast loops: context 0 always decodes
// a, and context a decodes a too, or has no table when missingA. With a
// below flat12Syms the fast loops use the flat 12-bit table.
func o1Long(N, n int, a byte, missingA bool) []byte {
	flags := byte(0x01)
	if N == 32 {
		flags |= flagX32
	}
	b := []byte{flags, byte(0x80 | n>>7), byte(n & 0x7f)}
	b = append(b, 0xc0, 0x00, a, 0x00) // 12-bit table, alphabet {0, a}
	b = append(b, 0x00, 0x00, 0x01)    // context 0: f(0)=0 (run 0), f(a)=1
	if missingA {
		b = append(b, 0x00, 0x01) // context a: f(0)=0, run of 1 zero: no table
	} else {
		b = append(b, 0x00, 0x00, 0x01)
	}
	for j := 0; j < N; j++ {
		b = append(b, 0x00, 0x80, 0, 0)
	}
	// A frequency of 4096 never renormalises; the padding lets the fast
	// loops run.
	return append(b, make([]byte, 80)...)
}

// TestO1FastContexts covers the order-1 fast loops, which leave the check
// for contexts without a table to decodeO1.
func TestO1FastContexts(t *testing.T) {
	for _, a := range []byte{'A', '0', flat12Syms - 1, flat12Syms} {
		for _, N := range []int{4, 32} {
			for _, n := range []int{384, 401, 431} {
				got, err := decodeNew(o1Long(N, n, a, false), n)
				if err != nil || string(got) != strings.Repeat(string(rune(a)), n) {
					t.Errorf("a=%q N=%d n=%d: got %q, %v; want %d %q", a, N, n, got, err, n, a)
				}
				if got, err := decodeNew(o1Long(N, n, a, true), n); !errors.Is(err, ErrCorrupt) {
					t.Errorf("a=%q N=%d n=%d with context a missing: got %d bytes, error %v; want ErrCorrupt", a, N, n, len(got), err)
				}
			}
		}
	}
}

// TestUnpack checks unpack's lookup-table loops, run fills and tails
// against the definition (CRAMcodecs section 3.8, DecodePack) for every
// packing and a range of lengths around the loops' unrolling, on data
// without runs and with runs of various lengths.
func TestUnpack(t *testing.T) {
	gens := []func(i int) byte{
		func(i int) byte { return byte(i*37 + i>>3) },
		func(i int) byte { return byte(i / 9) },
		func(i int) byte { return byte(i / 300) },
		func(i int) byte { return byte(i*i/7) >> 5 },
	}
	for _, per := range []int{2, 4, 8} {
		pm := packMeta{perByte: per}
		for i := range pm.sym {
			pm.sym[i] = byte(7*i + 3)
		}
		bits := uint(8 / per)
		for _, n := range []int{0, 1, 7, 255 * per, 256 * per, 256*per + 1, 259*per + per - 1, 263 * per, 1000*per + 3, 5000 * per} {
			for _, gen := range gens {
				data := make([]byte, (n+per-1)/per)
				for i := range data {
					data[i] = gen(i)
				}
				for _, runs := range []bool{false, true} {
					out := make([]byte, n)
					if err := unpack(out, data, &pm, runs); err != nil {
						t.Fatalf("per=%d n=%d: %v", per, n, err)
					}
					for i := range out {
						want := pm.sym[data[i/per]>>(bits*uint(i%per))&(1<<bits-1)]
						if out[i] != want {
							t.Fatalf("per=%d n=%d runs=%v: out[%d]=%d, want %d", per, n, runs, i, out[i], want)
						}
					}
				}
			}
		}
	}
}

// TestFill checks fill and fillPattern over lengths around their store
// loops and doubling copies, including that they write nothing outside b.
func TestFill(t *testing.T) {
	const v = uint64(0x0807060504030201)
	for n := 0; n <= 5000; n++ {
		if n > 600 && n%97 != 0 {
			continue
		}
		buf := make([]byte, n+16)
		fill(buf[8:8+n], 'x')
		for i, c := range buf {
			want := byte('x')
			if i < 8 || i >= 8+n {
				want = 0
			}
			if c != want {
				t.Fatalf("fill %d: byte %d is %q, want %q", n, i-8, c, want)
			}
		}
		clear(buf)
		fillPattern(buf[8:8+n], v)
		for i, c := range buf {
			want := byte(0)
			if i >= 8 && i < 8+n {
				want = byte((i-8)%8 + 1)
			}
			if c != want {
				t.Fatalf("fillPattern %d: byte %d is %d, want %d", n, i-8, c, want)
			}
		}
	}
}
