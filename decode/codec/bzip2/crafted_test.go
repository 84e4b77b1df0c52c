package bzip2

import (
	"bytes"
	"errors"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
)

// decodeCrafted decodes src, which must expand to want, and returns the
// stream information.
func decodeCrafted(t *testing.T, src, want []byte) streamInfo {
	t.Helper()
	got, err := decodeNew(src, len(want))
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Decode: got %d bytes %.40q, want %d bytes %.40q", len(got), got, len(want), want)
	}
	_, info, err := decode(nil, src, len(want))
	if err != nil || info.end != len(src) {
		t.Fatalf("decode: end %d of %d, %v", info.end, len(src), err)
	}
	return info
}

// wantCorrupt decodes src with rawSize n and requires an ErrCorrupt
// error whose text contains each of msgs.
func wantCorrupt(t *testing.T, src []byte, n int, msgs ...string) {
	t.Helper()
	got, err := decodeNew(src, n)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Decode: %d bytes, err = %v, want ErrCorrupt", len(got), err)
	}
	for _, m := range msgs {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("error %q does not mention %q", err, m)
		}
	}
}

// randomCompleteLengths returns the code lengths of a random complete
// prefix code over n symbols with codes at most maxLen long (2^maxLen >=
// n), made by
// splitting random leaves of a one-leaf tree, favouring deep ones so that
// codes longer than fastBits occur.
func randomCompleteLengths(r *rand.Rand, n, maxLen int) []uint8 {
	depths := []int{0}
	for len(depths) < n {
		i := r.IntN(len(depths))
		if r.IntN(2) == 0 {
			for j, dep := range depths {
				if dep > depths[i] && dep < maxLen {
					i = j
				}
			}
		}
		if depths[i] >= maxLen {
			continue
		}
		depths[i]++
		depths = append(depths, depths[i])
	}
	r.Shuffle(len(depths), func(a, b int) { depths[a], depths[b] = depths[b], depths[a] })
	ls := make([]uint8, n)
	for i, dep := range depths {
		ls[i] = uint8(dep)
	}
	return ls
}

// randomData returns bytes with runs of many lengths over a small
// alphabet, so that MTF positions stay small and RLE1 runs are common.
func randomData(r *rand.Rand, n, alphabet int) []byte {
	out := make([]byte, 0, n)
	for len(out) < n {
		b := byte('A' + r.IntN(alphabet))
		k := 1
		switch r.IntN(6) {
		case 0:
			k = 2 + r.IntN(6)
		case 1:
			k = 250 + r.IntN(20)
		case 2:
			k = 1 + r.IntN(1200)
		}
		for range min(k, n-len(out)) {
			out = append(out, b)
		}
	}
	return out
}

// TestRoundTrip decodes streams of several blocks with random contents,
// 2 to 6 random complete Huffman tables (with codes up to 20 bits, beyond
// the fast table) and random selectors, and checks them against the
// input and compress/bzip2.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 40 {
		var blocks []testBlock
		var data []byte
		for range 1 + r.IntN(3) {
			chunk := randomData(r, 1+r.IntN(2500), 1+r.IntN(40))
			data = append(data, chunk...)
			pre := rle1(chunk)
			blk := testBlock{pre: pre, nGroups: 2 + r.IntN(5)}
			last, _ := bwt(pre)
			nUsed := countDistinct(last)
			for range blk.nGroups {
				minLen := bits.Len(uint(nUsed + 1)) // 2^minLen >= nUsed+2
				blk.lengths = append(blk.lengths, randomCompleteLengths(r, nUsed+2, minLen+r.IntN(maxCodeLen-minLen+1)))
			}
			// Enough selectors for any symbol count (at most one per
			// byte plus end of block), some of them surplus.
			for range len(pre)/groupSize + 2 + r.IntN(3) {
				blk.selectors = append(blk.selectors, r.IntN(blk.nGroups))
			}
			blocks = append(blocks, blk)
		}
		src, want := encodeStream(t, '9', blocks...)
		if !bytes.Equal(want, data) {
			t.Fatal("test encoder: rle1 and refUnRLE1 disagree")
		}
		info := decodeCrafted(t, src, data)
		if info.irregular {
			t.Errorf("iteration %d: complete codes reported irregular", iter)
		}
		std, err := stdDecode(src, len(data))
		if err != nil || !bytes.Equal(std, data) {
			t.Fatalf("iteration %d: compress/bzip2 disagrees: %v", iter, err)
		}
	}
}

