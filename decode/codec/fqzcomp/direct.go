package fqzcomp

import (
	"math/bits"

	"github.com/cramfs/cramfs/decode/codec/arith"
)

// The direct layout keeps one quality model per context in a slice indexed
// by the context. A model is an array of words: a header of hdr words, then
// one word per symbol, frequency<<16 | symbol<<symShift (see symShift),
// kept approximately sorted by descending frequency as in arith.Model. The
// header holds a little-endian 64-bit multiplier for the total frequency
// (see header), which turns the range decoder's range/total into a
// multiplication, and then the total.
// A zero word 1 (the multiplier's high word, never zero in a multiplier)
// marks a model not yet created, total 0, or one whose total exceeded
// maxFreq at its last use and which is renormalised at its next, with
// the index of the symbol decoded then in word 0 (see renormalise). The
// direct layout is only used with two or more symbols, so totals are at
// least 2.
//
// Models come in a few fixed sizes (modelArray), so that the decoding loop
// is compiled for each with its stride and bounds known; powers of two,
// so that a context becomes a model's offset with a shift.
const hdr = 3

// modelArray is the set of direct-layout model sizes, in words.
type modelArray interface {
	[8]uint32 | [16]uint32 | [32]uint32 | [64]uint32
}

// symShift returns the shift of the symbols in the entries of models of
// type M: the log2 of the model's size in bytes, so that the symbol's part
// of an entry is the symbol's part of a context as an offset in the
// models (the assembly loop uses it so). Symbols are below 256 and models
// at most 256 bytes, so the part fits the entry's low 16 bits.
func symShift[M modelArray]() uint {
	var m M
	return uint(bits.TrailingZeros(uint(4 * len(m))))
}

// strides lists the lengths of modelArray's types, ascending.
var strides = [...]int{8, 16, 32, 64}

// maxDirectSymbols is the largest alphabet the direct layout holds.
const maxDirectSymbols = 64 - hdr

// directStride returns the words of the smallest direct-layout model that
// holds nsym symbols, 2 <= nsym <= maxDirectSymbols.
func directStride(nsym int) int {
	for _, s := range strides {
		if s >= nsym+hdr {
			return s
		}
	}
	panic("fqzcomp: direct layout alphabet too large")
}

// modelStore is the direct layout's model storage for one model size; a
// pooled decoder keeps its store for the next stream of that size.
type modelStore interface {
	// stride returns the words per model.
	stride() int
	// capacity returns the contexts the store can hold without growing.
	capacity() int
	// prepare makes room for nctx contexts, all not yet created.
	prepare(nctx int)
	// record decodes out's qualities (see store.record).
	record(d *decoder, pm *param, out []byte)
	// clear marks the models of the contexts in touched not created.
	clear(touched []uint32)
}

// newStore returns an empty store of models of stride words, one of
// strides.
func newStore(stride int) modelStore {
	switch stride {
	case 8:
		return new(store[[8]uint32])
	case 16:
		return new(store[[16]uint32])
	case 32:
		return new(store[[32]uint32])
	case 64:
		return new(store[[64]uint32])
	}
	panic("fqzcomp: no direct model of this size")
}

// store is a modelStore of models of type M. A pooled decoder keeps one
// store: streams whose alphabets need another model size allocate anew.
type store[M modelArray] struct {
	models []M // one per context; all zero for a model not created
}

func (s *store[M]) stride() int {
	var m M
	return len(m)
}

func (s *store[M]) capacity() int { return cap(s.models) }

func (s *store[M]) prepare(nctx int) {
	if cap(s.models) < nctx {
		s.models = make([]M, nctx)
	}
	s.models = s.models[:nctx]
}

func (s *store[M]) clear(touched []uint32) {
	for _, c := range touched {
		s.models[c] = *new(M)
	}
}

