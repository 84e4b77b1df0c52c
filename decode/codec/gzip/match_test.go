package gzip

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/cramfs/cramfs/internal/splitmix"
)

// lengthSymbol returns the literal/length symbol of a match length (RFC
// 1951 §3.2.5) with its extra bits and their count.
func lengthSymbol(length int) (sym int, extra uint64, n uint) {
	if length == 258 {
		return 285, 0, 0
	}
	base := 3
	for sym = 257; sym < 285; sym++ {
		n = 0
		if sym >= 265 {
			n = uint(sym-261) / 4
		}
		if length < base+1<<n {
			return sym, uint64(length - base), n
		}
		base += 1 << n
	}
	panic(fmt.Sprintf("length %d", length))
}

// distanceCode is lengthSymbol for a distance: its 5-bit code, extra bits
// and their count.
func distanceCode(dist int) (code uint32, extra uint64, n uint) {
	base := 1
	for code = 0; code < 30; code++ {
		n = 0
		if code >= 4 {
			n = uint(code-2) / 2
		}
		if dist < base+1<<n {
			return code, uint64(dist - base), n
		}
		base += 1 << n
	}
	panic(fmt.Sprintf("distance %d", dist))
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
			sym, lx, ln := lengthSymbol(length)
			fixedLitCode(&w, sym)
			w.bits(lx, ln)
			dc, dx, dn := distanceCode(dist)
			w.code(dc, 5)
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
