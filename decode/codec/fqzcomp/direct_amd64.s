#include "textflag.h"
#include "go_asm.h"

// decodeAsm is store.run of direct.go (read it first) for amd64: the same
// steps on the same model layout, with every value of the loop in a
// register. Go keeps only part of them in registers and spends about
// 120 instructions per value; this loop spends about 50 on the common
// path (bench/archive/FQZCOMP.md).
//
// Registers across the loop:
//	SI  models			DI  pm
//	R14 &out[end]			BX  j-end (negative, counts up to 0)
//	R8  rng				R9  code
//	R11 qctx			R12 delta	R13 prev
//	X2  2^50, for the multiplier (header)
// Within a value: AX the context at the top, R10 the model, DX the
// quotient r, R15 the symbol's entry and then the symbol q; AX, CX, DX
// are scratch.
//
// The model layout (direct.go): words 0-1 the multiplier (word 1 is zero
// for a model not created or waiting for renormalisation, which ends the
// loop), word 2 the total, words 3 on the entries frequency<<8 | symbol.

// HEADER turns the total in r into the model's multiplier (header).
#define HEADER(r) \
	XORPS     X0, X0; \
	CVTSL2SD  r, X0; \
	MOVAPS    X2, X1; \
	DIVSD     X0, X1; \
	CVTTSD2SQ X1, r; \
	ADDQ      $2, r; \
	SHLQ      $14, r

// func decodeAsm(models *uint32, nmodels, stride int, pm *param, out []byte, j, end int, l *loop) int
TEXT ·decodeAsm(SB), NOSPLIT, $8-88
	MOVQ models+0(FP), SI
	MOVQ pm+24(FP), DI
	MOVQ out_base+32(FP), R14
	MOVQ end+64(FP), CX
	ADDQ CX, R14
	MOVQ j+56(FP), BX
	SUBQ CX, BX
	// left = len(out) - j = (len(out) - end) - BX, for the position table.
	MOVQ out_len+40(FP), DX
	SUBQ CX, DX
	MOVQ DX, left-8(SP)
	MOVQ l+72(FP), CX
	MOVL loop_rng(CX), R8
	MOVL loop_code(CX), R9
	MOVL loop_qctx(CX), R11
	MOVL loop_delta(CX), R12
	MOVL loop_prev(CX), R13
	MOVL loop_ctx(CX), AX
	MOVQ $0x4310000000000000, DX
	MOVQ DX, X2
	TESTQ BX, BX
	JGE  exit

top:
	// AX is the context. The model's address, checked to be inside.
	CMPQ  AX, nmodels+8(FP)
	JCC   exit
	MOVQ  AX, R10
	IMULQ stride+16(FP), R10
	ADDQ  SI, R10
	CMPL  4(R10), $0
	JEQ   exit

	// r = rng/tot; the first symbol's share f = freq*r.
	MOVL  R8, AX
	MULQ  0(R10)
	MOVL  12(R10), R15
	MOVL  R15, AX
	SHRL  $8, AX
	IMULL DX, AX
	CMPL  AX, R9
	JLS   search

	// The first symbol: rng = f; count it, and the total.
	MOVL  AX, R8
	ADDL  $(const_modelStep<<8), 12(R10)
	MOVL  8(R10), AX
	ADDL  $const_modelStep, AX
	CMPL  AX, $const_maxFreq
	JHI   renormFirst
	MOVL  AX, 8(R10)
	HEADER(AX)
	MOVQ  AX, 0(R10)
	MOVBLZX R15B, R15

value:
	// R8 is the new range, R15 the symbol q.
	CMPL  R8, $const_rangeTop
	JCS   shift

context:
	MOVBLZX param_qmap(DI)(R15*1), AX
	MOVB  AL, (R14)(BX*1)

	// DX = ptab[min(1023, left)] + selCtx, and the delta part.
	MOVQ  left-8(SP), DX
	SUBQ  BX, DX
	CMPQ  DX, $1023
	JHI   clampPosition

positionValue:
	MOVL  param_ptab(DI)(DX*4), DX
	ADDL  param_selCtx(DI), DX
	CMPB  param_useDelta(DI), $0
	JEQ   history
	CMPL  R12, $255
	JHI   clampDelta
	ADDL  param_dtab(DI)(R12*4), DX

