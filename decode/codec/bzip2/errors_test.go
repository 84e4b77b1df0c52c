package bzip2

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/internal/codectest"
)

// smallFixtures are the fixtures cheap enough to decode once per byte or
// bit of their length.
func smallFixtures(t *testing.T) []fixture {
	var out []fixture
	for _, f := range loadFixtures(t) {
		if len(f.Src) <= 600 {
			out = append(out, f)
		}
	}
	if len(out) < 20 {
		t.Fatalf("%d small fixtures, want at least 20", len(out))
	}
	return out
}

// TestTruncated: every proper prefix of a stream is an error (the last
// byte holds part of the final CRC), whatever rawSize says.
func TestTruncated(t *testing.T) {
	for _, f := range loadFixtures(t) {
		// Every cut of streams up to 40 bytes, about 40 of others.
		step := max(1, len(f.Src)/40)
		for n := 0; n < len(f.Src); n += step {
			for _, size := range []int{f.RawLen, 1 << 20} {
				got, err := decodeNew(f.Src[:n], size)
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s cut to %d of %d bytes, rawSize %d: %d bytes, err = %v, want ErrCorrupt", f.Name, n, len(f.Src), size, len(got), err)
				}
			}
		}
		// The last cut point always, as it removes the fewest bits.
		if _, err := decodeNew(f.Src[:len(f.Src)-1], f.RawLen); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s without its last byte: err = %v", f.Name, err)
		}
	}
	f := fixtureNamed(t, "text.9.bz2")
	_, err := decodeNew(f.Src[:len(f.Src)/2], f.RawLen)
	if err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("half a stream: error %v does not say truncated", err)
	}
}

// TestFlippedBits flips bits of fixtures (about 400 each, spread over the
// stream), one at a time: every result is an ErrCorrupt error or the
// original bytes (a flip in the padding after the final CRC changes
// nothing), never a panic and never other bytes.
func TestFlippedBits(t *testing.T) {
	flips, errs := 0, 0
	for _, f := range append(smallFixtures(t), fixtureNamed(t, "random.9.bz2"), fixtureNamed(t, "text.1.bz2")) {
		want, err := decodeNew(f.Src, f.RawLen)
		if err != nil {
			t.Fatal(err)
		}
		step := max(1, len(f.Src)*8/400)
		src := bytes.Clone(f.Src)
		for bit := 0; bit < len(src)*8; bit += step {
			src[bit/8] ^= 0x80 >> (bit % 8)
			got, err := decodeNew(src, f.RawLen)
			src[bit/8] ^= 0x80 >> (bit % 8)
			flips++
			if err != nil {
				errs++
				if !errors.Is(err, ErrCorrupt) {
					t.Fatalf("%s bit %d: error %v does not wrap ErrCorrupt", f.Name, bit, err)
				}
				continue
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s bit %d flipped: decoded other bytes without an error", f.Name, bit)
			}
		}
	}
	// Only the few padding bits at the end of each stream may pass.
	if errs < flips*95/100 {
		t.Fatalf("%d of %d flipped bits gave an error, want nearly all", errs, flips)
	}
}

func TestHeaderErrors(t *testing.T) {
	good := fixtureNamed(t, "text.9.bz2")
	for _, c := range []struct {
		name string
		src  []byte
		msg  string
	}{
		{"empty", nil, "too short"},
		{"3 bytes", []byte("BZh"), "too short"},
		{"gzip magic", append([]byte{0x1f, 0x8b, 8, 0}, good.Src[4:]...), "magic"},
		{"BZ0", append([]byte("BZ0"), good.Src[3:]...), "magic"},
		{"level 0", append([]byte("BZh0"), good.Src[4:]...), "block size digit"},
		{"level :", append([]byte("BZh:"), good.Src[4:]...), "block size digit"},
		{"no block magic", append([]byte("BZh9"), bytes.Repeat([]byte{0x55}, 20)...), "block magic"},
		{"header only", []byte("BZh9"), "truncated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantCorrupt(t, c.src, good.RawLen, c.msg)
		})
	}
}

// TestTrailingData: whatever follows the end-of-stream marker is ignored,
// including another stream, as libbz2's one-shot decoder does.
func TestTrailingData(t *testing.T) {
	f := fixtureNamed(t, "text.1.bz2")
	want, err := decodeNew(f.Src, f.RawLen)
	if err != nil {
		t.Fatal(err)
	}
	other := fixtureNamed(t, "random.9.bz2")
	for _, tail := range [][]byte{{0}, []byte("garbage"), bytes.Repeat([]byte{0xff}, 1000), other.Src} {
		src := append(bytes.Clone(f.Src), tail...)
		got, err := decodeNew(src, f.RawLen)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("with %d trailing bytes: %v", len(tail), err)
		}
		_, info, err := decode(nil, src, f.RawLen)
		if err != nil || info.end != len(f.Src) {
			t.Fatalf("end = %d, want %d (%v)", info.end, len(f.Src), err)
		}
	}
}

