#include "textflag.h"

// PACKSTEP packs the 32 ASCII bases at (src) into 16 bytes at (dst).
// Per base c: code = (row4[lo] & is46[hi] | row5[lo] & is57[hi]
// | row3[lo] & is3[hi]) ^ 15 with lo, hi the nibbles of c; then each pair
// becomes 16*first + second (VPMADDUBSW) and the 16-bit results are packed
// to bytes.
#define PACKSTEP(src, dst) \
	VMOVDQU (src), Y0 \
	VPAND   Y14, Y0, Y1 \
	VPSRLW  $4, Y0, Y2 \
	VPAND   Y14, Y2, Y2 \
	VPSHUFB Y1, Y8, Y3 \
	VPSHUFB Y2, Y11, Y4 \
	VPAND   Y4, Y3, Y3 \
	VPSHUFB Y1, Y9, Y5 \
	VPSHUFB Y2, Y12, Y6 \
	VPAND   Y6, Y5, Y5 \
	VPOR    Y5, Y3, Y3 \
	VPSHUFB Y1, Y10, Y5 \
	VPSHUFB Y2, Y13, Y6 \
	VPAND   Y6, Y5, Y5 \
	VPOR    Y5, Y3, Y3 \
	VPXOR   Y14, Y3, Y3 \
	VPMADDUBSW Y15, Y3, Y3 \
	VPACKUSWB  Y3, Y3, Y3 \
	VPERMQ  $0x08, Y3, Y3 \
	VMOVDQU X3, (dst)

// func packSeqAVX2(dst, src *byte, n int, t *packTables)
//
// n is even and at least 32: 32 bases per step, and a tail that is not a
// whole step packed by one more step ending at the n-th base, overlapping
// the last, which writes the same bytes again.
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
	LEAQ -32(SI)(CX*1), R8 // the last step's bases
	MOVQ CX, R9
	SHRQ $1, R9
	LEAQ -16(DI)(R9*1), R9 // and its bytes
	MOVQ CX, R10
	ANDQ $31, R10          // the tail
	ANDQ $-32, CX
	JZ   done

loop:
	PACKSTEP(SI, DI)
	ADDQ $32, SI
	ADDQ $16, DI
	SUBQ $32, CX
	JNZ  loop

	TESTQ R10, R10
	JZ   done
	PACKSTEP(R8, R9)

done:
	VZEROUPPER
	RET