countDelta:
	XORL  CX, CX
	CMPL  R15, R13
	SETNE CL
	ADDL  CX, R12
	MOVL  R15, R13

history:
	// The shifted history (param.derive), its part, the rest, modulo
	// 2^16.
	IMULL param_qmul(DI), R11
	ADDL  param_hq(DI)(R15*4), R11
	MOVL  R11, AX
	ANDL  param_hmask(DI), AX
	ADDL  DX, AX
	MOVWLZX AX, AX

next:
	INCQ  BX
	JNE   top

exit:
	// AX is the context of value j.
	MOVQ  l+72(FP), CX
	MOVL  R8, loop_rng(CX)
	MOVL  R9, loop_code(CX)
	MOVL  AX, loop_ctx(CX)
	MOVL  R11, loop_qctx(CX)
	MOVL  R12, loop_delta(CX)
	MOVL  R13, loop_prev(CX)
	ADDQ  end+64(FP), BX
	MOVQ  BX, ret+80(FP)
	RET

search:
	// f = AX <= code: not the first symbol. DX = r, R15 the entry.
	// A code beyond the model's total marks the input bad and is
	// clamped inside it, as run does.
	MOVL  8(R10), CX
	IMULL DX, CX
	CMPL  CX, R9
	JHI   searchInside
	DECL  CX
	MOVL  CX, R9
	MOVQ  l+72(FP), CX
	MOVQ  loop_src+8(CX), R15
	INCQ  R15
	MOVQ  R15, loop_pos(CX)
	MOVL  12(R10), R15

searchInside:
	// CX walks the entries from the first.
	LEAQ  12(R10), CX

searchNext:
	SUBL  AX, R9
	ADDQ  $4, CX
	MOVL  (CX), R15
	MOVL  R15, AX
	SHRL  $8, AX
	IMULL DX, AX
	CMPL  AX, R9
	JLS   searchNext

	// Found at CX: rng = f; count it, and the total.
	MOVL  AX, R8
	LEAL  (const_modelStep<<8)(R15), DX
	MOVL  DX, (CX)
	MOVBLZX R15B, R15
	MOVL  8(R10), AX
	ADDL  $const_modelStep, AX
	CMPL  AX, $const_maxFreq
	JHI   renormSearch
	MOVL  AX, 8(R10)
	HEADER(AX)
	MOVQ  AX, 0(R10)

	// Move up by one when its frequency now exceeds its
	// predecessor's: e>>8 > p>>8 is e > p|0xFF.
	MOVL  -4(CX), AX
	ORL   $0xFF, AX
	CMPL  DX, AX
	JLS   value
	MOVL  -4(CX), AX
	MOVL  DX, -4(CX)
	MOVL  AX, (CX)
	JMP   value

renormFirst:
	// The total exceeds maxFreq: renormalise waits for the model's next
	// use, with the symbol's index, 3, in word 0.
	MOVL  AX, 8(R10)
	MOVL  $3, 0(R10)
	MOVL  $0, 4(R10)
	MOVBLZX R15B, R15
	JMP   value

renormSearch:
	// As renormFirst, with the index of the entry at CX; the move up
	// waits too.
	MOVL  AX, 8(R10)
	MOVQ  CX, AX
	SUBQ  R10, AX
	SHRQ  $2, AX
	MOVL  AX, 0(R10)
	MOVL  $0, 4(R10)
	JMP   value

shift:
	// Shift input bytes in while rng < rangeTop, zeros past the end of
	// the input, which sets pos past it.
	MOVQ  l+72(FP), CX
	MOVQ  loop_pos(CX), AX

shiftByte:
	SHLL  $8, R8
	SHLL  $8, R9
	CMPQ  AX, loop_src+8(CX)
	JCC   shiftPast
	MOVQ  loop_src(CX), DX
	MOVBLZX (DX)(AX*1), DX
	ORL   DX, R9
	INCQ  AX

shiftMore:
	CMPL  R8, $const_rangeTop
	JCS   shiftByte
	MOVQ  AX, loop_pos(CX)
	JMP   context

shiftPast:
	MOVQ  loop_src+8(CX), AX
	INCQ  AX
	JMP   shiftMore

clampPosition:
	MOVL  $1023, DX
	JMP   positionValue

clampDelta:
	ADDL  (param_dtab+255*4)(DI), DX
	JMP   countDelta