// TestOutputLimit: a stream longer than rawSize fails as soon as it would
// pass it, without writing past rawSize even into spare capacity.
func TestOutputLimit(t *testing.T) {
	for _, name := range []string{"multiblock.1.bz2", "run100000.9.bz2", "text.9.bz2", "one.9.bz2"} {
		f := fixtureNamed(t, name)
		for _, n := range []int{0, 1, f.RawLen / 3, f.RawLen - 1} {
			if n >= f.RawLen {
				continue
			}
			prefix := []byte("pre")
			dst := make([]byte, len(prefix), len(prefix)+f.RawLen+64)
			copy(dst, prefix)
			spare := dst[len(prefix):cap(dst)]
			for i := range spare {
				spare[i] = 0xEE
			}
			out, err := AppendDecode(dst, f.Src, n)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("%s rawSize %d: err = %v, want ErrCorrupt", name, n, err)
			}
			if len(out) != len(prefix) || string(out) != "pre" {
				t.Fatalf("%s rawSize %d: returned %q, want dst unchanged", name, n, out)
			}
			for i, b := range spare[n:] {
				if b != 0xEE {
					t.Fatalf("%s rawSize %d: wrote byte %d past the limit", name, n, n+i)
				}
			}
		}
	}
	if _, err := decodeNew(fixtureNamed(t, "one.9.bz2").Src, -1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("rawSize -1: err = %v", err)
	}
}

// TestAppendDecode decodes every fixture into each shape of dst
// codectest.CheckAppend makes; an empty stream decodes to an empty, non-nil
// slice.
func TestAppendDecode(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			want, err := decodeNew(f.Src, f.RawLen)
			if err != nil {
				t.Fatal(err)
			}
			codectest.CheckAppend(t, AppendDecode, f.Src, f.RawLen, want)
		})
	}
	out, err := decodeNew(fixtureNamed(t, "empty.9.bz2").Src, 0)
	if err != nil || out == nil || len(out) != 0 {
		t.Fatalf("empty stream: %v, %v", out, err)
	}
}

// TestNoAllocs: with a warm pool and enough capacity in dst, a decode
// allocates nothing.
func TestNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race runtime drops pooled items at random")
	}
	for _, name := range []string{"names.9.bz2", "multiblock.1.bz2", "run100000.1.bz2"} {
		f := fixtureNamed(t, name)
		dst := make([]byte, 0, f.RawLen)
		allocs := testing.AllocsPerRun(5, func() {
			if _, err := AppendDecode(dst, f.Src, f.RawLen); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %.1f allocations per decode, want 0", name, allocs)
		}
	}
}

// TestScratchSizing: the working memory follows the blocks and the
// expected size, not the level: a small stream at level 9 needs no
// 900,000-entry array.
func TestScratchSizing(t *testing.T) {
	f := fixtureNamed(t, "text.9.bz2")
	d := decoder{br: bitReader{src: f.Src, pos: 4}, s: new(scratch), blockMax: 900000}
	d.br.bitsN(48) // block magic
	d.br.bitsN(32) // CRC
	if _, err := d.readBlock(f.RawLen); err != nil {
		t.Fatal(err)
	}
	if c := cap(d.s.tt); c > 2*f.RawLen+4096 {
		t.Errorf("tt holds %d entries for a %d-byte stream", c, f.RawLen)
	}
}

