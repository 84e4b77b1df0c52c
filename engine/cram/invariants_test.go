package cram

import "testing"

// checkCRAM checks the INVARIANT lines of c and its current state, under
// c.mu; atRest adds those that hold with no call under way.
func checkCRAM(t testing.TB, c *CRAM, atRest bool) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st != nil && c.st.dropped || c.closed && c.st != nil {
		t.Errorf("CRAM %s: its state is dropped (%v) or it is closed (%v) with a state", c.path, c.st != nil && c.st.dropped, c.closed)
	}
	if st := c.st; st != nil && (st.users < 0 || atRest && st.users != 0) {
		t.Errorf("CRAM %s: state with %d users (at rest %v)", c.path, st.users, atRest)
	}
}

// checkPool checks the INVARIANT line of p, under p.mu.
func checkPool(t testing.TB, p *DecoderPool) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	want := int64(0)
	if p.budget != nil {
		want = min(p.total, p.maxCount)
	}
	if p.counted != want {
		t.Errorf("DecoderPool: %d bytes counted of %d (at most %d, budget set %v), want %d", p.counted, p.total, p.maxCount, p.budget != nil, want)
	}
}
