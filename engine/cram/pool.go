package cram

import (
	"sync"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/engine/states"
)

// DecoderPool keeps up to a fixed number of idle decoders, with their
// grown buffers, for reuse by any file. It is safe for concurrent use.
// Unlike a sync.Pool it is not emptied by garbage collection, so a heap
// kept tight by a memory limit does not rebuild the buffers from zero
// after every collection.
//
// A decoder holds about a container's worth of decoded data (65 MiB for
// the 100,000-read containers of CRAM 3.1's archive profile), so the pool
// keeps count of its decoders' memory and, once given a budget (see
// engine.Manager.CountDecoders), counts it against that budget.
type DecoderPool struct {
	// Constant after NewDecoderPool: the idle decoders, synchronised by
	// the channel.
	free chan *pooledDecoder

	// Mutable, guarded by mu.
	//
	// INVARIANT: counted == min(total, maxCount) while budget is set,
	//            else 0
	mu       sync.Mutex
	budget   states.Reserver // set by Count; nil: nothing counted
	maxCount int64           // most of total reserved in budget
	total    int64           // footprint of every decoder made and not dropped
	counted  int64           // the part of total reserved in budget
	onChange func()
}

// pooledDecoder is a decoder with the footprint last counted for it.
type pooledDecoder struct {
	d  *decode.Decoder
	fp int64
	// run shares the blocks of a slice with a lent worker (its scratch
	// kept with the decoder's).
	run splitRunner
}

// dropHelpers forgets the Helpers of the call done with pd.
func (pd *pooledDecoder) dropHelpers() { pd.run.helpers = nil }

// NewDecoderPool returns a pool keeping at most n idle decoders (at least
// one).
func NewDecoderPool(n int) *DecoderPool {
	return &DecoderPool{free: make(chan *pooledDecoder, max(n, 1))}
}

// Footprint returns the bytes held by the decoders the pool made (lent
// or idle), as of their last return, and how many of them are counted
// against the pool's budget.
func (p *DecoderPool) Footprint() (total, counted int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.total, p.counted
}

// OnChange sets f to be called, outside the pool's lock, whenever the
// Footprint changes. Calls may overlap; f should read Footprint itself.
func (p *DecoderPool) OnChange(f func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.onChange = f
}

// Count makes the pool's decoders count against b, up to maxBytes.
func (p *DecoderPool) Count(b states.Reserver, maxBytes int64) {
	p.mu.Lock()
	p.budget, p.maxCount = b, max(maxBytes, 0)
	f := p.settle()
	p.mu.Unlock()
	if f != nil {
		f()
	}
}

// settle brings the reservation in the budget in line with total, under
// p.mu, and returns the change callback to run.
func (p *DecoderPool) settle() func() {
	want := int64(0)
	if p.budget != nil {
		want = min(p.total, p.maxCount)
	}
	switch {
	case want > p.counted:
		p.budget.Reserve(want - p.counted)
	case want < p.counted:
		p.budget.Unreserve(p.counted - want)
	}
	p.counted = want
	return p.onChange
}

// get returns a decoder for f, reused if one is idle.
func (p *DecoderPool) get(f *decode.File, opt decode.DecoderOptions) *pooledDecoder {
	select {
	case d := <-p.free:
		d.d.Reset(f, opt)
		return d
	default:
		return &pooledDecoder{d: f.NewDecoder(opt)}
	}
}

// put keeps d for reuse, or leaves it to the collector when the pool is
// full, and accounts for the memory it now holds.
func (p *DecoderPool) put(d *pooledDecoder) {
	d.d.Reset(nil, decode.DecoderOptions{}) // drop the file and reference
	fp := d.d.Footprint()
	p.mu.Lock()
	// d's count changes before another caller can take it from free.
	old := d.fp
	d.fp = fp
	select {
	case p.free <- d:
	default:
		fp = 0 // dropped: left to the collector
	}
	if fp == old {
		p.mu.Unlock()
		return
	}
	p.total += fp - old
	f := p.settle()
	p.mu.Unlock()
	if f != nil {
		f()
	}
}
