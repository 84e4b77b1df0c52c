// The body of one decodeAsm function, included by direct_amd64.s with
// NAME its symbol and SHIFT the log2 of its models' size in bytes.

// func NAME(models *uint32, nmodels int, pm *param, out []byte, j, end int, l *loop) int
TEXT NAME(SB), NOSPLIT, $40-80
	MOVQ models+0(FP), SI
	MOVQ pm+16(FP), DI
	MOVQ out_base+24(FP), R14
	MOVQ end+56(FP), CX
	ADDQ CX, R14
	MOVQ j+48(FP), BX
	SUBQ CX, BX
	// left = len(out) - j = (len(out) - end) - BX, for the position table.
	MOVQ out_len+32(FP), DX
	SUBQ CX, DX
	MOVQ DX, left-8(SP)
	// The history's part of a context, its multiplier, and the largest
	// model offset, less that part's largest for the context's rest.
	MOVL param_hmask(DI), AX
	SHLQ $SHIFT, AX
	MOVQ AX, hmask-16(SP)
	MOVL param_qmul(DI), DX
	MOVQ DX, qmul-24(SP)
	MOVQ nmodels+8(FP), DX
	DECQ DX
	SHLQ $SHIFT, DX
	MOVQ DX, limit-32(SP)
	SUBQ AX, DX
	MOVQ DX, restLimit-40(SP)
	MOVQ l+64(FP), CX
	MOVL loop_rng(CX), R8
	MOVL loop_code(CX), R9
	MOVL loop_qctx(CX), R11
	SHLQ $SHIFT, R11
	ANDQ AX, R11
	MOVL loop_delta(CX), R12
	MOVL loop_prev(CX), R13
	MOVL loop_ctx(CX), AX
	SHLQ $SHIFT, AX
	LEAQ (SI)(AX*1), R10
	SUBQ R11, R10
	MOVQ $0x4310000000000000, DX
	MOVQ DX, X2
	CMPQ AX, limit-32(SP)
	JHI  exit
	TESTQ BX, BX
	JGE  exit

top:
	// The model is at (R10)(R11*1), inside the models.
	CMPL  (MULT+4)(R10)(R11*1), $0
	JEQ   exit
	// The first symbol's part of the next context, the first thing that
	// waits for this model.
	MOVWLZX ENTRY0(R10)(R11*1), R15

	// r = rng/tot; the first symbol's share f = freq*r.
	MOVL  R8, AX
	MULQ  MULT(R10)(R11*1)
	MOVWLZX (ENTRY0+2)(R10)(R11*1), AX
	IMULL DX, AX
	CMPL  AX, R9
	JLS   search

	// The first symbol: rng = f; count it, and the total.
	MOVL  AX, R8
	ADDL  $(const_modelStep<<16), ENTRY0(R10)(R11*1)
	MOVL  TOT(R10)(R11*1), AX
	ADDL  $const_modelStep, AX
	CMPL  AX, $const_maxFreq
	JHI   renormFirst
	MOVL  AX, TOT(R10)(R11*1)
	HEADER(AX)
	MOVQ  AX, MULT(R10)(R11*1)

value:
	// R8 is the new range, R15 the symbol's part, q<<SHIFT.
	CMPL  R8, $const_rangeTop
	JCS   shift

context:
	MOVL  R15, CX
	SHRL  $SHIFT, CX
	MOVBLZX param_qmap(DI)(CX*1), AX
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
	XORL  AX, AX
	CMPL  CX, R13
	SETNE AL
	ADDL  AX, R12
	MOVL  CX, R13

history:
	// The history (param.derive) takes q's part and keeps the part
	// under hmask, all shifted by SHIFT: the next model is at
	// (SI + rest)(R11*1).
	SHLQ  $SHIFT, DX
	IMULQ qmul-24(SP), R11
	CMPB  param_hqIdentity(DI), $0
	JEQ   historyTable
	ADDQ  R15, R11

historyPart:
	ANDQ  hmask-16(SP), R11
	CMPB  param_wraps(DI), $0
	JNE   wrap
	LEAQ  (SI)(DX*1), R10
	CMPQ  DX, restLimit-40(SP)
	JGT   outside