// header returns the multiplier c<<14 of a model of total frequency tot,
// 2 <= tot < 2^16, for quotient. The float64 quotient 2^50/tot is within
// 1/16 of X = 2^50/tot, so c = floor(it)+2 is in (X, X+2.07) and
// c*tot = 2^50+e with 0 < e < 2.07*tot < 2^18. Then rng*c/2^50 exceeds
// rng/tot by rng*e/(tot*2^50) < 2^-16 < 1/tot, which never reaches the
// next integer, and c<<14 < 2^64: the high word of rng*(c<<14) is
// floor(rng/tot). A float64 division costs far less than an integer one
// of 64 bits, and it is off the path to the next symbol.
func header(tot uint32) uint64 {
	return uint64(int64(float64(1<<50)/float64(int32(tot)))+2) << 14
}

// quotient returns rng/tot for any 32-bit rng and a multiplier h from
// header(tot): the high word of rng*h is the exact quotient (see header).
func quotient(rng uint32, h uint64) uint32 {
	hi, _ := bits.Mul64(uint64(rng), h)
	return uint32(hi)
}

// loop is the state of record's loop between values: the range coder's
// input, position in it, range and code, the next value's context, and
// the context's history (FQZUpdateContext): qctx the past qualities,
// delta the number of changes of quality and prev the last quality. The
// assembly loop (direct_amd64.s) reads and writes it, and keeps of qctx
// only its part under param.hmask, the part the contexts use.
type loop struct {
	src       []byte
	pos       int
	rng, code uint32
	ctx       uint32
	qctx      uint32
	delta     uint32
	prev      uint32
}

// record decodes the qualities out of one record, updating the context
// after each value (FQZDecode's quality loop and FQZUpdateContext,
// CRAMcodecs.tex "FQZComp Models"). decode decodes the values; record
// creates and renormalises the models it stops at.
func (s *store[M]) record(d *decoder, pm *param, out []byte) {
	var l loop
	l.src, l.pos, l.rng, l.code = d.rc.Registers()
	l.ctx = pm.context & (ctxSize - 1)
	for j := 0; ; {
		j = s.decode(pm, out, j, &l)
		if j == len(out) {
			break
		}
		if m := &s.models[l.ctx]; (*m)[1] != 0 {
			continue
		} else if (*m)[2] == 0 {
			s.create(d, l.ctx)
		} else {
			s.renormalise(m, d.nsym)
		}
	}
	d.rc.SetRegisters(l.pos, l.rng, l.code, false)
}

// run decodes out's values from j on with the state in l, and returns
// the index of the first value whose model is not created or must be
// renormalised first, or len(out).
//
// This loop is where fqzcomp spends its time. The range decoder's symbol
// step (arith.RangeDecoder.Decode) is inlined with the coder's registers in
// local variables; it must stay equivalent to Decode. Its speed is set by
// the instructions per value, by mispredicted symbol searches and by the
// chains from one symbol to the next (bench/archive/FQZCOMP.md). So the
// first symbol, the answer four times in five, is tested on its own, and
// the search past it, the check that the code is inside the model and the
// move up are kept off its path; the division by the model's total is a
// multiplication by a stored reciprocal; the context's parts that do not
// depend on the symbol are summed apart. A range code outside its model,
// or input needed beyond the end, sets l.pos past the end, which
// SetRegisters reports. direct_amd64.s is the same loop in assembly.
func (s *store[M]) run(pm *param, out []byte, j int, l *loop) int {
	rng, code, ctx := l.rng, l.code, l.ctx
	qctx, delta, prev := l.qctx, l.delta, l.prev
	models := s.models
	n := uint(len(out))
	sh := symShift[M]()
	for ; j < len(out); j++ {
		// The context is at most maxContext, so inside models. A model
		// not created, or waiting for renormalisation, has no
		// multiplier.
		m := &models[ctx]
		if (*m)[1] == 0 {
			break
		}
		r := quotient(rng, uint64((*m)[0])|uint64((*m)[1])<<32)
		v := (*m)[hdr]
		f := (v >> 16) * r
		tot := (*m)[2] + modelStep
		if f > code {
			(*m)[hdr] = v + modelStep<<16
			setTotal(m, tot, hdr)
		} else {
			if t := tot - modelStep; t*r <= code {
				l.pos = len(l.src) + 1
				code = t*r - 1
			}
			x := hdr
			for f <= code {
				code -= f
				x++
				v = (*m)[x]
				f = (v >> 16) * r
			}
			e := v + modelStep<<16
			(*m)[x] = e
			// With a renormalisation due, the move up waits for it.
			if p := (*m)[x-1]; e>>16 > p>>16 && tot <= maxFreq {
				(*m)[x-1] = e
				(*m)[x] = p
			}
			setTotal(m, tot, x)
		}
		rng = f
		for rng < rangeTop {
			var b byte
			if l.pos < len(l.src) {
				b = l.src[l.pos]
				l.pos++
			} else {
				l.pos = len(l.src) + 1
			}
			rng <<= 8
			code = code<<8 | uint32(b)
		}
		q := v & 0xFFFF >> sh
		out[j] = pm.qmap[q&0xFF]

		// The parts that do not depend on q are summed first, so that
		// few operations stand between q and the next model's load. The
		// history is kept shifted (see param.derive).
		rest := pm.ptab[min(1023, n-uint(j))] + pm.selCtx
		if pm.useDelta {
			rest += pm.dtab[min(delta, 255)]
			nd := delta + 1
			if q == prev {
				nd = delta
			}
			delta, prev = nd, q
		}
		qctx = qctx*pm.qmul + pm.hq[q]
		ctx = qctx&pm.hmask + rest
		if pm.wraps {
			ctx &= ctxSize - 1
		}
	}
	l.rng, l.code, l.ctx = rng, code, ctx
	l.qctx, l.delta, l.prev = qctx, delta, prev
	return j
}

