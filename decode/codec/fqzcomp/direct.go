package fqzcomp

import (
	"math/bits"

	"github.com/cramfs/cramfs/decode/codec/arith"
)

// The direct layout keeps one quality model per context in a slice indexed
// by the context. A model is an array of words: a header of hdr words, then
// one word per symbol, frequency<<8 | symbol, kept approximately sorted by
// descending frequency as in arith.Model. The header holds a little-endian
// 64-bit multiplier for the total frequency (see header), which turns the
// range decoder's range/total into a multiplication, and then the total.
// A zero multiplier marks a model not yet created. The direct layout is
// only used with two or more symbols, so totals are at least 2.
//
// Models come in a few fixed sizes (modelArray), so that the decoding loop
// is compiled for each with its stride and bounds known.
const hdr = 3

// modelArray is the set of direct-layout model sizes, in words.
type modelArray interface {
	[6]uint32 | [8]uint32 | [10]uint32 | [12]uint32 | [16]uint32 |
		[20]uint32 | [24]uint32 | [32]uint32 | [40]uint32 | [48]uint32 | [64]uint32
}

// strides lists the lengths of modelArray's types, ascending.
var strides = [...]int{6, 8, 10, 12, 16, 20, 24, 32, 40, 48, 64}

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
	case 6:
		return new(store[[6]uint32])
	case 8:
		return new(store[[8]uint32])
	case 10:
		return new(store[[10]uint32])
	case 12:
		return new(store[[12]uint32])
	case 16:
		return new(store[[16]uint32])
	case 20:
		return new(store[[20]uint32])
	case 24:
		return new(store[[24]uint32])
	case 32:
		return new(store[[32]uint32])
	case 40:
		return new(store[[40]uint32])
	case 48:
		return new(store[[48]uint32])
	case 64:
		return new(store[[64]uint32])
	}
	panic("fqzcomp: no direct model of this size")
}

// store is a modelStore of models of type M. A pooled decoder keeps one
// store: streams whose alphabets need another model size allocate anew.
type store[M modelArray] struct {
	models []M // one per context; a zero header marks a model not created
	// The input and output of the record being decoded, set by record
	// for its duration (a decoder serves one stream at a time).
	src []byte
	out []byte
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
	return (uint64(float64(1<<50)/float64(tot)) + 2) << 14
}

// quotient returns rng/tot for any 32-bit rng and a multiplier h from
// header(tot): the high word of rng*h is the exact quotient (see header).
func quotient(rng uint32, h uint64) uint32 {
	hi, _ := bits.Mul64(uint64(rng), h)
	return uint32(hi)
}

