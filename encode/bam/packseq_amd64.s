#include "textflag.h"

// func packSeqAVX2(dst, src *byte, n int, t *packTables)
//
// Per 32 ASCII bases c: code = (row4[lo] & is46[hi] | row5[lo] & is57[hi]
// | row3[lo] & is3[hi]) ^ 15 with lo, hi the nibbles of c; then each pair
// becomes 16*first + second (VPMADDUBSW) and the 16-bit results are packed
// to bytes.
TEXT ·packSeqAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ t+24(FP), AX
	VMOVDQU 0(AX), Y8    // row4
	VMOVDQU 32(AX), Y9   // row5
	VMOVDQU 64(AX), Y10  // row3
	VMOVDQU 96(AX), Y11  // is46
	VMOVDQU 128(AX), Y12 // is57
	VMOVDQU 160(AX), Y13 // is3
	VMOVDQU 192(AX), Y14 // 0x0f
	VMOVDQU 224(AX), Y15 // 16, 1
	TESTQ CX, CX
	JZ   done

loop:
	VMOVDQU (SI), Y0
	VPAND   Y14, Y0, Y1  // lo
	VPSRLW  $4, Y0, Y2
	VPAND   Y14, Y2, Y2  // hi
	VPSHUFB Y1, Y8, Y3
	VPSHUFB Y2, Y11, Y4
	VPAND   Y4, Y3, Y3
	VPSHUFB Y1, Y9, Y5
	VPSHUFB Y2, Y12, Y6
	VPAND   Y6, Y5, Y5
	VPOR    Y5, Y3, Y3
	VPSHUFB Y1, Y10, Y5
	VPSHUFB Y2, Y13, Y6
	VPAND   Y6, Y5, Y5
	VPOR    Y5, Y3, Y3
	VPXOR   Y14, Y3, Y3  // codes
	VPMADDUBSW Y15, Y3, Y3
	VPACKUSWB  Y3, Y3, Y3
	VPERMQ  $0x08, Y3, Y3
	VMOVDQU X3, (DI)
	ADDQ $32, SI
	ADDQ $16, DI
	SUBQ $32, CX
	JNZ  loop

done:
	VZEROUPPER
	RET