// setTotal stores tot as model m's total after symbol x was decoded, with
// its multiplier; a total beyond maxFreq gets no multiplier but x, for
// renormalise.
func setTotal[M modelArray](m *M, tot uint32, x int) {
	if tot > maxFreq {
		(*m)[0], (*m)[1] = uint32(x), 0
	} else {
		h := header(tot)
		(*m)[0], (*m)[1] = uint32(h), uint32(h>>32)
	}
	(*m)[2] = tot
}

// create initialises the model of context ctx on its first use, nsym
// symbols of frequency 1 (ModelCreate, CRAMcodecs.tex "Adaptive
// Modelling"), and records ctx in d.touched.
func (s *store[M]) create(d *decoder, ctx uint32) {
	m := &s.models[ctx]
	for i := range d.nsym {
		(*m)[hdr+i] = 1<<16 | uint32(i)<<symShift[M]()
	}
	h := header(uint32(d.nsym))
	(*m)[0], (*m)[1], (*m)[2] = uint32(h), uint32(h>>32), uint32(d.nsym)
	d.touched[d.nt] = ctx
	d.nt++
}

// renormalise completes the update of model m of nsym symbols whose total
// exceeded maxFreq at its last use: it halves every frequency, keeping
// each at least 1 (ModelRenormalise, CRAMcodecs.tex "Adaptive
// Modelling"), moves the symbol run decoded then, at m[0], up by one if
// it now has a higher frequency than its predecessor (as ModelDecode does
// after renormalising), and stores the new total and multiplier.
func (s *store[M]) renormalise(m *M, nsym int) {
	var tot uint32
	for i := hdr; i < hdr+nsym; i++ {
		v := (*m)[i]
		f := v >> 16
		f -= f >> 1
		(*m)[i] = f<<16 | v&0xFFFF
		tot += f
	}
	if x := int((*m)[0]); x > hdr && x < hdr+nsym {
		if e, p := (*m)[x], (*m)[x-1]; e>>16 > p>>16 {
			(*m)[x-1] = e
			(*m)[x] = p
		}
	}
	h := header(tot)
	(*m)[0], (*m)[1], (*m)[2] = uint32(h), uint32(h>>32), tot
}

// Model constants of the range coder, shared with package arith.
const (
	rangeTop  = arith.RangeTop
	maxFreq   = arith.MaxFreq
	modelStep = arith.ModelStep
)
