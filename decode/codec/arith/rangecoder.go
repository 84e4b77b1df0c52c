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

// Model is an adaptive frequency model over a small alphabet
// (CRAMcodecs.tex, "Adaptive Modelling": ModelCreate, ModelDecode and
// ModelRenormalise). Element 0 holds the total frequency; elements 1..n hold
// one symbol each, packed as frequency<<8 | symbol, kept approximately sorted
// by descending frequency. A Model is a view onto caller-owned storage so that
// many contexts can share one allocation.
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

// NewModel allocates and initialises a Model of nsym symbols (see InitModel).
func NewModel(nsym int) Model {
	return InitModel(make([]uint32, ModelLen(nsym)), nsym)
}

// Decode decodes one symbol with model m and updates the model
// (ModelDecode with RangeGetFreq and RangeDecode, CRAMcodecs.tex "Range
// coding" and "Adaptive Modelling"). m must come from InitModel/NewModel.
func (rc *RangeDecoder) Decode(m Model) byte {
	tot := m[0]
	// rng >= 2^24 always holds here and tot <= 2^16, so r >= 256.
	r := rc.rng / tot
	freq := rc.code / r
	if freq >= tot {
		if rc.err == nil {
			rc.err = fmt.Errorf("%w: range coder frequency %d outside model total %d near input offset %d",
				ErrCorrupt, freq, tot, rc.pos)
		}
		freq = tot - 1
	}
	// Linear search over the (approximately sorted) cumulative frequencies;
	// it ends inside the model because freq < tot.
	x := 1
	acc := uint32(0)
	e := m[x]
	for acc+e>>8 <= freq {
		acc += e >> 8
		x++
		e = m[x]
	}
	rc.code -= acc * r
	rc.rng = (e >> 8) * r
	for rc.rng < rangeTop {
		var b byte
		if rc.pos < len(rc.src) {
			b = rc.src[rc.pos]
			rc.pos++
		} else if rc.err == nil {
			rc.err = fmt.Errorf("%w: range coder input truncated at offset %d", ErrCorrupt, rc.pos)
		}
		rc.rng <<= 8
		rc.code = rc.code<<8 | uint32(b)
	}

	e += modelStep << 8
	m[x] = e
	tot += modelStep
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