next:
	INCQ  BX
	JNE   top

exit:
	// The model of value j is at (R10)(R11*1).
	MOVQ  l+64(FP), CX
	MOVL  R8, loop_rng(CX)
	MOVL  R9, loop_code(CX)
	LEAQ  (R10)(R11*1), AX
	SUBQ  SI, AX
	SHRQ  $SHIFT, AX
	MOVL  AX, loop_ctx(CX)
	SHRQ  $SHIFT, R11
	MOVL  R11, loop_qctx(CX)
	MOVL  R12, loop_delta(CX)
	MOVL  R13, loop_prev(CX)
	ADDQ  end+56(FP), BX
	MOVQ  BX, ret+72(FP)
	RET

outside:
	// A context beyond the models (never, see maxContext): stop after
	// value j, leaving its caller to fail on it.
	INCQ  BX
	JMP   exit

search:
	// f = AX <= code: not the first symbol. DX = r. A code beyond the
	// model's total marks the input bad and is clamped inside it, as
	// run does.
	MOVL  TOT(R10)(R11*1), CX
	IMULL DX, CX
	CMPL  CX, R9
	JHI   searchInside
	DECL  CX
	MOVL  CX, R9
	MOVQ  l+64(FP), CX
	MOVQ  loop_src+8(CX), R15
	INCQ  R15
	MOVQ  R15, loop_pos(CX)

searchInside:
	// CX walks the entries from the first.
	LEAQ  ENTRY0(R10)(R11*1), CX

searchNext:
	SUBL  AX, R9
	ADDQ  $4, CX
	MOVWLZX 2(CX), AX
	IMULL DX, AX
	CMPL  AX, R9
	JLS   searchNext

	// Found at CX: rng = f; count it, and the total.
	MOVL  AX, R8
	MOVL  (CX), DX
	ADDL  $(const_modelStep<<16), DX
	MOVL  DX, (CX)
	MOVWLZX DX, R15
	MOVL  TOT(R10)(R11*1), AX
	ADDL  $const_modelStep, AX
	CMPL  AX, $const_maxFreq
	JHI   renormSearch
	MOVL  AX, TOT(R10)(R11*1)
	HEADER(AX)
	MOVQ  AX, MULT(R10)(R11*1)

	// Move up by one when its frequency now exceeds its
	// predecessor's: e>>16 > p>>16 is e > p|0xFFFF.
	MOVL  -4(CX), AX
	ORL   $0xFFFF, AX
	CMPL  DX, AX
	JLS   value
	MOVL  -4(CX), AX
	MOVL  DX, -4(CX)
	MOVL  AX, (CX)
	JMP   value

renormFirst:
	// The total exceeds maxFreq: renormalise waits for the model's next
	// use, with the symbol's index, hdr, in word 0.
	MOVL  AX, TOT(R10)(R11*1)
	MOVL  $const_hdr, MULT(R10)(R11*1)
	MOVL  $0, (MULT+4)(R10)(R11*1)
	JMP   value

renormSearch:
	// As renormFirst, with the index of the entry at CX; the move up
	// waits too.
	MOVL  AX, TOT(R10)(R11*1)
	MOVQ  CX, AX
	SUBQ  R10, AX
	SUBQ  R11, AX
	SHRQ  $2, AX
	MOVL  AX, MULT(R10)(R11*1)
	MOVL  $0, (MULT+4)(R10)(R11*1)
	JMP   value

shift:
	// Shift input bytes in while rng < rangeTop, zeros past the end of
	// the input, which sets pos past it.
	MOVQ  l+64(FP), CX
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

historyTable:
	// CX = q.
	MOVL  param_hq(DI)(CX*4), AX
	SHLQ  $SHIFT, AX
	ADDQ  AX, R11
	JMP   historyPart

wrap:
	// The context modulo 2^16: R10 + R11 is its model.
	LEAQ  (R11)(DX*1), AX
	ANDQ  $(0xFFFF<<SHIFT), AX
	LEAQ  (SI)(AX*1), R10
	SUBQ  R11, R10
	CMPQ  AX, limit-32(SP)
	JHI   outside
	JMP   next
