package bgzf

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// streamLike writes data through a Compressor's Begin/Cut/End run in the
// given piece sizes after a prefix, checking Pos as it goes.
func streamLike(t testing.TB, c *Compressor, prefix, data []byte, pieces []int) ([]byte, int64) {
	t.Helper()
	buf := c.Begin(append([]byte(nil), prefix...))
	total := int64(len(data))
	for _, n := range pieces {
		n = min(n, len(data))
		buf = append(buf, data[:n]...)
		data = data[n:]
		if c.Pos(buf) != total-int64(len(data)) {
			t.Fatalf("Pos %d after %d bytes", c.Pos(buf), total-int64(len(data)))
		}
		var err error
		if buf, err = c.Cut(buf); err != nil {
			t.Fatal(err)
		}
		if c.Pos(buf) != total-int64(len(data)) {
			t.Fatalf("Pos changed by Cut: %d, want %d", c.Pos(buf), total-int64(len(data)))
		}
	}
	buf = append(buf, data...)
	dst, raw, err := c.End(buf)
	if err != nil {
		t.Fatal(err)
	}
	return dst, raw
}

// TestStreamMatchesAppendBlocks checks runs at levels 0 (Stored, in
// place), 1 and 6 against AppendBlocks around block boundaries, with
// pieces that straddle several blocks (long records), on compressible and
// random data, reusing one Compressor from run to run as the workers do.
func TestStreamMatchesAppendBlocks(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	sizes := []int{0, 1, 100, MaxBlockData - 1, MaxBlockData, MaxBlockData + 1, 2 * MaxBlockData, 2*MaxBlockData + 7, 5*MaxBlockData + 12345}
	for _, level := range []int{0, 1, 6} {
		c, err := NewCompressor(level)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := NewCompressor(level)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range sizes {
			for _, random := range []bool{false, true} {
				data := make([]byte, n)
				for i := range data {
					if random {
						data[i] = byte(rnd.Uint32())
					} else {
						data[i] = "ACGTN"[rnd.IntN(5)]
					}
				}
				want, err := ref.AppendBlocks([]byte("pfx"), data)
				if err != nil {
					t.Fatal(err)
				}
				for _, pieces := range [][]int{nil, {n}, {1, 2, 3}, {300, 301, 302, 303}, {MaxBlockData + 5, 3 * MaxBlockData}, {rnd.IntN(200000) + 1, rnd.IntN(400) + 1}} {
					var split []int
					for len(split) < 2000 && len(pieces) > 0 {
						split = append(split, pieces...)
					}
					got, raw := streamLike(t, c, []byte("pfx"), data, split)
					if !bytes.Equal(got, want) {
						t.Fatalf("level %d, n=%d, pieces=%v: run differs from AppendBlocks (%d vs %d bytes)", level, n, pieces, len(got), len(want))
					}
					if raw != int64(n) {
						t.Fatalf("level %d, n=%d: End reports %d data bytes", level, n, raw)
					}
					if level == 0 && int64(len(got)-3) != StoredSize(int64(n)) {
						t.Fatalf("n=%d: StoredSize %d, output %d", n, StoredSize(int64(n)), len(got)-3)
					}
				}
			}
		}
	}
}

func FuzzStream(f *testing.F) {
	f.Add([]byte("hello"), uint8(1), uint16(3), uint16(7))
	f.Add(bytes.Repeat([]byte("ACGT"), MaxBlockData/2), uint8(6), uint16(65535), uint16(1))
	// The levels the tools use, each Compressor made once (a deflate
	// writer is costly to set up; levels above 1 run a few execs a
	// second under coverage instrumentation, so they are tested by
	// TestStreamMatchesAppendBlocks instead).
	var comps [2]*Compressor
	for l := range comps {
		var err error
		if comps[l], err = NewCompressor(l); err != nil {
			f.Fatal(err)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, level uint8, a, b uint16) {
		c := comps[level%2]
		want, err := c.AppendBlocks(nil, data)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second run reuses the staging buffer
			got, raw := streamLike(t, c, nil, data, []int{int(a) + 1, int(b) + 1})
			if !bytes.Equal(got, want) || raw != int64(len(data)) {
				t.Fatalf("level %d: run of %d bytes differs from AppendBlocks", level%2, len(data))
			}
		}
		// Through a sink that takes what a and b choose.
		s := &takeSink{rnd: rand.New(rand.NewPCG(uint64(a), uint64(b)))}
		c.SetSink(s, int(b%4096)+1)
		got, raw := streamLike(t, c, nil, data, []int{int(a) + 1, int(b) + 1})
		c.SetSink(nil, 0)
		if !bytes.Equal(append(s.taken, got...), want) || raw != int64(len(data)) {
			t.Fatalf("level %d: run of %d bytes through a sink differs from AppendBlocks", level%2, len(data))
		}
	})
}

