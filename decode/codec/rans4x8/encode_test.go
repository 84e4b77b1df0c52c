package rans4x8

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// encodeO1 is a test-only order-1 rANS 4x8 encoder (CRAMcodecs section
// 2), the inverse of decodeO1: frequencies normalised per context to sum
// to tot (4096, or 4095 as htscodecs writes them), tables written with a zero run count wherever a symbol or
// context follows its predecessor, states encoding the symbols in the
// reverse of the decoder's order.
func encodeO1(data []byte, tot uint32) []byte {
	n := len(data)
	q := n >> 2
	// ctxOf returns the context of position p: 0 at the start of a
	// quarter, else the previous symbol (state 3 goes on from its quarter
	// into the remainder).
	ctxOf := func(p int) byte {
		if p == 0 || p < 4*q && p%q == 0 {
			return 0
		}
		return data[p-1]
	}
	var counts [256][256]uint32
	for p := range data {
		counts[ctxOf(p)][data[p]]++
	}
	var freq, cum [256][256]uint32
	var tables []byte
	prevCtx := -1
	for c := range 256 {
		total := uint32(0)
		for _, k := range counts[c] {
			total += k
		}
		if total == 0 {
			continue
		}
		sum, big := uint32(0), 0
		for s, k := range counts[c] {
			if k == 0 {
				continue
			}
			f := max(1, uint32(uint64(k)*uint64(tot)/uint64(total)))
			freq[c][s] = f
			sum += f
			if f > freq[c][big] {
				big = s
			}
		}
		freq[c][big] += tot - sum // may go down; stays >= 1 for these inputs
		if prevCtx >= 0 && c == prevCtx+1 {
			tables = append(tables, byte(c), 0)
		} else {
			tables = append(tables, byte(c))
		}
		prevCtx = c
		prev := -1
		x := uint32(0)
		for s := range 256 {
			f := freq[c][s]
			if f == 0 {
				continue
			}
			cum[c][s] = x
			x += f
			switch {
			case prev < 0:
				tables = append(tables, byte(s))
			case s == prev+1:
				tables = append(tables, byte(s), 0)
			default:
				tables = append(tables, byte(s))
			}
			prev = s
			if f < 128 {
				tables = append(tables, byte(f))
			} else {
				tables = append(tables, byte(0x80|f>>8), byte(f))
			}
		}
		tables = append(tables, 0)
	}
	tables = append(tables, 0)

	// Decode order: round i visits quarters 0..3, then the remainder.
	order := make([]int, 0, n)
	for i := range q {
		for j := range 4 {
			order = append(order, j*q+i)
		}
	}
	for p := 4 * q; p < n; p++ {
		order = append(order, p)
	}
	lane := func(p int) int {
		if p >= 4*q {
			return 3
		}
		return p / q
	}
	st := [4]uint32{ransL, ransL, ransL, ransL}
	var rev []byte
	for k := len(order) - 1; k >= 0; k-- {
		p := order[k]
		c, s := ctxOf(p), data[p]
		f, start := freq[c][s], cum[c][s]
		x := st[lane(p)]
		xMax := ((ransL >> tfShift) << 8) * f
		for x >= xMax {
			rev = append(rev, byte(x))
			x >>= 8
		}
		st[lane(p)] = (x/f)<<tfShift + x%f + start
	}
	body := tables
	for _, x := range st {
		body = binary.LittleEndian.AppendUint32(body, x)
	}
	for k := len(rev) - 1; k >= 0; k-- {
		body = append(body, rev[k])
	}
	return stream(1, uint32(n), body...)
}

// qualities returns n values below top drawn with a skew, as Phred scores
// are.
func qualities(r *rand.Rand, n, top int) []byte {
	b := make([]byte, n)
	prev := top - 1
	for i := range b {
		switch v := r.IntN(10); {
		case v < 6:
			b[i] = byte(prev)
		default:
			b[i] = byte(r.IntN(top))
		}
		prev = int(b[i])
	}
	return b
}

// TestO1Flat decodes order-1 streams with the flat-table loop forced on
// and off (see o1Tables) and expects the data back from both: symbols
// below flatSyms (the flat table's case) and above it (the row tables'),
// at lengths around the fast loops' bounds and flatMinOut, and damaged
// copies, on which both loops must agree.
func TestO1Flat(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, top := range []int{2, 41, flatSyms, flatSyms + 1, 256} {
		for _, n := range []int{1, 3, 4, 17, 64, 65, 67, 1000, 4099, flatMinOut + 5} {
			data := qualities(r, n, top)
			src := encodeO1(data, totFreq-uint32(n%2))
			for _, flatMin := range []int{0, flatMinOut, math.MaxInt} {
				got, err := appendDecode(nil, src, n, flatMin)
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("top %d, n %d, flatMin %d: %d bytes, %v", top, n, flatMin, len(got), err)
				}
			}
			for range 8 {
				bad := bytes.Clone(src)
				bad[headerLen+r.IntN(len(bad)-headerLen)] ^= byte(1 + r.IntN(255))
				a, aerr := appendDecode(nil, bad, n, 0)
				b, berr := appendDecode(nil, bad, n, math.MaxInt)
				if (aerr == nil) != (berr == nil) || !bytes.Equal(a, b) {
					t.Fatalf("top %d, n %d, damaged: flat %d bytes, %v; rows %d bytes, %v", top, n, len(a), aerr, len(b), berr)
				}
			}
		}
	}
}

// FuzzO1RoundTrip encodes arbitrary data at order 1 and decodes it with
// both order-1 loops.
func FuzzO1RoundTrip(f *testing.F) {
	f.Add([]byte("IIIIHHHGG#"), 0)
	f.Add(qualities(rand.New(rand.NewPCG(1, 1)), 300, 41), 0)
	f.Add([]byte{0, 1, 2, 3, 255, 254, 0, 0}, 1)
	f.Fuzz(func(t *testing.T, data []byte, shift int) {
		if len(data) > 1<<16 {
			data = data[:1<<16]
		}
		if len(data) == 0 {
			return
		}
		if shift&1 == 1 {
			for i := range data {
				data[i] &= flatSyms - 1
			}
		}
		src := encodeO1(data, totFreq-uint32(shift>>1&1))
		for _, flatMin := range []int{0, math.MaxInt} {
			got, err := appendDecode(nil, src, len(data), flatMin)
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("flatMin %d: %d of %d bytes, %v", flatMin, len(got), len(data), err)
			}
		}
	})
}
