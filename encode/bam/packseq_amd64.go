package bam

import "golang.org/x/sys/cpu"

// packTables are the lookup vectors of packSeqAVX2, each 16 bytes used by
// VPSHUFB and repeated for the second 128-bit lane, made from nt16 so
// that the two paths cannot disagree. ASCII splits by its high nibble:
// rows 4 and 6 ('@'-'O', '`'-'o') and rows 5 and 7 ('P'-'_', 'p'-DEL)
// hold the letters, row 3 holds '=', every other row codes 15. A row's
// codes are stored XOR 15 so that a byte no row selects comes out as 0
// and, after the final XOR, as 15.
type packTables struct {
	row4, row5, row3 [32]byte // nt16[row<<4|lo] ^ 15, by low nibble
	is46, is57, is3  [32]byte // 0xff for the high nibbles of the row
	low              [32]byte // 0x0f
	mul              [32]byte // 16, 1, ...: VPMADDUBSW's pair weights
}

var packTab = func() (t packTables) {
	for i := range 32 {
		lo := byte(i & 15)
		t.row4[i] = nt16[0x40|lo] ^ 15
		t.row5[i] = nt16[0x50|lo] ^ 15
		t.row3[i] = nt16[0x30|lo] ^ 15
		switch lo {
		case 4, 6:
			t.is46[i] = 0xff
		case 5, 7:
			t.is57[i] = 0xff
		case 3:
			t.is3[i] = 0xff
		}
		t.low[i] = 0x0f
		t.mul[i] = 1
		if i%2 == 0 {
			t.mul[i] = 16
		}
	}
	return
}()

// useAVX2 is set when the CPU has AVX2 and the lowercase rows code as the
// uppercase ones, which packSeqAVX2 assumes.
var useAVX2 = cpu.X86.HasAVX2 && func() bool {
	for lo := range 16 {
		if nt16[0x60|lo] != nt16[0x40|lo] || nt16[0x70|lo] != nt16[0x50|lo] {
			return false
		}
	}
	return true
}()

// packSeqAVX2 packs n bases of src (n even, at least 32) into n/2 bytes
// of dst, 32 bases per step; a tail that is not a whole step is packed by
// one more step ending at the n-th base, overlapping the last, which
// writes the same bytes again (one call per read: the tables are loaded
// once).
//
//go:noescape
func packSeqAVX2(dst, src *byte, n int, t *packTables)

// packSeqVector packs the longest even-length prefix of seq with AVX2 and
// returns its length, 0 without AVX2 or with fewer than 32 bases.
func packSeqVector(out, seq []byte) int {
	n := len(seq) &^ 1
	if !useAVX2 || n < 32 || len(out) < len(seq)/2 {
		return 0
	}
	packSeqAVX2(&out[0], &seq[0], n, &packTab)
	return n
}
