package arith

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/internal/codectest"
	"github.com/cramfs/cramfs/internal/corpus"
)

// decodeNew decodes src into a new slice (see codectest.Decode).
func decodeNew(src []byte, rawSize int) ([]byte, error) {
	return codectest.Decode(AppendDecode, src, rawSize)
}

// newModel allocates and initialises a Model of nsym symbols.
func newModel(nsym int) Model {
	return InitModel(make([]uint32, ModelLen(nsym)), nsym)
}

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
				got, err := decodeNew(src, raw)
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
				if _, err := decodeNew(src[:cut], len(want)); err == nil {
					t.Errorf("prefix of %d bytes decoded without error", cut)
				} else if !errors.Is(err, ErrCorrupt) {
					t.Errorf("prefix of %d bytes: error %v does not wrap ErrCorrupt", cut, err)
				}
			}
			if _, err := decodeNew(src, len(want)+1); err == nil {
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
			got, err := decodeNew(tc.src, tc.rawSize)
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
	m := newModel(3)
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
	if InitModel(make([]uint32, 2), 2) != nil || newModel(0) != nil || newModel(257) != nil {
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
				if _, err := decodeNew(src, len(want)); err != nil {
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

// TestAppendDecodeVectors decodes every corpus vector into each shape of
// dst codectest.CheckAppend makes, with the raw size given and unknown.
func TestAppendDecodeVectors(t *testing.T) {
	dir := corpus.Dir(t)
	for _, v := range readManifest(t, dir, "arith") {
		if v.Result != "OK" {
			continue
		}
		t.Run(v.Compressed, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join(dir, v.Compressed))
			if err != nil {
				t.Fatal(err)
			}
			want := v.Expected(t, dir)
			codectest.CheckAppend(t, AppendDecode, src, len(want), want)
			codectest.CheckAppend(t, AppendDecode, src, -1, want)
		})
	}
}

// TestPooledReuse decodes streams of different shapes one after another,
// so that pooled models and scratch buffers are reused across alphabets,
// orders and layouts, and checks every result against a first decoding.
func TestPooledReuse(t *testing.T) {
	dir := corpus.Dir(t)
	type vec struct {
		src, want []byte
	}
	var vs []vec
	for _, v := range readManifest(t, dir, "arith") {
		if v.Result != "OK" {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, v.Compressed))
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, vec{src, v.Expected(t, dir)})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 3; round++ {
		// Visit the vectors in a different order each round.
		for i, k := range rng.Perm(len(vs)) {
			v := vs[k]
			// A failing decode must not leave the pool in a bad state.
			if len(v.src) > 8 {
				decodeNew(v.src[:len(v.src)-3], len(v.want))
			}
			got, err := decodeNew(v.src, len(v.want))
			if err != nil || !bytes.Equal(got, v.want) {
				t.Fatalf("round %d: vector %d decoded wrongly after reuse (%v)", round, i, err)
			}
		}
	}
}

// refEntropy is a plain reference for appendEntropy: the order-0/1 and RLE
// decoders written straight from the specification's pseudocode
// (CRAMcodecs.tex DecodeOrder0/1 and DecodeRLE0/1, ModelDecode with
// RangeGetFreq's division and a linear cumulative search), without the
// inlining, group sums or chunked output of the package's decoder.
func refEntropy(src []byte, n int, order1, rle bool) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	nsym := int(src[0])
	if nsym == 0 {
		nsym = 256
	}
	rc := refCoder{src: src[1:], rng: 0xFFFFFFFF}
	if len(rc.src) < 5 {
		return nil, ErrCorrupt
	}
	for i := 0; i < 5; i++ {
		rc.code = rc.code<<8 | uint32(rc.src[i])
	}
	rc.pos = 5
	nm := 1
	if order1 {
		nm = nsym
	}
	lit := make([]refModel, nm)
	for i := range lit {
		lit[i] = newRefModel(nsym)
	}
	run := make([]refModel, runContexts)
	for i := range run {
		run[i] = newRefModel(runSymbols)
	}
	out := make([]byte, 0, n)
	last := 0
	for len(out) < n && !rc.bad {
		m := 0
		if order1 {
			m = last
		}
		s := rc.decode(&lit[m])
		out = append(out, byte(s))
		last = s
		if !rle {
			continue
		}
		r := rc.decode(&run[s])
		total := r
		for ctx := 256; r == runSymbols-1 && total < n; ctx = 257 {
			r = rc.decode(&run[ctx])
			total += r
		}
		for ; total > 0 && len(out) < n; total-- {
			out = append(out, byte(s))
		}
	}
	if rc.bad {
		return nil, ErrCorrupt
	}
	return out, nil
}