func countDistinct(p []byte) int {
	var seen [256]bool
	n := 0
	for _, b := range p {
		if !seen[b] {
			seen[b] = true
			n++
		}
	}
	return n
}

// TestLongestCodes uses a table whose codes have every length from 1 to
// 20, so that most symbols decode through decodeSlow.
func TestLongestCodes(t *testing.T) {
	// 19 byte values make 21 symbols; lengths 1, 2, ..., 19, 20, 20 form
	// a complete code.
	ls := make([]uint8, 21)
	for i := range ls {
		ls[i] = uint8(min(i+1, 20))
	}
	// Reverse so that the frequent RUNA/RUNB get the long codes.
	for i, j := 0, len(ls)-1; i < j; i, j = i+1, j-1 {
		ls[i], ls[j] = ls[j], ls[i]
	}
	r := rand.New(rand.NewPCG(3, 4))
	data := []byte("abcdefghijklmnopqrs") // all 19 values
	for len(data) < 5000 {
		// No two equal bytes in a row, so no RLE1 counts join the
		// symbol map.
		b := byte('a' + r.IntN(19))
		if b != data[len(data)-1] {
			data = append(data, b)
		}
	}
	pre := rle1(data)
	if !bytes.Equal(pre, data) {
		t.Fatal("data has runs")
	}
	src, want := encodeStream(t, '1', testBlock{pre: pre, lengths: [][]uint8{ls, ls}})
	decodeCrafted(t, src, want)
	if std, err := stdDecode(src, len(want)); err != nil || !bytes.Equal(std, want) {
		t.Fatalf("compress/bzip2 disagrees: %v", err)
	}
}

// TestRLE1 checks the edges of the run-length stage against libbz2's
// rules, as refUnRLE1 implements them.
func TestRLE1(t *testing.T) {
	cases := []struct {
		name string
		pre  string
		want string
	}{
		{"run of 3", "xaaay", "xaaay"},
		{"count 0", "aaaa\x00b", "aaaab"},
		{"count 255", "aaaa\xffb", strings.Repeat("a", 259) + "b"},
		{"four at block end, no count", "xyzaaaa", "xyzaaaa"},
		{"count is the last byte", "xaaaa\x03", "xaaaaaaa"},
		{"count equal to the run byte", "aaaaab", strings.Repeat("a", 4+'a') + "b"},
		// After a count a new run starts: three more a then \x02 are
		// literals (compress/bzip2 would read \x02 as a count).
		{"run after count 0", "aaaa\x00aaa\x02b", "aaaaaaa\x02b"},
		{"two runs", "aaaa\x01bbbb\x00", "aaaaabbbb"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := string(refUnRLE1([]byte(c.pre))); got != c.want {
				t.Fatalf("refUnRLE1 = %q, want %q", got, c.want)
			}
			src, want := encodeStream(t, '9', testBlock{pre: []byte(c.pre)})
			info := decodeCrafted(t, src, want)
			if irr := strings.Contains(c.pre, "\x00a"); info.irregular != irr {
				t.Errorf("irregular = %v, want %v", info.irregular, irr)
			}
		})
	}
}

// TestRLE1BlockLocal: each block's run-length stage starts afresh. Two a
// at the end of one block and two at the start of the next are four a,
// not a run whose count is the next byte.
func TestRLE1BlockLocal(t *testing.T) {
	src, want := encodeStream(t, '9', testBlock{pre: []byte("xaa")}, testBlock{pre: []byte("aa\x05b")})
	if string(want) != "xaaaa\x05b" {
		t.Fatalf("test encoder: want %q", want)
	}
	decodeCrafted(t, src, want)
	if std, err := stdDecode(src, len(want)); err != nil || !bytes.Equal(std, want) {
		t.Fatalf("compress/bzip2 disagrees: %q, %v", std, err)
	}
}

