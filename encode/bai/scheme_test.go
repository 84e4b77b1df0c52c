package bai

import (
	"testing"
)

func TestReg2BinGeneral(t *testing.T) {
	for _, r := range [][2]int64{{-1, 0}, {0, 1}, {0, 16384}, {0, 16385}, {16384, 16385}, {0, 1 << 29}, {1<<29 - 1, 1 << 29}, {123456, 9876543}, {5 << 20, 5<<20 + 100}} {
		if got, want := Reg2Bin(r[0], r[1], 14, 5), reg2bin(r[0], r[1]); got != want {
			t.Errorf("Reg2Bin(%d, %d, 14, 5) = %d, reg2bin gives %d", r[0], r[1], got, want)
		}
	}
	tests := []struct {
		beg, end        int64
		minShift, depth int
		want            uint32
	}{
		{0, 1, 14, 0, 0}, {100000, 100001, 14, 0, 0},
		{1 << 29, 1<<29 + 1, 14, 6, BinFirst(6) + 1<<15},
		{1 << 29, 1<<29 + 1<<20, 14, 6, BinFirst(4) + 512},
		{0, 1 << 32, 14, 6, 0},
	}
	for _, tc := range tests {
		if got := Reg2Bin(tc.beg, tc.end, tc.minShift, tc.depth); got != tc.want {
			t.Errorf("Reg2Bin(%d, %d, %d, %d) = %d, want %d", tc.beg, tc.end, tc.minShift, tc.depth, got, tc.want)
		}
	}
	for _, bin := range []uint32{0, 1, 8, 9, 72, 73, 584, 585, 4680, 4681, 37448, 37449} {
		l := BinLevel(bin)
		if bin < BinFirst(l) || bin >= BinFirst(l+1) {
			t.Errorf("BinLevel(%d) = %d, outside [%d, %d)", bin, l, BinFirst(l), BinFirst(l+1))
		}
	}
}

func TestLinear(t *testing.T) {
	var li Linear
	li.set(2, 3, 100)
	li.set(3, 3, 200) // already set
	li.set(3, 6, 300) // sets 4..6
	li.set(9, 9, 400) // 7, 8 back-filled from 9
	want := []uint64{100, 100, 100, 100, 300, 300, 300, 400, 400, 400}
	if li.Len() != int64(len(want)) {
		t.Fatalf("Len %d, want %d", li.Len(), len(want))
	}
	for w, x := range want {
		if got, ok := li.At(int64(w)); !ok || got != x {
			t.Errorf("At(%d) = %d, %v; want %d", w, got, ok, x)
		}
	}
	if _, ok := li.At(10); ok {
		t.Error("At(10) beyond Len reported present")
	}
	if _, ok := li.At(-1); ok {
		t.Error("At(-1) reported present")
	}
}
