package arith

import (
	"slices"
	"sync"
)

// litDecoder holds the models and state of the order-0/order-1 decoders,
// with or without run lengths (CRAMcodecs.tex: DecodeOrder0, DecodeOrder1,
// DecodeRLE0 and DecodeRLE1). State survives between fill calls so output can
// be produced in growing chunks. litDecoders are recycled through litPool:
// every model a call uses is initialised by that call.
type litDecoder struct {
	rc      RangeDecoder
	order1  bool
	rle     bool
	stride  int      // words per literal model
	nsym    int      // literal alphabet size
	groups  bool     // literal models have room for group sums (see groupSize)
	grouped bool     // the group sums are maintained and used
	probed  int      // bytes decoded before choosing whether to keep groups
	nlit    int      // number of literal models
	lit     []uint32 // literal models: one (order 0) or nsym (order 1); then with RLE runContexts run-length models
	last    byte     // previous literal: order-1 context and run symbol
	pending int      // run copies still to emit
	total   int      // decoded length of the whole stream
	bad     bool     // an inlined loop met a corrupt range code
}

// litPool recycles litDecoders and their model storage (up to 257 KiB for
// an order-1 stream over 256 symbols) between calls.
var litPool = sync.Pool{New: func() any { return new(litDecoder) }}

// appendEntropy decodes n bytes of order-0/1 (optionally RLE) data from
// src, whose first byte is the alphabet size (0 meaning 256), and appends
// them to dst.
func appendEntropy(dst, src []byte, n int, order1, rle bool) ([]byte, error) {
	if n == 0 {
		return dst, nil
	}
	nsym := int(src[0])
	if nsym == 0 {
		nsym = 256
	}
	d := litPool.Get().(*litDecoder)
	defer d.release()
	lit := d.lit
	*d = litDecoder{order1: order1, rle: rle, total: n, nsym: nsym, stride: ModelLen(nsym)}
	if nsym > groupMin {
		d.groups, d.grouped = true, true
		d.stride += (nsym + groupSize - 1) / groupSize
	}
	if err := d.rc.Init(src[1:]); err != nil {
		return dst, err
	}
	nmodels := 1
	if order1 {
		nmodels = nsym
	}
	d.nlit = nmodels
	// The run-length models follow the literal models in the same slice.
	const rst = runSymbols + 1
	words := nmodels * d.stride
	if rle {
		words += runContexts * rst
	}
	d.lit = reuse(lit, words)
	for i := 0; i < nmodels; i++ {
		m := d.lit[i*d.stride : (i+1)*d.stride]
		InitModel(m, nsym)
		if d.groups {
			sumGroups(m, nsym)
		}
	}
	if rle {
		for i := 0; i < runContexts; i++ {
			InitModel(d.lit[nmodels*d.stride+i*rst:], runSymbols)
		}
	}

	// Decode straight into dst's spare capacity when it holds the whole
	// output; otherwise start with a chunk that a generous compression
	// ratio of the input allows, and grow as bytes are produced.
	start, end := len(dst), len(dst)+n
	c := n
	if cap(dst)-start < n {
		c = min(n, max(minChunk, 64*len(src)))
	}
	dst = extend(dst, c)
	d.fill(dst[start:])
	for len(dst) < end {
		if err := d.rc.Err(); err != nil {
			return dst, err
		}
		old := len(dst)
		dst = extend(dst, min(end-old, old-start))
		d.fill(dst[old:])
	}
	if err := d.rc.Err(); err != nil {
		return dst, err
	}
	return dst, nil
}

