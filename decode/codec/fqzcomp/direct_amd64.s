#include "textflag.h"
#include "go_asm.h"

// decodeAsm5-8 are store.run of direct.go (read it first) for amd64, for
// models of 2^5-2^8 bytes: the same steps on the same model layout, with
// every value of the loop in a register. Go keeps only part of them in
// registers: it spends 110-130 instructions per value on the dataset's
// blocks, these 60-68 (bench/archive/FQZCOMP.md). The body is
// direct_amd64.h.
//
// Besides mispredicted searches, what sets the loop's speed is the chain
// from one symbol to the next context: the symbol is loaded from the
// model, the context computed from it, and the next model loaded at that
// context. So the symbol's part of the context is loaded on its own,
// already shifted (direct.go, symShift); the history adds it and keeps
// its part under hmask; the context's other parts are summed before the
// symbol is known, into the base address of the next model; and the
// history is the index: the model is at (R10)(R11*1), no multiplication
// by the model size or addition stands between the symbol and the load.
// Tables other than qtab's identity, and contexts that wrap modulo 2^16,
// take a longer path.
//
// Registers across the loop:
//	SI  models			DI  pm
//	R14 &out[end]			BX  j-end (negative, counts up to 0)
//	R8  rng				R9  code
//	R10 SI + the context's other parts << SHIFT
//	R11 the history's part, qctx&hmask << SHIFT
//	R12 delta			R13 prev
//	X2  2^50, for the multiplier (header)
// Within a value: DX the quotient r, R15 the symbol's part, q << SHIFT;
// AX, CX, DX are scratch.

// Byte offsets in a model (direct.go): the multiplier (its high word
// zero for a model not created or waiting for renormalisation, which
// ends the loop), the total, the entries frequency<<16 | symbol<<SHIFT.
#define MULT 0
#define TOT 8
#define ENTRY0 (const_hdr*4)

// HEADER turns the total in r into the model's multiplier (header).
#define HEADER(r) \
	XORPS     X0, X0; \
	CVTSL2SD  r, X0; \
	MOVAPS    X2, X1; \
	DIVSD     X0, X1; \
	CVTTSD2SQ X1, r; \
	ADDQ      $2, r; \
	SHLQ      $14, r

#define NAME ·decodeAsm5
#define SHIFT 5
#include "direct_amd64.h"
#undef NAME
#undef SHIFT

#define NAME ·decodeAsm6
#define SHIFT 6
#include "direct_amd64.h"
#undef NAME
#undef SHIFT

#define NAME ·decodeAsm7
#define SHIFT 7
#include "direct_amd64.h"
#undef NAME
#undef SHIFT

#define NAME ·decodeAsm8
#define SHIFT 8
#include "direct_amd64.h"
