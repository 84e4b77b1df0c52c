package gzip

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cramfs/cramfs/internal/splitmix"
)

// codeFor returns the symbol among payload[first:last+1] (the decoder's
// litPayload or distPayload entries, base<<16 | extra bits) whose range
// holds v, with v's extra bits and their count. It looks from the last
// symbol down, so that a length of 258 is symbol 285 (RFC 1951 §3.2.5).
func codeFor(payload []uint32, first, last, v int) (sym int, extra uint64, n uint) {
	for sym = last; sym >= first; sym-- {
		base, bits := int(payload[sym]>>16), uint(payload[sym]&0xff)
		if v >= base && v < base+1<<bits {
			return sym, uint64(v - base), bits
		}
	}
	panic(fmt.Sprintf("no symbol for %d", v))
}

// TestMatchCopies checks matches of every copy path of the fast loop,
// long ones overlapping themselves by more and less than a word and
// than their length, against the bytes they must repeat: a stored block
// of random bytes, a fixed-code block of one match, and a stored block
// long enough to keep the fast loop running past the match.
func TestMatchCopies(t *testing.T) {
	rng := splitmix.Rand(7)
	pre := make([]byte, 400)
	for i := range pre {
		pre[i] = byte(rng.Next())
	}
	post := bytes.Repeat([]byte("xyz"), 200)
	for _, dist := range []int{1, 3, 7, 8, 15, 16, 31, 32, 33, 40, 63, 64, 65, 100, 129, 200, 257, 258, 300, 400} {
		for _, length := range []int{3, 9, 16, 17, 31, 64, 65, 66, 100, 129, 200, 257, 258} {
			var w bitWriter
			w.bits(0, 3)
			w.align()
			w.bits(uint64(len(pre))|uint64(^uint16(len(pre)))<<16, 32)
			w.out = append(w.out, pre...)
			w.bits(1<<1, 3)
			sym, lx, ln := codeFor(litPayload[:], 257, 285, length)
			fixedLitCode(&w, sym)
			w.bits(lx, ln)
			dc, dx, dn := codeFor(distPayload[:], 0, maxDist-1, dist)
			w.code(uint32(dc), 5)
			w.bits(dx, dn)
			fixedLitCode(&w, 256)
			w.bits(1, 3)
			w.align()
			w.bits(uint64(len(post))|uint64(^uint16(len(post)))<<16, 32)
			w.out = append(w.out, post...)

			want := bytes.Clone(pre)
			for range length {
				want = append(want, want[len(want)-dist])
			}
			want = append(want, post...)
			src := member(w.bytes(), want)
			name := fmt.Sprintf("distance %d length %d", dist, length)
			for _, rawSize := range []int{len(want), -1} {
				got, err := AppendDecode(make([]byte, 0, len(want)), src, rawSize)
				if err != nil || !bytes.Equal(got, want) {
					t.Errorf("%s, raw size %d: %d bytes, %v; want the %d bytes the match repeats", name, rawSize, len(got), err, len(want))
				}
			}
			checkAgainstOracle(t, name, src)
		}
	}
}