// Literal models of more than groupMin symbols have room, after their nsym
// entries, for the frequency sum of each run of groupSize entries, so that
// the symbol search can skip whole groups: high-entropy streams (bytes of
// integers, say) would otherwise walk 50 entries per symbol on average.
// Skipping groups costs a second unpredictable loop, a loss when the
// search is short; so groups are used for the first probeLen output bytes
// (fresh models are uniform) and kept only if the models by then predict a
// mean search longer than groupWorth entries. On the benchmark blocks this
// doubles the speed of streams of 32-bit integers' bytes (mean search 53)
// and costs nothing where searches are short.
const (
	groupMin   = 32
	groupShift = 4
	groupSize  = 1 << groupShift
	probeLen   = 4096
	groupWorth = 24
)

// sumGroups sets the group sums of a grouped model m of nsym symbols from
// its entries.
func sumGroups(m []uint32, nsym int) {
	g := m[nsym+1:]
	for i := range g {
		g[i] = 0
	}
	for x := 1; x <= nsym; x++ {
		g[(x-1)>>groupShift] += m[x] >> 8
	}
}

// release drops d's reference to the input and returns d to litPool.
func (d *litDecoder) release() {
	d.rc = RangeDecoder{}
	litPool.Put(d)
}

// reuse returns buf resized to n words, reallocating only when its
// capacity is too small. The contents are left for the caller to set.
func reuse(buf []uint32, n int) []uint32 {
	if cap(buf) < n {
		return make([]uint32, n)
	}
	return buf[:n]
}

// extend returns dst lengthened by k bytes, growing its capacity only when
// needed. The new bytes are for the caller to overwrite.
func extend(dst []byte, k int) []byte {
	return slices.Grow(dst, k)[:len(dst)+k]
}

// fill decodes len(dst) bytes into dst.
func (d *litDecoder) fill(dst []byte) {
	if d.groups && d.probed < probeLen {
		// Fresh models are uniform, so start with the groups; keep them
		// after probeLen bytes only if the models have stayed flat.
		k := min(len(dst), probeLen-d.probed)
		d.fill1(dst[:k])
		dst = dst[k:]
		d.probed += k
		if d.probed == probeLen && d.meanSearch() <= groupWorth {
			d.grouped = false
		}
	}
	if len(dst) > 0 {
		d.fill1(dst)
	}
}

// fill1 decodes len(dst) bytes into dst with the decoder for the stream's
// flags and model layout.
func (d *litDecoder) fill1(dst []byte) {
	switch {
	case d.rle:
		d.fillRLE(dst)
	case d.grouped:
		d.fillGrouped(dst)
	default:
		d.fillPlain(dst)
	}
}

// meanSearch returns the mean number of entries the literal models would
// walk per symbol if symbols came with their current frequencies.
func (d *litDecoder) meanSearch() int {
	var walk, tot uint64
	for o := 0; o < d.nlit*d.stride; o += d.stride {
		m := d.lit[o : o+d.nsym+1]
		for x := 1; x < len(m); x++ {
			walk += uint64(x) * uint64(m[x]>>8)
		}
		tot += uint64(m[0])
	}
	return int(walk / max(tot, 1))
}