// BenchmarkStream compresses real BAM bytes at level 1 in record-sized
// pieces through a run, as the workers do.
func BenchmarkStream(b *testing.B) {
	data := realBAM(b)
	c, err := NewCompressor(1)
	if err != nil {
		b.Fatal(err)
	}
	var dst []byte
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		buf := c.Begin(dst[:0])
		for p := data; len(p) > 0; {
			n := min(len(p), 400)
			buf = append(buf, p[:n]...)
			if buf, err = c.Cut(buf); err != nil {
				b.Fatal(err)
			}
			p = p[n:]
		}
		if dst, _, err = c.End(buf); err != nil {
			b.Fatal(err)
		}
	}
}

// takeSink is a Sink that takes a prefix of what it is offered, of a
// length chosen by its random source (none, part of a block, all), and
// keeps what it took.
type takeSink struct {
	rnd   *rand.Rand
	taken []byte
	fail  error
}

func (s *takeSink) Take(b []byte) (int, error) {
	if s.fail != nil {
		return 0, s.fail
	}
	var n int
	switch s.rnd.IntN(4) {
	case 0:
	case 1:
		n = len(b)
	default:
		n = s.rnd.IntN(len(b) + 1)
	}
	s.taken = append(s.taken, b[:n]...)
	return n, nil
}

// TestSinkTakesBlocksInOrder runs data through a Compressor with a Sink
// that takes random prefixes of the blocks offered: what it took followed
// by what End returns after the prefix are AppendBlocks' blocks, at
// levels 0 and 1, with Pos unchanged by what the sink took.
func TestSinkTakesBlocksInOrder(t *testing.T) {
	rnd := rand.New(rand.NewPCG(7, 8))
	for _, level := range []int{0, 1} {
		c, err := NewCompressor(level)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 100, MaxBlockData + 1, 7*MaxBlockData + 99, 40 * MaxBlockData} {
			data := make([]byte, n)
			for i := range data {
				data[i] = "ACGTN"[rnd.IntN(5)]
				if i%3 == 0 {
					data[i] = byte(rnd.Uint32())
				}
			}
			want, err := c.AppendBlocks(nil, data)
			if err != nil {
				t.Fatal(err)
			}
			for _, min := range []int{1, 1000, 3 * MaxBlockData} {
				for _, piece := range []int{7, 5000, MaxBlockData + 3} {
					s := &takeSink{rnd: rnd}
					c.SetSink(s, min)
					got, raw := streamLike(t, c, []byte("pfx"), data, slicesOf(piece, n))
					c.SetSink(nil, 0)
					if string(got[:3]) != "pfx" {
						t.Fatalf("level %d: the prefix before the run changed: %q", level, got[:3])
					}
					all := append(s.taken, got[3:]...)
					if !bytes.Equal(all, want) || raw != int64(n) {
						t.Fatalf("level %d, n=%d, min %d, pieces of %d: taken and left (%d+%d bytes) differ from AppendBlocks (%d)",
							level, n, min, piece, len(s.taken), len(got)-3, len(want))
					}
				}
			}
		}
	}
}

// TestSinkErrorStopsRun checks that the error of a Sink comes out of Cut.
func TestSinkErrorStopsRun(t *testing.T) {
	for _, level := range []int{0, 1} {
		c, err := NewCompressor(level)
		if err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		c.SetSink(&takeSink{fail: boom}, 1)
		buf := c.Begin(nil)
		buf = append(buf, make([]byte, 3*MaxBlockData)...)
		if _, err := c.Cut(buf); !errors.Is(err, boom) {
			t.Fatalf("level %d: Cut returned %v, want the sink's error", level, err)
		}
	}
}

// slicesOf is n split in pieces of size piece.
func slicesOf(piece, n int) []int {
	var p []int
	for ; n > 0; n -= piece {
		p = append(p, min(piece, n))
	}
	return p
}
