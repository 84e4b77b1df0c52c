package cache

import "testing"

// TestDemotedLeaveFirst checks the order in which values leave: those
// demoted before any other, the least recently demoted first; a Get of a
// demoted value makes it an ordinary one again.
func TestDemotedLeaveFirst(t *testing.T) {
	c, err := New[Key](100)
	if err != nil {
		t.Fatal(err)
	}
	k := func(i int) Key { return Key{"f", i} }
	for i := range 5 {
		c.Add(k(i), newBuf(make([]byte, 20)))
	}
	// Least recently used first: 0 1 2 3 4. Demote 3, then 1, then 4.
	for _, i := range []int{3, 1, 4} {
		if !c.Demote(k(i)) {
			t.Fatalf("Demote(%d) found nothing", i)
		}
	}
	if c.Demote(k(9)) {
		t.Fatal("Demote of a key never added found a value")
	}
	if b, ok := c.Get(k(4)); !ok {
		t.Fatal("demoted 4 not found")
	} else {
		b.Release()
	}
	// Now the order of leaving is 3 1 (demoted), then 0 2 4 (by use).
	for n, gone := range []int{3, 1, 0, 2} {
		c.Add(k(10+n), newBuf(make([]byte, 20)))
		if c.Contains(k(gone)) {
			t.Fatalf("adding value %d: %d still cached, want it evicted", n, gone)
		}
		if c.Len() != 5 || c.Bytes() != 100 {
			t.Fatalf("adding value %d: %d values of %d bytes, want 5 of 100", n, c.Len(), c.Bytes())
		}
	}
	if !c.Contains(k(4)) {
		t.Error("4, used since it was demoted, left before older values")
	}
	if st := c.Stats(); st.Evictions != 4 || st.Hits != 1 {
		t.Errorf("stats = %+v, want 4 evictions and 1 hit", st)
	}
}

// TestRemoveDemoted checks that a demoted value can be removed and
// replaced, with the bytes held kept right.
func TestRemoveDemoted(t *testing.T) {
	c, err := New[Key](100)
	if err != nil {
		t.Fatal(err)
	}
	a, b := Key{"f", 0}, Key{"f", 1}
	c.Add(a, newBuf(make([]byte, 30)))
	c.Add(b, newBuf(make([]byte, 30)))
	c.Demote(a)
	c.Demote(b)
	if !c.Remove(a) || c.Contains(a) || c.Bytes() != 30 {
		t.Fatalf("Remove of a demoted value: contains %v, %d bytes", c.Contains(a), c.Bytes())
	}
	c.Add(b, newBuf(make([]byte, 50))) // replaces the demoted b with an ordinary one
	c.Add(a, newBuf(make([]byte, 50)))
	if c.Len() != 2 || c.Bytes() != 100 {
		t.Fatalf("%d values of %d bytes, want 2 of 100", c.Len(), c.Bytes())
	}
	c.Demote(a)
	c.Add(Key{"g", 0}, newBuf(make([]byte, 10)))
	if c.Contains(a) || !c.Contains(b) {
		t.Errorf("demoted a kept (%v) or b evicted (%v)", c.Contains(a), !c.Contains(b))
	}
}