// fillRLE decodes len(dst) bytes of run-length coded literals, order 0 or
// 1: a literal, then its run length in parts of at most 3 whose context is
// the literal, then 256, then 257 for every further part (DecodeRLE0 and
// DecodeRLE1). As in fillPlain the symbol step is inlined: once for
// literals, whose models may have group sums (see fillGrouped), and once
// for run parts, whose models are small. A run is decoded in full even when
// dst fills first; copies that do not fit are left pending for the next
// call.
func (d *litDecoder) fillRLE(dst []byte) {
	const rst = runSymbols + 1
	for ; d.pending > 0 && len(dst) > 0; d.pending-- {
		dst[0] = d.last
		dst = dst[1:]
	}
	if len(dst) == 0 {
		return
	}
	pos, rng, code := d.rc.pos, d.rc.rng, d.rc.code
	nsym := uint(d.nsym)
	runBase := uint(d.nlit * d.stride)
	base := uint(0)
	if d.order1 {
		base = uint(d.last) * uint(d.stride)
	}
	for {
		// The literal, with the model at base.
		lit := d.lit
		tot := lit[base]
		r := rng / tot
		if tot*r <= code {
			d.bad = true
			code = tot*r - 1
		}
		x := base + 1
		var g0, g uint // group sums' index and the found group's
		if d.grouped {
			g0 = base + nsym + 1
			g = g0
			f := lit[g] * r
			for f <= code {
				code -= f
				g++
				f = lit[g] * r
			}
			x += (g - g0) << groupShift
		}
		f := (lit[x] >> 8) * r
		for f <= code {
			code -= f
			x++
			f = (lit[x] >> 8) * r
		}
		rng = f
		e := lit[x]
		for rng < rangeTop {
			var b byte
			if src := d.rc.src; pos < len(src) {
				b = src[pos]
				pos++
			} else {
				d.bad = true
			}
			rng <<= 8
			code = code<<8 | uint32(b)
		}
		e += modelStep << 8
		lit[x] = e
		tot += modelStep
		lit[base] = tot
		if d.grouped {
			lit[g] += modelStep
		}
		if tot > maxFreq {
			Model(lit[base : base+nsym+1]).renormalise()
			if d.grouped {
				sumGroups(lit[base:base+uint(d.stride)], int(nsym))
			}
			e = lit[x]
		}
		if x > base+1 {
			if p := lit[x-1]; e>>8 > p>>8 {
				lit[x-1] = e
				lit[x] = p
				// Entry x-1 ends the previous group when x starts one.
				if d.grouped && (x-base-1)&(groupSize-1) == 0 {
					df := e>>8 - p>>8
					gx := g0 + (x-base-1)>>groupShift
					lit[gx] -= df
					lit[gx-1] += df
				}
			}
		}
		s := e & 0xFF
		dst[0] = byte(s)
		dst = dst[1:]
		d.last = byte(s)

		// Its run length, with the run models from runBase.
		run := 0
		rb := runBase + uint(s)*rst
		for {
			tot := lit[rb]
			r := rng / tot
			if tot*r <= code {
				d.bad = true
				code = tot*r - 1
			}
			x := rb + 1
			f := (lit[x] >> 8) * r
			for f <= code {
				code -= f
				x++
				f = (lit[x] >> 8) * r
			}
			rng = f
			e := lit[x]
			for rng < rangeTop {
				var b byte
				if src := d.rc.src; pos < len(src) {
					b = src[pos]
					pos++
				} else {
					d.bad = true
				}
				rng <<= 8
				code = code<<8 | uint32(b)
			}
			e += modelStep << 8
			lit[x] = e
			tot += modelStep
			lit[rb] = tot
			if tot > maxFreq {
				Model(lit[rb : rb+rst]).renormalise()
				e = lit[x]
			}
			if x > rb+1 {
				if p := lit[x-1]; e>>8 > p>>8 {
					lit[x-1] = e
					lit[x] = p
				}
			}
			part := int(e & 0xFF)
			run += part
			if part != runSymbols-1 || run >= d.total {
				break
			}
			rb = runBase + 256*rst
			if run > runSymbols-1 {
				rb = runBase + 257*rst
			}
		}

		k := min(run, len(dst))
		for i := range k {
			dst[i] = byte(s)
		}
		dst = dst[k:]
		if len(dst) == 0 {
			d.pending = run - k
			break
		}
		if d.order1 {
			base = uint(s) * uint(d.stride)
		}
	}
	d.rc.SetRegisters(pos, rng, code, d.bad)
}

