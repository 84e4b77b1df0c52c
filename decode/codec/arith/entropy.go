package arith

// litDecoder holds the models and state of the order-0/order-1 decoders,
// with or without run lengths (CRAMcodecs.tex: DecodeOrder0, DecodeOrder1,
// DecodeRLE0 and DecodeRLE1). State survives between fill calls so output can
// be produced in growing chunks.
type litDecoder struct {
	rc      RangeDecoder
	order1  bool
	rle     bool
	stride  int      // words per literal model
	lit     []uint32 // one literal model (order 0) or nsym of them (order 1)
	run     []uint32 // runContexts run-length models
	last    byte     // previous literal: order-1 context and run symbol
	pending int      // run copies still to emit
	total   int      // decoded length of the whole stream
}

// decodeEntropy decodes n bytes of order-0/1 (optionally RLE) data from
// src, whose first byte is the alphabet size (0 meaning 256).
func decodeEntropy(src []byte, n int, order1, rle bool) ([]byte, error) {
	if n == 0 {
		return []byte{}, nil
	}
	nsym := int(src[0])
	if nsym == 0 {
		nsym = 256
	}
	d := &litDecoder{order1: order1, rle: rle, total: n, stride: ModelLen(nsym)}
	if err := d.rc.Init(src[1:]); err != nil {
		return nil, err
	}
	nmodels := 1
	if order1 {
		nmodels = nsym
	}
	d.lit = make([]uint32, nmodels*d.stride)
	for i := 0; i < nmodels; i++ {
		InitModel(d.lit[i*d.stride:], nsym)
	}
	if rle {
		d.run = make([]uint32, runContexts*ModelLen(runSymbols))
		for i := 0; i < runContexts; i++ {
			InitModel(d.run[i*ModelLen(runSymbols):], runSymbols)
		}
	}

	c := n
	if lim := max(minChunk, 64*len(src)); c > lim {
		c = lim
	}
	out := make([]byte, c)
	d.fill(out)
	for len(out) < n {
		if err := d.rc.Err(); err != nil {
			return nil, err
		}
		old := len(out)
		grow := min(n-old, old)
		out = append(out, make([]byte, grow)...)
		d.fill(out[old:])
	}
	if err := d.rc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// fill decodes len(dst) bytes into dst.
func (d *litDecoder) fill(dst []byte) {
	rc := &d.rc
	if !d.rle {
		if !d.order1 {
			m := Model(d.lit[:d.stride])
			for i := range dst {
				dst[i] = rc.Decode(m)
			}
			return
		}
		st := d.stride
		last := d.last
		for i := range dst {
			o := int(last) * st
			last = rc.Decode(Model(d.lit[o : o+st]))
			dst[i] = last
		}
		d.last = last
		return
	}

	const rst = runSymbols + 1
	i := 0
	for ; d.pending > 0 && i < len(dst); i++ {
		dst[i] = d.last
		d.pending--
	}
	st := d.stride
	lit, runm, total := d.lit, d.run, d.total
	last := d.last
	for i < len(dst) {
		o := 0
		if d.order1 {
			o = int(last) * st
		}
		s := rc.Decode(Model(lit[o : o+st]))
		last = s
		dst[i] = s
		i++
		// Run length in parts of at most 3; context is the symbol, then 256,
		// then 257 for every further part.
		o = int(s) * rst
		r := int(rc.Decode(Model(runm[o : o+rst])))
		run := r
		for o = 256 * rst; r == runSymbols-1 && run < total; o = 257 * rst {
			r = int(rc.Decode(Model(runm[o : o+rst])))
			run += r
		}
		for ; run > 0 && i < len(dst); i++ {
			dst[i] = s
			run--
		}
		d.pending = run
	}
	d.last = last
}
