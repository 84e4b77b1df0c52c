#include "textflag.h"
#include "go_asm.h"

// decodeAsm5-8 are store.run of direct.go (read it first) for amd64, for
// models of 2^5-2^8 bytes: the same steps on the same model layout, with
// every value of the loop in a register. Go keeps only part of them in
// registers and spends about 130 instructions per value; these spend
// about 70 (bench/archive/FQZCOMP.md). The body is direct_amd64.h.
//
// Besides mispredicted searches, what sets the loop's speed is the chain
// from one symbol to the next context: the symbol is loaded from the
// model, the context computed from it, and the next model loaded at
// that context. So the symbol is loaded on its own, the context's other
// parts are summed before it is known, the history takes the symbol
// without a table when the stream's qtab allows, and the context is kept
// as the model's offset, with no multiplication by the model size.
//
// Registers across the loop:
//	SI  models			DI  pm
//	R14 &out[end]			BX  j-end (negative, counts up to 0)
//	R8  rng				R9  code
//	R10 the context << SHIFT, the model's offset
//	R11 qctx			R12 delta	R13 prev
//	X2  2^50, for the multiplier (header)
// Within a value: DX the quotient r, R15 the symbol q (the entry in the
// search); AX, CX, DX are scratch.

// Byte offsets in a model (direct.go): the multiplier (its high word
// zero for a model not created or waiting for renormalisation, which
// ends the loop), the total, the entries frequency<<8 | symbol.
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
