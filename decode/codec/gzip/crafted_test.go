package gzip

import (
	"bytes"
	"testing"
)

// fixedLitCode writes literal/length symbol s with the fixed code (RFC
// 1951 §3.2.6).
func fixedLitCode(w *bitWriter, s int) {
	switch {
	case s < 144:
		w.code(uint32(0x30+s), 8)
	case s < 256:
		w.code(uint32(0x190+s-144), 9)
	case s < 280:
		w.code(uint32(s-256), 7)
	default:
		w.code(uint32(0xc0+s-280), 8)
	}
}

// clSym is a code length code symbol with its extra bits.
type clSym struct {
	sym   int
	extra uint64
}

// dynamic writes a dynamic block header (RFC 1951 §3.2.7) with the raw
// HLIT, HDIST and HCLEN fields, the code length code lengths clens in
// transmission order (HCLEN+4 of them), then syms coded with that code.
func dynamic(w *bitWriter, final bool, hlit, hdist, hclen int, clens []uint8, syms []clSym) {
	w.bits(b2u(final)|2<<1, 3)
	w.bits(uint64(hlit), 5)
	w.bits(uint64(hdist), 5)
	w.bits(uint64(hclen), 4)
	var bySym [19]uint8
	for i, l := range clens {
		w.bits(uint64(l), 3)
		bySym[clenOrder[i]] = l
	}
	codes := canonical(bySym[:])
	for _, s := range syms {
		w.code(codes[s.sym], uint(bySym[s.sym]))
		switch s.sym {
		case 16:
			w.bits(s.extra, 2)
		case 17:
			w.bits(s.extra, 3)
		case 18:
			w.bits(s.extra, 7)
		}
	}
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// plainLengths returns the syms that send lens one by one, and clens, a
// code length code (in transmission order, all 19) giving each of 0-15 a
// 4-bit code and 16-18 none.
func plainLengths(lens []uint8) ([]uint8, []clSym) {
	var bySym [19]uint8
	for s := range 16 {
		bySym[s] = 4
	}
	clens := make([]uint8, 19)
	for i, s := range clenOrder {
		clens[i] = bySym[s]
	}
	syms := make([]clSym, len(lens))
	for i, l := range lens {
		syms[i] = clSym{sym: int(l)}
	}
	return clens, syms
}

// litDist is a dynamic block's code lengths: 257 + hlit literal/length
// lengths and 1 + hdist distance lengths.
type litDist struct {
	lit, dist []uint8
}

// simpleCode is a complete code for literals 'a' (2 bits), 'b' (2), EOB
// (2), length symbol 257 (3) and 285 (3); distance codes 0 and 1, 1 bit.
func simpleCode() litDist {
	lit := make([]uint8, 286)
	lit['a'], lit['b'], lit[256], lit[257], lit[285] = 2, 2, 2, 3, 3
	return litDist{lit, []uint8{1, 1}}
}

// writeDynamicPlain writes a dynamic block header for c with plain code
// lengths, and returns the literal/length and distance codes.
func writeDynamicPlain(w *bitWriter, final bool, c litDist) (lit, dist []uint32) {
	all := append(append([]uint8(nil), c.lit...), c.dist...)
	clens, syms := plainLengths(all)
	dynamic(w, final, len(c.lit)-257, len(c.dist)-1, 15, clens, syms)
	return canonical(c.lit), canonical(c.dist)
}

// craftedCase writes one DEFLATE block and returns what it decodes to
// (ignored when the block is invalid).
type craftedCase struct {
	name  string
	ok    bool
	block func(w *bitWriter, final bool) []byte
}

func craftedCases() []craftedCase {
	fixed := func(syms ...int) func(w *bitWriter, final bool) []byte {
		return func(w *bitWriter, final bool) []byte {
			w.bits(b2u(final)|1<<1, 3)
			for _, s := range syms {
				fixedLitCode(w, s)
			}
			return nil
		}
	}
	// fixedMatch writes "abcd" then a match of length symbol ls with
	// extra bits lx, distance code dc with extra bits dx (dn bits).
	fixedMatch := func(ls int, lx uint64, ln uint, dc uint32, dx uint64, dn uint, want string) func(w *bitWriter, final bool) []byte {
		return func(w *bitWriter, final bool) []byte {
			w.bits(b2u(final)|1<<1, 3)
			for _, c := range "abcd" {
				fixedLitCode(w, int(c))
			}
			fixedLitCode(w, ls)
			w.bits(lx, ln)
			w.code(dc, 5)
			w.bits(dx, dn)
			fixedLitCode(w, 256)
			return []byte(want)
		}
	}
	dyn := func(c litDist, body func(w *bitWriter, lit, dist []uint32)) func(w *bitWriter, final bool) []byte {
		return func(w *bitWriter, final bool) []byte {
			lit, dist := writeDynamicPlain(w, final, c)
			body(w, lit, dist)
			return nil
		}
	}
	simple := simpleCode()
	abEOB := func(w *bitWriter, lit, dist []uint32) {
		w.code(lit['a'], 2)
		w.code(lit['b'], 2)
		w.code(lit[256], 2)
	}
	withOut := func(f func(w *bitWriter, final bool) []byte, out string) func(w *bitWriter, final bool) []byte {
		return func(w *bitWriter, final bool) []byte {
			f(w, final)
			return []byte(out)
		}
	}
	lens := func(c litDist, edit func(c *litDist)) litDist {
		c = litDist{bytes.Clone(c.lit), bytes.Clone(c.dist)}
		edit(&c)
		return c
	}
	return []craftedCase{
		{"fixed-empty", true, fixed(256)},
		{"fixed-literals", true, withOut(fixed('h', 'i', 200, 256), "hi\xc8")},
		{"fixed-lit286", false, fixed('a', 286, 256)},
		{"fixed-lit287", false, fixed('a', 287, 256)},
		{"fixed-no-eob", false, fixed('a', 'b')},
		{"fixed-dist1", true, fixedMatch(257, 0, 0, 0, 0, 0, "abcdddd")},
		{"fixed-dist4", true, fixedMatch(258, 0, 0, 3, 0, 0, "abcdabcd")},
		{"fixed-dist5", false, fixedMatch(257, 0, 0, 4, 0, 1, "")},
		{"fixed-dist30", false, fixedMatch(257, 0, 0, 30, 0, 0, "")},
		{"fixed-dist31", false, fixedMatch(257, 0, 0, 31, 0, 0, "")},
		{"fixed-len258-285", true, fixedMatch(285, 0, 0, 3, 0, 0, "abcd"+string(bytes.Repeat([]byte("abcd"), 65)[:258]))},
		{"fixed-len258-284", true, fixedMatch(284, 31, 5, 3, 0, 0, "abcd"+string(bytes.Repeat([]byte("abcd"), 65)[:258]))},
		{"fixed-len227", true, fixedMatch(284, 0, 5, 0, 0, 0, "abcd"+string(bytes.Repeat([]byte("d"), 227)))},
		{"type3", false, func(w *bitWriter, final bool) []byte {
			w.bits(b2u(final)|3<<1, 3)
			w.bits(0, 32)
			return nil
		}},
		{"stored-empty", true, func(w *bitWriter, final bool) []byte {
			w.bits(b2u(final), 3)
			w.align()
			w.bits(0xffff0000, 32)
			return nil
		}},
		{"stored-data", true, func(w *bitWriter, final bool) []byte {
			w.bits(b2u(final), 3)
			w.align()
			w.bits(0xfffc0003, 32)
			w.bits(0x7a7978, 24)
			return []byte("xyz")
		}},
		{"stored-nlen", false, func(w *bitWriter, final bool) []byte {
			w.bits(b2u(final), 3)
			w.align()
			w.bits(0xfffd0003, 32)
			w.bits(0x7a7978, 24)
			return nil
		}},
		{"dynamic-simple", true, withOut(dyn(simple, abEOB), "ab")},
		{"dynamic-match", true, withOut(dyn(simple, func(w *bitWriter, lit, dist []uint32) {
			w.code(lit['a'], 2)
			w.code(lit['b'], 2)
			w.code(lit[257], 3)
			w.code(dist[1], 1) // distance 2
			w.code(lit[285], 3)
			w.code(dist[0], 1) // distance 1
			w.code(lit[256], 2)
		}), "ababa"+string(bytes.Repeat([]byte("a"), 258)))},
		{"dynamic-hlit286", true, withOut(dyn(lens(simple, func(c *litDist) { c.lit = c.lit[:286] }), abEOB), "ab")},
		{"dynamic-hlit287", false, dyn(lens(simple, func(c *litDist) { c.lit = append(c.lit, 0) }), abEOB)},
		{"dynamic-hlit288", false, dyn(lens(simple, func(c *litDist) { c.lit = append(c.lit, 0, 0) }), abEOB)},
		{"dynamic-hdist30", true, withOut(dyn(lens(simple, func(c *litDist) { c.dist = append(c.dist, make([]uint8, 28)...) }), abEOB), "ab")},
		{"dynamic-hdist31", false, dyn(lens(simple, func(c *litDist) { c.dist = append(c.dist, make([]uint8, 29)...) }), abEOB)},
		{"dynamic-hdist32", false, dyn(lens(simple, func(c *litDist) { c.dist = append(c.dist, make([]uint8, 30)...) }), abEOB)},
		{"dynamic-oversubscribed-lit", false, dyn(lens(simple, func(c *litDist) { c.lit['c'] = 3 }), abEOB)},
		{"dynamic-incomplete-lit", false, dyn(lens(simple, func(c *litDist) { c.lit[285] = 0 }), abEOB)},
		{"dynamic-oversubscribed-dist", false, dyn(lens(simple, func(c *litDist) { c.dist = append(c.dist, 1) }), abEOB)},
		{"dynamic-incomplete-dist", false, dyn(lens(simple, func(c *litDist) { c.dist = []uint8{1, 2} }), abEOB)},
		{"dynamic-no-eob", false, dyn(lens(simple, func(c *litDist) { c.lit[256], c.lit['c'] = 0, 2 }), abEOB)},
		// A code of a single one-bit symbol is accepted (zlib too,
		// for literal/length and distance codes).
		{"dynamic-only-eob", true, dyn(litDist{append(make([]uint8, 256), 1), []uint8{0}}, func(w *bitWriter, lit, dist []uint32) {
			w.bits(0, 1)
		})},
		{"dynamic-only-eob-unused-code", false, dyn(litDist{append(make([]uint8, 256), 1), []uint8{0}}, func(w *bitWriter, lit, dist []uint32) {
			w.bits(1, 1)
		})},
		{"dynamic-one-distance", true, withOut(dyn(lens(simple, func(c *litDist) { c.dist = []uint8{0, 1} }), func(w *bitWriter, lit, dist []uint32) {
			w.code(lit['a'], 2)
			w.code(lit['b'], 2)
			w.code(lit[257], 3)
			w.bits(0, 1) // distance 2
			w.code(lit[256], 2)
		}), "ababa")},
		{"dynamic-one-distance-unused-code", false, dyn(lens(simple, func(c *litDist) { c.dist = []uint8{0, 1} }), func(w *bitWriter, lit, dist []uint32) {
			w.code(lit['a'], 2)
			w.code(lit['b'], 2)
			w.code(lit[257], 3)
			w.bits(1, 1)
			w.code(lit[256], 2)
		})},
		// No distance code at all: fine until a length needs one.
		{"dynamic-no-distances", true, withOut(dyn(lens(simple, func(c *litDist) { c.dist = []uint8{0} }), abEOB), "ab")},
		{"dynamic-no-distances-used", false, dyn(lens(simple, func(c *litDist) { c.dist = []uint8{0} }), func(w *bitWriter, lit, dist []uint32) {
			w.code(lit['a'], 2)
			w.code(lit[257], 3)
			w.bits(0, 1)
			w.code(lit[256], 2)
		})},
		// Repeats: 16 first is invalid; repeats may cross from the
		// literal/length lengths into the distance ones, not past them.
		{"repeat16-first", false, func(w *bitWriter, final bool) []byte {
			clens, syms := repeatLengths()
			dynamic(w, final, 0, 0, 15, clens, append([]clSym{{16, 0}}, syms...))
			return nil
		}},
		{"repeat-across", true, func(w *bitWriter, final bool) []byte {
			// 138 + 118 zeros, EOB 1, then 17 ×3 zeros: symbol 257
			// and both distance lengths. The distance code is empty.
			clens, _ := repeatLengths()
			dynamic(w, final, 1, 1, 15, clens, []clSym{{18, 127}, {18, 107}, {1, 0}, {17, 0}})
			w.bits(0, 1) // EOB
			return nil
		}},
		{"repeat-past-end", false, func(w *bitWriter, final bool) []byte {
			clens, _ := repeatLengths()
			dynamic(w, final, 1, 1, 15, clens, []clSym{{18, 127}, {18, 107}, {1, 0}, {17, 1}})
			w.bits(0, 1)
			return nil
		}},
		// Code length codes.
		{"clen-empty", false, func(w *bitWriter, final bool) []byte {
			dynamic(w, final, 0, 0, 15, make([]uint8, 19), nil)
			return nil
		}},
		{"clen-single", false, func(w *bitWriter, final bool) []byte {
			clens := make([]uint8, 19)
			clens[4] = 1 // symbol 8 only
			dynamic(w, final, 0, 0, 15, clens, nil)
			w.bits(0, 32)
			w.bits(0, 32)
			w.bits(0, 32)
			w.bits(0, 32)
			w.bits(0, 32)
			w.bits(0, 32)
			w.bits(0, 32)
			w.bits(0, 32)
			w.bits(0, 32)
			return nil
		}},
		{"clen-oversubscribed", false, func(w *bitWriter, final bool) []byte {
			clens, syms := plainLengths(simple.lit)
			clens[0] = 1
			dynamic(w, final, 29, 1, 15, clens, syms)
			return nil
		}},
		{"clen-incomplete", false, func(w *bitWriter, final bool) []byte {
			clens, syms := plainLengths(simple.lit)
			clens[4] = 0 // symbol 8
			dynamic(w, final, 29, 1, 15, clens, syms)
			return nil
		}},
		{"clen-hclen4", false, func(w *bitWriter, final bool) []byte {
			dynamic(w, final, 0, 0, 0, []uint8{1, 1, 0, 0}, []clSym{{16, 0}})
			return nil
		}},
		// Long codes, through subtables: codes of 1 to 15 bits.
		{"dynamic-long-codes", true, withOut(dyn(longCode(), func(w *bitWriter, lit, dist []uint32) {
			lc := longCode()
			for _, s := range []int{0, 1, 200, 'a', 0, 11, 258} {
				w.code(lit[s], uint(lc.lit[s]))
			}
			w.code(dist[0], uint(lc.dist[0])) // distance 1
			w.code(lit[256], uint(lc.lit[256]))
		}), "\x00\x01\xc8a\x00\x0b\x0b\x0b\x0b\x0b")},
		{"dynamic-long-distance-too-far", false, dyn(longCode(), func(w *bitWriter, lit, dist []uint32) {
			lc := longCode()
			w.code(lit['a'], uint(lc.lit['a']))
			w.code(lit[258], uint(lc.lit[258]))
			w.code(dist[29], uint(lc.dist[29]))
			w.bits(0, 13) // distance 24577
			w.code(lit[256], uint(lc.lit[256]))
		})},
	}
}

// repeatLengths is a code length code giving 0, 1, 16, 17 and 18 codes
// of lengths 2, 2, 2, 3, 3 (transmission order), for repeat tests.
func repeatLengths() ([]uint8, []clSym) {
	var bySym [19]uint8
	bySym[0], bySym[1], bySym[16], bySym[17], bySym[18] = 2, 2, 2, 3, 3
	clens := make([]uint8, 19)
	for i, s := range clenOrder {
		clens[i] = bySym[s]
	}
	return clens, nil
}

// longCode is a complete literal/length code with codes of every length
// from 1 to 15 ('a' 1 bit, EOB 2, literals 0-11 3 to 14 bits, literal
// 200 and length symbol 258 15 bits) and a complete distance code with
// codes of 1 to 15 bits (distance symbols 0-13, 14 and 29).
func longCode() litDist {
	lit := make([]uint8, 286)
	order := []int{'a', 256, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	for i, s := range order {
		lit[s] = uint8(i + 1)
	}
	lit[200], lit[258] = 15, 15
	dist := make([]uint8, 30)
	for i := range 14 {
		dist[i] = uint8(i + 1)
	}
	dist[14], dist[29] = 15, 15
	return litDist{lit, dist}
}

// TestCrafted checks hand-written DEFLATE blocks against klauspost's
// reader, each alone in a member (decoded by the careful loop) and between
// stored blocks that keep the fast loop running.
func TestCrafted(t *testing.T) {
	pre := bytes.Repeat([]byte("0123456789"), 40)
	post := bytes.Repeat([]byte("abcdefghij"), 10)
	for _, c := range craftedCases() {
		var w bitWriter
		out := c.block(&w, true)
		alone := member(w.bytes(), out)
		if ok := checkAgainstOracle(t, c.name, alone); ok != c.ok {
			t.Errorf("%s: oracle accepts: %v, want %v", c.name, ok, c.ok)
		}

		w = bitWriter{}
		w.bits(0, 3)
		w.align()
		w.bits(uint64(len(pre))|uint64(^uint16(len(pre)))<<16, 32)
		w.out = append(w.out, pre...)
		out = c.block(&w, false)
		w.bits(1, 3)
		w.align()
		w.bits(uint64(len(post))|uint64(^uint16(len(post)))<<16, 32)
		w.out = append(w.out, post...)
		raw := append(append(bytes.Clone(pre), out...), post...)
		padded := member(w.bytes(), raw)
		if ok := checkAgainstOracle(t, c.name+"/padded", padded); ok != c.ok {
			t.Errorf("%s/padded: oracle accepts: %v, want %v", c.name, ok, c.ok)
		}
	}
}