// fillPlain decodes len(dst) literals without run lengths, order 0 or 1.
// It is RangeDecoder.Decode inlined, with the coder's registers in local
// variables: the loop is the whole cost of these streams. Values the loop
// needs rarely are read through d, which keeps the registers for the rest.
func (d *litDecoder) fillPlain(dst []byte) {
	pos, rng, code := d.rc.pos, d.rc.rng, d.rc.code
	// Order 0 always uses model 0; order 1 the model of the last symbol.
	base := uint(0)
	if d.order1 {
		base = uint(d.last) * uint(d.stride)
	}
	for len(dst) > 0 {
		lit := d.lit
		tot := lit[base]
		r := rng / tot
		if tot*r <= code {
			d.bad = true
			code = tot*r - 1
		}
		x := base + 1
		f := (lit[x] >> 8) * r
		for f <= code {
			code -= f
			x++
			f = (lit[x] >> 8) * r
		}
		rng = f
		e := lit[x]
		for rng < rangeTop {
			var b byte
			if src := d.rc.src; pos < len(src) {
				b = src[pos]
				pos++
			} else {
				d.bad = true
			}
			rng <<= 8
			code = code<<8 | uint32(b)
		}
		e += modelStep << 8
		lit[x] = e
		tot += modelStep
		lit[base] = tot
		if tot > maxFreq {
			Model(lit[base : base+uint(d.nsym)+1]).renormalise()
			e = lit[x]
		}
		if x > base+1 {
			if p := lit[x-1]; e>>8 > p>>8 {
				lit[x-1] = e
				lit[x] = p
			}
		}
		dst[0] = byte(e)
		dst = dst[1:]
		if d.order1 {
			base = uint(e&0xFF) * uint(d.stride)
		}
	}
	if d.order1 {
		d.last = byte(base / uint(d.stride))
	}
	d.rc.SetRegisters(pos, rng, code, d.bad)
}

// fillGrouped is fillPlain for models with group sums: the search first
// skips whole groups of entries, then walks the entries of one group. The
// decoded symbols and model updates are exactly fillPlain's; the group sums
// follow every change of a frequency.
func (d *litDecoder) fillGrouped(dst []byte) {
	pos, rng, code := d.rc.pos, d.rc.rng, d.rc.code
	nsym := uint(d.nsym)
	base := uint(0)
	if d.order1 {
		base = uint(d.last) * uint(d.stride)
	}
	for len(dst) > 0 {
		lit := d.lit
		tot := lit[base]
		r := rng / tot
		if tot*r <= code {
			d.bad = true
			code = tot*r - 1
		}
		// Both searches end inside the model: code < tot*r, the sum of
		// all groups, and code < the found group's sum times r.
		g0 := base + nsym + 1
		g := g0
		f := lit[g] * r
		for f <= code {
			code -= f
			g++
			f = lit[g] * r
		}
		x := base + 1 + (g-g0)<<groupShift
		f = (lit[x] >> 8) * r
		for f <= code {
			code -= f
			x++
			f = (lit[x] >> 8) * r
		}
		rng = f
		e := lit[x]
		for rng < rangeTop {
			var b byte
			if src := d.rc.src; pos < len(src) {
				b = src[pos]
				pos++
			} else {
				d.bad = true
			}
			rng <<= 8
			code = code<<8 | uint32(b)
		}
		e += modelStep << 8
		lit[x] = e
		lit[g] += modelStep
		tot += modelStep
		lit[base] = tot
		if tot > maxFreq {
			m := lit[base : base+uint(d.stride)]
			Model(m[:nsym+1]).renormalise()
			sumGroups(m, int(nsym))
			e = lit[x]
		}
		if x > base+1 {
			if p := lit[x-1]; e>>8 > p>>8 {
				lit[x-1] = e
				lit[x] = p
				// Entry x-1 ends the previous group when x starts one.
				if (x-base-1)&(groupSize-1) == 0 {
					df := e>>8 - p>>8
					gx := g0 + (x-base-1)>>groupShift
					lit[gx] -= df
					lit[gx-1] += df
				}
			}
		}
		dst[0] = byte(e)
		dst = dst[1:]
		if d.order1 {
			base = uint(e&0xFF) * uint(d.stride)
		}
	}
	if d.order1 {
		d.last = byte(base / uint(d.stride))
	}
	d.rc.SetRegisters(pos, rng, code, d.bad)
}