// TestRLE1BlockLocalFixture checks that in multiblock.1.bz2, made by the
// bzip2 tool, runs of the original data straddle block boundaries (the
// runs of Z and Y that gen.go places there), each block's part decoding
// on its own: TestFixtures then shows, through the block CRCs, that the
// bytes of such a run are attributed to blocks as block-local RLE1 says.
//
// bzip2 ends a block after a complete RLE1 unit and starts the next with
// the run it was accumulating, so in its files a block never ends with
// a partial run that a decoder carrying RLE1 state across blocks would
// misread; TestRLE1BlockLocal covers that case with a crafted stream.
func TestRLE1BlockLocalFixture(t *testing.T) {
	f := fixtureNamed(t, "multiblock.1.bz2")
	pres := preBlocks(t, f.Src)
	if len(pres) < 3 {
		t.Fatalf("%d blocks, want at least 3", len(pres))
	}
	straddle := 0
	for i := 1; i < len(pres); i++ {
		a, b := refUnRLE1(pres[i-1]), refUnRLE1(pres[i])
		if x := a[len(a)-1]; x == b[0] && bytes.Count(a[len(a)-8:], []byte{x}) == 8 && bytes.Count(b[:8], []byte{x}) == 8 {
			straddle++
			if !bytes.Equal(pres[i][:4], []byte{x, x, x, x}) {
				t.Errorf("block %d starts with %q, not a fresh run", i, pres[i][:5])
			}
		}
	}
	if straddle < 2 {
		t.Fatalf("%d block boundaries fall inside a run, want 2", straddle)
	}
}

// preBlocks returns each block's bytes before RLE1 is undone.
func preBlocks(t *testing.T, src []byte) [][]byte {
	t.Helper()
	d := decoder{br: bitReader{src: src, pos: 4}, s: new(scratch), blockMax: int(src[3]-'0') * 100000}
	var pres [][]byte
	for d.br.bitsN(48) == blockMagic {
		d.br.bitsN(32)
		pre, err := d.readBlock(1 << 30)
		if err != nil {
			t.Fatal(err)
		}
		pres = append(pres, bytes.Clone(pre))
	}
	return pres
}

// TestIrregularCodes: libbz2 decodes canonical codes from any lengths,
// complete or not, and so must this decoder.
func TestIrregularCodes(t *testing.T) {
	t.Run("incomplete", func(t *testing.T) {
		// RUNA 0, RUNB 10, EOB 110; 111 is unused.
		src, want := encodeStream(t, '9', testBlock{pre: []byte("qqq"), lengths: [][]uint8{{1, 2, 3}, {1, 2, 3}}})
		if !decodeCrafted(t, src, want).irregular {
			t.Error("not reported irregular")
		}
	})
	t.Run("incomplete, unused code met", func(t *testing.T) {
		// Declared RUNA 00, RUNB 01, EOB 10, but written with EOB 0,
		// RUNA 10, RUNB 11: the RUNB of the run of two meets the
		// unused 11.
		src, _ := encodeStream(t, '9', testBlock{pre: []byte("qq"),
			lengths: [][]uint8{{2, 2, 2}, {2, 2, 2}}, writeLengths: [][]uint8{{2, 2, 1}, {2, 2, 1}}})
		wantCorrupt(t, src, 2, "invalid Huffman code")
	})
	t.Run("over-subscribed", func(t *testing.T) {
		// Symbols RUNA, RUNB, MTF 1, EOB with lengths 2, 2, 2, 1: EOB
		// 0, RUNA 10, RUNB 11, and MTF 1 would be 100 in 2 bits, so it
		// is unreachable; the block never needs it.
		src, want := encodeStream(t, '9', testBlock{pre: []byte("qqq"), inUse: []byte("qr"),
			lengths: [][]uint8{{2, 2, 2, 1}, {2, 2, 2, 1}}})
		if !decodeCrafted(t, src, want).irregular {
			t.Error("not reported irregular")
		}
	})
}
