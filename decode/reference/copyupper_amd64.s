#include "textflag.h"

// UPSTEP copies the 32 bytes at (src) to (dst), a byte c that is a
// lowercase letter ('`' < c < '{' as signed bytes, which leaves out
// every byte of 0x80 and above) less 0x20.
#define UPSTEP(src, dst) \
	VMOVDQU  (src), Y0 \
	VPCMPGTB Y13, Y0, Y1 \
	VPCMPGTB Y0, Y14, Y2 \
	VPAND    Y2, Y1, Y1 \
	VPAND    Y15, Y1, Y1 \
	VPXOR    Y1, Y0, Y0 \
	VMOVDQU  Y0, (dst)

// func copyUpperAVX2(dst, src *byte, n int)
//
// n is at least 32: 32 bytes per step, and a tail that is not a whole
// step done by one more step ending at the n-th byte.
TEXT ·copyUpperAVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	MOVQ $0x6060606060606060, AX // '`'
	VMOVQ AX, X13
	VPBROADCASTQ X13, Y13
	MOVQ $0x7b7b7b7b7b7b7b7b, AX // '{'
	VMOVQ AX, X14
	VPBROADCASTQ X14, Y14
	MOVQ $0x2020202020202020, AX // the case bit
	VMOVQ AX, X15
	VPBROADCASTQ X15, Y15
	LEAQ -32(SI)(CX*1), R8 // the last step's bytes
	LEAQ -32(DI)(CX*1), R9
	MOVQ CX, R10
	ANDQ $31, R10          // the tail
	SHRQ $5, CX            // whole steps, at least one

loop:
	UPSTEP(SI, DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  loop

	TESTQ R10, R10
	JZ    done
	UPSTEP(R8, R9)

done:
	VZEROUPPER
	RET