// TestMalformedBlocks writes blocks with one field wrong each.
func TestMalformedBlocks(t *testing.T) {
	pre := []byte("hello, hello, hello")
	last, _ := bwt(pre)
	alpha := countDistinct(pre) + 2
	withLen := func(i, l int) []uint8 {
		ls := completeLengths(alpha)
		ls[i] = uint8(l)
		return ls
	}
	raw := func(last []byte, origPtr int) testBlock {
		return testBlock{pre: pre, last: last, origPtr: origPtr}
	}
	r := rand.New(rand.NewPCG(5, 6))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		return b
	}
	for _, c := range []struct {
		name  string
		level byte
		blk   testBlock
		msgs  []string
	}{
		{"randomised", '9', testBlock{pre: pre, randomised: true}, []string{"randomised"}},
		{"origPtr = length", '9', raw(last, len(last)), []string{"origPtr 19 outside block of 19"}},
		{"origPtr max", '9', raw(last, 1<<24-1), []string{"origPtr"}},
		{"empty block", '9', testBlock{last: []byte{}, inUse: []byte("a")}, []string{"origPtr 0 outside block of 0"}},
		{"no byte values", '9', testBlock{last: []byte{}, inUse: []byte{}}, []string{"no byte values"}},
		{"1 table", '9', testBlock{pre: pre, nGroups: 1, lengths: [][]uint8{completeLengths(alpha)}}, []string{"1 Huffman tables"}},
		{"7 tables", '9', testBlock{pre: pre, nGroups: 7}, []string{"7 Huffman tables"}},
		{"no selectors", '9', testBlock{pre: pre, selectors: []int{}}, []string{"no selectors"}},
		{"selector out of range", '9', testBlock{pre: pre, selectors: []int{0, 2}}, []string{"selector 1 refers to table 2"}},
		{"too few selectors", '9', testBlock{pre: rle1(random(300)), selectors: []int{0, 1}}, []string{"more than its 2 selectors"}},
		{"code length 0 at start", '9', testBlock{pre: pre, lengths: [][]uint8{withLen(0, 0), withLen(0, 3)}}, []string{"table 0: code length 0 for symbol 0"}},
		{"code length 21 at start", '9', testBlock{pre: pre, lengths: [][]uint8{withLen(0, 3), withLen(0, 21)}}, []string{"table 1: code length 21 for symbol 0"}},
		{"code length 0", '9', testBlock{pre: pre, lengths: [][]uint8{withLen(3, 0), withLen(0, 3)}}, []string{"table 0: code length 0 for symbol 3"}},
		{"code length 21", '9', testBlock{pre: pre, lengths: [][]uint8{withLen(0, 3), withLen(5, 21)}}, []string{"table 1: code length 21 for symbol 5"}},
		{"bad block CRC", '9', testBlock{pre: pre, badCRC: true}, []string{"block CRC"}},
		{"level 1 block of 100,001 bytes", '1', raw(random(100001), 0), []string{"more than 100000 symbols"}},
		{"level 1 run of 100,001", '1', raw(bytes.Repeat([]byte{'a'}, 100001), 0), []string{"more than 100000 symbols"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			src, _ := encodeStream(t, c.level, c.blk)
			wantCorrupt(t, src, 1<<20, c.msgs...)
		})
	}

	t.Run("bad stream CRC", func(t *testing.T) {
		src, want := encodeStream(t, '9', testBlock{pre: pre})
		// The combined CRC ends 0 to 7 padding bits before the end;
		// flipping the last 8 bits hits it whatever the padding.
		src[len(src)-1] ^= 0xff
		wantCorrupt(t, src, len(want), "stream CRC")
	})
	t.Run("level 1 block of 100,000 bytes", func(t *testing.T) {
		data := random(100000)
		src, want := encodeStream(t, '1', testBlock{pre: data})
		decodeCrafted(t, src, want)
	})
	t.Run("32767 selectors", func(t *testing.T) {
		// libbz2 1.0.8 reads selectors past 18002 and ignores them.
		sel := make([]int, 32767)
		for i := range sel {
			sel[i] = r.IntN(3)
		}
		src, want := encodeStream(t, '9', testBlock{pre: pre, nGroups: 3, selectors: sel})
		decodeCrafted(t, src, want)
		if std, err := stdDecode(src, len(want)); err != nil || !bytes.Equal(std, want) {
			t.Fatalf("compress/bzip2 disagrees: %v", err)
		}
	})
	t.Run("block larger than the expected output", func(t *testing.T) {
		// 3,000 distinct-neighbour bytes cannot fit in 100: refused
		// before the block is decoded in full.
		data := random(3000)
		src, _ := encodeStream(t, '9', testBlock{pre: rle1(data)})
		wantCorrupt(t, src, 100, "expands past the expected size")
	})
}

// TestLimitsWithLargeScratch: working memory left large by an earlier
// decode must not loosen the block size limit of a later one, nor the
// limit derived from the expected size.
func TestLimitsWithLargeScratch(t *testing.T) {
	s := new(scratch)
	s.tt = make([]uint32, 900000)
	r := rand.New(rand.NewPCG(7, 8))
	data := make([]byte, 100001)
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	src, _ := encodeStream(t, '1', testBlock{pre: data, last: data})
	_, _, err := decodeWith(s, nil, src, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "more than 100000 symbols") {
		t.Fatalf("level 1 block of 100,001 bytes: err = %v", err)
	}
	_, _, err = decodeWith(s, nil, src, 1000)
	if err == nil || !strings.Contains(err.Error(), "expands past the expected size") {
		t.Fatalf("100,001 bytes for 1,000 expected: err = %v", err)
	}
}

// TestConcurrent decodes fixtures from several goroutines at once: each
// decode has its own working memory (run with -race).
func TestConcurrent(t *testing.T) {
	fx := loadFixtures(t)
	done := make(chan error)
	for g := range 4 {
		go func() {
			for i := range 2 * len(fx) {
				f := fx[(i+g*7)%len(fx)]
				got, err := decodeNew(f.Src, f.RawLen)
				if err == nil && sha(got) != f.SHA {
					err = errors.New(f.Name + ": wrong output")
				}
				if err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 4 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
