// Package sizehint sizes the buffer a container is encoded into from an
// estimate of its BAM bytes, learning how far estimates fall short.
package sizehint

import (
	"sync/atomic"

	"github.com/cramfs/cramfs/encode/bgzf"
)

// maxHint is the largest buffer a size hint allocates, as the mount's
// builds allocate at most that before a container's records are encoded.
const maxHint = 64 << 20

// Hint sizes the buffer a container is encoded into before its records
// are, so that it is not grown (copied, and its new part cleared) as they
// are: the container's estimate (source.Estimator) scaled by the most bytes per
// estimated byte of the containers done so far, or by a guess before any,
// with 1/16 to spare.
type Hint struct {
	// Constant.
	guess int64 // bytes per estimated byte before any is known, in 1/256ths

	// Mutable, atomic: the largest bytes per estimated byte of the
	// containers done so far, in 1/256ths, 0 before the first (a racy max:
	// it only sizes buffers).
	ratio atomic.Int64
}

// New returns a Hint that guesses guess/256 bytes per
// estimated byte until it has seen a container.
func New(guess int64) *Hint {
	return &Hint{guess: guess}
}

// Size returns the buffer size for a container estimated at est bytes: 0
// without an estimate, else at least a full block and at most maxHint.
func (h *Hint) Size(est int64) int64 {
	if est <= 0 {
		return 0
	}
	r := h.ratio.Load()
	if r == 0 {
		r = h.guess
	}
	n := min(est, 1<<40) * r / 256 // r is at most 1<<16: no overflow
	// Small containers vary the most; a block's worth costs little.
	return min(max(n+n/16, bgzf.MaxBlockSize), maxHint)
}

// Observe records that a container estimated at est bytes took n.
func (h *Hint) Observe(est, n int64) {
	if est <= 0 {
		return
	}
	r := min(n*256/est, 1<<16)
	for {
		old := h.ratio.Load()
		if r <= old || h.ratio.CompareAndSwap(old, r) {
			return
		}
	}
}
