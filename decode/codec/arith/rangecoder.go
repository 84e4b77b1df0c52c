package arith

import "fmt"

// rangeTop is the renormalisation threshold of the range coder: whenever the
// range drops below 2^24 a byte is shifted in (CRAMcodecs.tex, "Range coding",
// RangeDecode).
const rangeTop = 1 << 24

// maxFreq is the largest total frequency an adaptive model may hold before it
// is renormalised, and modelStep the increment applied to a decoded symbol
// (CRAMcodecs.tex, "Adaptive Modelling": total_freq > 2^16-17, F_x + 16).
const (
	maxFreq   = 1<<16 - 17
	modelStep = 16
)

// Exported forms of the model constants, for callers that inline the symbol
// step (see RangeDecoder.Registers).
const (
	// RangeTop is the range below which a byte is shifted in.
	RangeTop = rangeTop
	// MaxFreq is the largest total a model keeps before renormalising.
	MaxFreq = maxFreq
	// ModelStep is the frequency added to a decoded symbol.
	ModelStep = modelStep
)

// MaxModelSymbols is the largest alphabet a Model can hold.
const MaxModelSymbols = 256

// RangeDecoder is the byte-wise range decoder shared by the adaptive
// arithmetic coder and fqzcomp_qual (CRAMcodecs.tex, "Range coding":
// RangeDecodeCreate, RangeGetFreq and RangeDecode).
//
// Errors are sticky so that the per-symbol path stays branch-light: a decoder
// that runs out of input or meets a frequency outside its model records the
// first error, keeps producing (meaningless but bounded) symbols, and reports
// the error through Err. Callers check Err after each batch of symbols.
type RangeDecoder struct {
	src  []byte
	pos  int
	rng  uint32
	code uint32
	err  error
}

// Init starts decoding src (RangeDecodeCreate, CRAMcodecs.tex "Range
// coding"): the range is set to 2^32-1 and the first five bytes are loaded
// into the code value. Fewer than five bytes is an error.
func (rc *RangeDecoder) Init(src []byte) error {
	*rc = RangeDecoder{src: src, rng: 0xFFFFFFFF}
	if len(src) < 5 {
		rc.err = fmt.Errorf("%w: range coder needs 5 initial bytes, have %d", ErrCorrupt, len(src))
		return rc.err
	}
	for i := 0; i < 5; i++ {
		rc.code = rc.code<<8 | uint32(src[i])
	}
	rc.pos = 5
	return nil
}

// Err returns the first error met while decoding, or nil.
func (rc *RangeDecoder) Err() error { return rc.err }

// Pos returns the number of input bytes consumed so far.
func (rc *RangeDecoder) Pos() int { return rc.pos }

// Registers returns the decoder's input, read position, range and code, so
// that a hot loop can keep them in local variables and inline the symbol
// step of Decode (Go does not inline it across packages); SetRegisters
// stores them back. The step must be exactly Decode's: fqzcomp does this.
func (rc *RangeDecoder) Registers() (src []byte, pos int, rng, code uint32) {
	return rc.src, rc.pos, rc.rng, rc.code
}

// Src returns the decoder's input, as Registers does.
func (rc *RangeDecoder) Src() []byte { return rc.src }

// SetRegisters stores the position, range and code of an inlined loop
// (see Registers). bad reports that the loop met a frequency outside its
// model or needed input beyond the end; it is recorded as the decoder's
// error unless an earlier one is.
func (rc *RangeDecoder) SetRegisters(pos int, rng, code uint32, bad bool) {
	if pos < 0 || pos > len(rc.src) {
		pos, bad = len(rc.src), true
	}
	rc.pos, rc.rng, rc.code = pos, rng, code
	if bad && rc.err == nil {
		rc.err = fmt.Errorf("%w: range coder input truncated or inconsistent near offset %d of %d",
			ErrCorrupt, pos, len(rc.src))
	}
}