// record decodes the qualities out of one record, updating the context
// after each value (FQZDecode's quality loop and FQZUpdateContext,
// CRAMcodecs.tex "FQZComp Models").
//
// This loop is where fqzcomp spends its time. The range decoder's symbol
// step (arith.RangeDecoder.Decode) is inlined with the coder's registers in
// local variables; it must stay equivalent to Decode. Its speed is set by
// mispredicted symbol searches and by the chains from one symbol to the
// next (bench/archive/FQZCOMP.md), so the division by the model's total is a
// multiplication by a stored reciprocal, the context's parts that do not
// depend on the symbol are summed apart, and the delta is only counted
// when the parameters use it. A range code outside its model, or input
// needed beyond the end, sets pos past the end, which SetRegisters
// reports.
func (s *store[M]) record(d *decoder, pm *param, out []byte) {
	// Go keeps few values in registers across a loop this size; those
	// used at every symbol are locals, the rest are read through s, d and
	// pm when needed.
	s.src, s.out = d.rc.Src(), out
	ctx := pm.context & (ctxSize - 1)
	// st holds the running delta (bits 8 and up, at most 255) and the
	// previous quality (bits 0-7).
	var qctx, st uint32
	_, pos, rng, code := d.rc.Registers()
	for j := 0; j < len(s.out); j++ {
		// The context is at most maxContext, so inside models.
		m := &s.models[ctx]
		h := uint64((*m)[0]) | uint64((*m)[1])<<32
		if h == 0 {
			h = s.create(d, ctx)
		}
		r := quotient(rng, h)
		if tot := (*m)[2]; tot*r <= code {
			pos = len(s.src) + 1
			code = tot*r - 1
		}
		x := hdr
		f := ((*m)[hdr] >> 8) * r
		for f <= code {
			code -= f
			x++
			f = ((*m)[x] >> 8) * r
		}
		rng = f
		if rng < rangeTop {
			pos, rng, code = s.shift(pos, rng, code)
		}
		e := (*m)[x] + modelStep<<8
		(*m)[x] = e
		tot := (*m)[2] + modelStep
		if tot > maxFreq {
			tot = s.halve(m, d.nsym)
			e = (*m)[x]
		}
		h = header(tot)
		(*m)[0], (*m)[1], (*m)[2] = uint32(h), uint32(h>>32), tot
		if x > hdr {
			if p := (*m)[x-1]; e>>8 > p>>8 {
				(*m)[x-1] = e
				(*m)[x] = p
			}
		}
		q := e & 0xFF
		s.out[j] = pm.qmap[q]

		// Most streams map qualities to themselves; skipping that table
		// takes a load off the path from one symbol to the next.
		qv := q
		if !pm.qtabIdentity {
			qv = pm.qtab[q]
		}
		// The parts that do not depend on q are summed first, so that
		// few operations stand between q and the next model's load.
		rest := pm.ptab[min(1023, uint(len(s.out)-j))] + pm.selCtx
		if pm.useDelta {
			rest += pm.dtab[(st>>8)&255]
			// Count a change of quality, saturating at 255: t|-t has
			// its top bit set when t != 0, and st-255<<8 when the count
			// is below 255.
			t := (st ^ q) & 0xFF
			st = st&^0xFF | q + ((t|-t)>>31)&((st-255<<8)>>31)<<8
		}
		qctx = qctx<<(pm.qshift&31) + qv
		qpart := qctx & pm.qmask
		if pm.qloc != 0 {
			qpart <<= pm.qloc & 31
		}
		ctx = qpart + rest
		if pm.wraps {
			ctx &= ctxSize - 1
		}
	}
	d.rc.SetRegisters(pos, rng, code, false)
	s.src, s.out = nil, nil
}

// create initialises the model of context ctx on its first use, nsym
// symbols of frequency 1 (ModelCreate, CRAMcodecs.tex "Adaptive
// Modelling"), records ctx in d.touched, and returns the model's header.
func (s *store[M]) create(d *decoder, ctx uint32) uint64 {
	m := &s.models[ctx]
	for i := range d.nsym {
		(*m)[hdr+i] = 1<<8 | uint32(i)
	}
	h := header(uint32(d.nsym))
	(*m)[0], (*m)[1], (*m)[2] = uint32(h), uint32(h>>32), uint32(d.nsym)
	d.touched[d.nt] = ctx
	d.nt++
	return h
}

// halve halves every frequency of model m's nsym symbols, keeping each at
// least 1 (ModelRenormalise, CRAMcodecs.tex "Adaptive Modelling"), and
// returns the new total.
func (s *store[M]) halve(m *M, nsym int) uint32 {
	var tot uint32
	for i := hdr; i < hdr+nsym; i++ {
		v := (*m)[i]
		f := v >> 8
		f -= f >> 1
		(*m)[i] = f<<8 | v&0xFF
		tot += f
	}
	return tot
}

// shift shifts input bytes into the range coder while rng is below
// rangeTop (RangeDecode's renormalisation), reading zeros and setting pos
// past the end once the input is exhausted, which SetRegisters reports.
func (s *store[M]) shift(pos int, rng, code uint32) (int, uint32, uint32) {
	for rng < rangeTop {
		var b byte
		if pos < len(s.src) {
			b = s.src[pos]
			pos++
		} else {
			pos = len(s.src) + 1
		}
		rng <<= 8
		code = code<<8 | uint32(b)
	}
	return pos, rng, code
}

// Model constants of the range coder, shared with package arith.
const (
	rangeTop  = arith.RangeTop
	maxFreq   = arith.MaxFreq
	modelStep = arith.ModelStep
)
