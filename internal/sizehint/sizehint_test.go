package sizehint

import (
	"math"
	"testing"

	"github.com/cramfs/cramfs/encode/bgzf"
)

// TestSizeHintBounded checks that no estimate, however large (a container
// header is untrusted), makes a hint allocate more than maxHint, and
// that a hint learns from the containers done.
func TestSizeHintBounded(t *testing.T) {
	for _, est := range []int64{1 << 30, 1 << 50, math.MaxInt64} {
		h := New(2 * 256)
		if hint := h.Size(est); hint != maxHint {
			t.Errorf("estimate %d: hint %d, want the bound %d", est, hint, maxHint)
		}
		h.Observe(est, math.MaxInt32)
		h.Observe(1, 1<<40)
		if hint := h.Size(est); hint > maxHint || hint <= 0 {
			t.Errorf("estimate %d after outputs far above estimates: hint %d, want 1..%d", est, hint, maxHint)
		}
	}
	h := New(2 * 256)
	h.Observe(1e6, 1.5e6)
	if hint := h.Size(1e6); hint < 1.5e6 || hint > 1.7e6 {
		t.Errorf("after a container of 1.5 MB estimated at 1 MB: hint %d for another such, want 1.5-1.7 MB", hint)
	}
	if hint := New(2 * 256).Size(100); hint != bgzf.MaxBlockSize {
		t.Errorf("estimate of 100 bytes: hint %d, want a block's %d", hint, bgzf.MaxBlockSize)
	}
	if hint := New(2 * 256).Size(0); hint != 0 {
		t.Errorf("no estimate: hint %d, want 0", hint)
	}
}