// refSym is one symbol of a reference model: its frequency and value.
type refSym struct{ f, s int }

// refModel is a reference model: symbols in search order and their total.
type refModel struct {
	sym []refSym
	tot int
}

func newRefModel(nsym int) refModel {
	m := refModel{make([]refSym, nsym), nsym}
	for i := range m.sym {
		m.sym[i] = refSym{1, i}
	}
	return m
}

// refCoder is the reference range decoder; bad records any error.
type refCoder struct {
	src       []byte
	pos       int
	rng, code uint32
	bad       bool
}

func (rc *refCoder) decode(mod *refModel) int {
	if rc.bad {
		return 0
	}
	m, tot := mod.sym, mod.tot
	rc.rng /= uint32(tot)
	freq := int(rc.code / rc.rng)
	if freq >= tot {
		rc.bad = true
		return 0
	}
	x, acc := 0, 0
	for acc+m[x].f <= freq {
		acc += m[x].f
		x++
	}
	rc.code -= uint32(acc) * rc.rng
	rc.rng *= uint32(m[x].f)
	for rc.rng < 1<<24 {
		if rc.pos >= len(rc.src) {
			rc.bad = true
			return 0
		}
		rc.rng <<= 8
		rc.code = rc.code<<8 | uint32(rc.src[rc.pos])
		rc.pos++
	}
	m[x].f += modelStep
	mod.tot += modelStep
	if mod.tot > maxFreq {
		mod.tot = 0
		for i := range m {
			m[i].f -= m[i].f >> 1
			mod.tot += m[i].f
		}
	}
	s := m[x].s
	if x > 0 && m[x].f > m[x-1].f {
		m[x], m[x-1] = m[x-1], m[x]
	}
	return s
}

// entropyCases are the entropy-coded payloads of the corpus vectors: the
// bytes after a plain (no STRIPE, PACK, CAT or EXT) stream's header.
func entropyCases(t testing.TB) (srcs [][]byte, ns []int, flags []byte) {
	dir := corpus.Dir(t)
	for _, v := range readManifest(t, dir, "arith") {
		if v.Result != "OK" {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, v.Compressed))
		if err != nil {
			t.Fatal(err)
		}
		f := src[0]
		if f&(flagStripe|flagPack|flagCat|flagExt|flagNoSize) != 0 {
			continue
		}
		n, k, err := readUint7(src, 1)
		if err != nil || 1+k >= len(src) {
			continue
		}
		srcs, ns, flags = append(srcs, src[1+k:]), append(ns, int(n)), append(flags, f)
	}
	return srcs, ns, flags
}

// TestEntropyMatchesReference checks appendEntropy against refEntropy on
// every plain corpus payload and on truncations of them.
func TestEntropyMatchesReference(t *testing.T) {
	srcs, ns, flags := entropyCases(t)
	if len(srcs) < 10 {
		t.Fatalf("only %d plain vectors", len(srcs))
	}
	for i, src := range srcs {
		o1, rle := flags[i]&flagOrderMask == 1, flags[i]&flagRLE != 0
		for _, cut := range []int{len(src), len(src) - 1, len(src) / 2} {
			want, werr := refEntropy(src[:cut], ns[i], o1, rle)
			got, err := appendEntropy([]byte("p"), src[:cut], ns[i], o1, rle)
			if (werr == nil) != (err == nil) {
				t.Fatalf("vector %d cut %d: reference error %v, decoder error %v", i, cut, werr, err)
			}
			if err == nil && (!bytes.Equal(got[1:], want) || got[0] != 'p') {
				t.Fatalf("vector %d cut %d: output differs from the reference", i, cut)
			}
		}
	}
}

// FuzzEntropy compares appendEntropy with refEntropy on arbitrary payloads.
func FuzzEntropy(f *testing.F) {
	srcs, ns, flags := entropyCases(f)
	for i := range srcs {
		if i%5 == 0 {
			f.Add(srcs[i][:min(len(srcs[i]), 300)], uint16(min(ns[i], 2*probeLen-1)), flags[i])
		}
	}
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8}, uint16(100), byte(flagRLE|1))
	f.Fuzz(func(t *testing.T, src []byte, n uint16, flags byte) {
		if len(src) == 0 {
			return
		}
		o1, rle := flags&flagOrderMask == 1, flags&flagRLE != 0
		// Small outputs keep executions fast; the first probeLen symbols
		// still cover both searches of large alphabets.
		k := int(n) % (2 * probeLen)
		want, werr := refEntropy(src, k, o1, rle)
		got, err := appendEntropy(nil, src, k, o1, rle)
		if (werr == nil) != (err == nil) {
			t.Fatalf("reference error %v, decoder error %v", werr, err)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("output differs from the reference")
		}
	})
}