// Model is an adaptive frequency model over a small alphabet
// (CRAMcodecs.tex, "Adaptive Modelling": ModelCreate, ModelDecode and
// ModelRenormalise). Element 0 holds the total frequency; elements 1..n hold
// one symbol each, packed as frequency<<8 | symbol, kept approximately sorted
// by descending frequency. Every frequency is at least 1 and element 0 is
// their sum. A Model is a view onto caller-owned storage so that many
// contexts can share one allocation.
type Model []uint32

// ModelLen returns the number of uint32 words a Model of nsym symbols needs.
func ModelLen(nsym int) int { return nsym + 1 }

// InitModel initialises buf as a Model of nsym symbols, each with frequency 1
// (ModelCreate, CRAMcodecs.tex "Adaptive Modelling"), and returns it. nsym
// must be in 1..MaxModelSymbols and buf at least ModelLen(nsym) long;
// otherwise InitModel returns nil.
func InitModel(buf []uint32, nsym int) Model {
	if nsym < 1 || nsym > MaxModelSymbols || len(buf) < nsym+1 {
		return nil
	}
	m := Model(buf[:nsym+1])
	m[0] = uint32(nsym)
	for i := 1; i <= nsym; i++ {
		m[i] = 1<<8 | uint32(i-1)
	}
	return m
}

// Decode decodes one symbol with model m and updates the model
// (ModelDecode with RangeGetFreq and RangeDecode, CRAMcodecs.tex "Range
// coding" and "Adaptive Modelling"). m must come from InitModel.
//
// The symbol is found without the specification's second division: with
// r = range/total, the symbol is the first whose cumulative frequency times
// r exceeds the code, and the code is reduced by each skipped symbol's
// share as the search goes. The loops in this package and in fqzcomp inline
// this same step (see Registers).
func (rc *RangeDecoder) Decode(m Model) byte {
	tot := m[0]
	// rng >= 2^24 always holds here and 1 <= tot <= 2^16, so r >= 256.
	r := rc.rng / tot
	code := rc.code
	if tot*r <= code {
		if rc.err == nil {
			rc.err = fmt.Errorf("%w: range coder frequency %d outside model total %d near input offset %d",
				ErrCorrupt, code/r, tot, rc.pos)
		}
		code = tot*r - 1
	}
	// The search ends inside the model because code < tot*r.
	x := 1
	e := m[1]
	f := (e >> 8) * r
	for f <= code {
		code -= f
		x++
		e = m[x]
		f = (e >> 8) * r
	}
	rng := f
	for rng < rangeTop {
		var b byte
		if rc.pos < len(rc.src) {
			b = rc.src[rc.pos]
			rc.pos++
		} else if rc.err == nil {
			rc.err = fmt.Errorf("%w: range coder input truncated at offset %d", ErrCorrupt, rc.pos)
		}
		rng <<= 8
		code = code<<8 | uint32(b)
	}
	rc.rng, rc.code = rng, code
	return m.update(x, e)
}

// update adds modelStep to the frequency of entry x, whose current value is
// e, renormalises when the total exceeds maxFreq, and moves the entry one
// place up when it now outweighs its predecessor (ModelDecode's update,
// CRAMcodecs.tex "Adaptive Modelling"). It returns the decoded symbol.
func (m Model) update(x int, e uint32) byte {
	e += modelStep << 8
	m[x] = e
	tot := m[0] + modelStep
	m[0] = tot
	if tot > maxFreq {
		m.renormalise()
		e = m[x]
	}
	if x > 1 {
		if p := m[x-1]; e>>8 > p>>8 {
			m[x-1] = e
			m[x] = p
		}
	}
	return byte(e)
}

// renormalise halves every frequency, keeping each at least 1
// (ModelRenormalise, CRAMcodecs.tex "Adaptive Modelling").
func (m Model) renormalise() {
	tot := uint32(0)
	for i := 1; i < len(m); i++ {
		e := m[i]
		f := e >> 8
		f -= f >> 1
		m[i] = f<<8 | e&0xFF
		tot += f
	}
	m[0] = tot
}

// Renormalise halves every frequency of m, keeping each at least 1
// (ModelRenormalise, CRAMcodecs.tex "Adaptive Modelling"), for callers that
// inline the symbol step.
func (m Model) Renormalise() { m.renormalise() }
