package cache

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// newBuf wraps b in a Buf holding one reference, with no pool.
func newBuf(b []byte) *Buf {
	x := &Buf{B: b}
	x.refs.Store(1)
	return x
}

func TestNewRejectsNegative(t *testing.T) {
	if _, err := New[Key](-1); !errors.Is(err, ErrInvalid) {
		t.Fatalf("New(-1) error = %v, want ErrInvalid", err)
	}
}

func TestByteBoundAndEviction(t *testing.T) {
	c, err := New[Key](100)
	if err != nil {
		t.Fatal(err)
	}
	val := func(n int, b byte) *Buf { return newBuf(bytes.Repeat([]byte{b}, n)) }
	steps := []struct {
		key       Key
		n         int
		stored    bool
		wantKeys  []Key // present after the step
		wantGone  []Key // absent after the step
		wantBytes int64
	}{
		{Key{"f", 0}, 40, true, []Key{{"f", 0}}, nil, 40},
		{Key{"f", 1}, 40, true, []Key{{"f", 0}, {"f", 1}}, nil, 80},
		// 0 is touched below before this step, so 1 is the oldest.
		{Key{"g", 0}, 30, true, []Key{{"f", 0}, {"g", 0}}, []Key{{"f", 1}}, 70},
		{Key{"g", 1}, 101, false, []Key{{"f", 0}, {"g", 0}}, []Key{{"g", 1}}, 70},
		{Key{"g", 0}, 60, true, []Key{{"g", 0}, {"f", 0}}, nil, 100},
		{Key{"h", 0}, 100, true, []Key{{"h", 0}}, []Key{{"f", 0}, {"g", 0}}, 100},
		{Key{"h", 1}, 0, true, []Key{{"h", 0}, {"h", 1}}, nil, 100},
	}
	for i, s := range steps {
		if i == 2 {
			if _, ok := c.Get(Key{"f", 0}); !ok {
				t.Fatalf("step %d: f/0 missing before touch", i)
			}
		}
		if got := c.Add(s.key, val(s.n, byte(i))); got != s.stored {
			t.Fatalf("step %d: Add stored=%v, want %v", i, got, s.stored)
		}
		for _, k := range s.wantKeys {
			if !c.Contains(k) {
				t.Errorf("step %d: %v missing", i, k)
			}
		}
		for _, k := range s.wantGone {
			if c.Contains(k) {
				t.Errorf("step %d: %v still present", i, k)
			}
		}
		if got := c.Bytes(); got != s.wantBytes {
			t.Errorf("step %d: Bytes = %d, want %d", i, got, s.wantBytes)
		}
		if c.Bytes() > 100 {
			t.Fatalf("step %d: byte bound exceeded: %d", i, c.Bytes())
		}
	}
	v, ok := c.Get(Key{"h", 0})
	if !ok || len(v.B) != 100 || v.B[0] != 5 {
		t.Fatalf("Get h/0 = %v ok=%v", v, ok)
	}
	v.Release()
	st := c.Stats()
	if st.Rejected != 1 || st.Evictions != 3 || st.Adds != 6 || st.Entries != 2 || st.MaxBytes != 100 {
		t.Errorf("stats = %+v", st)
	}
	if !c.Remove(Key{"h", 0}) || c.Remove(Key{"h", 0}) {
		t.Error("Remove did not report presence correctly")
	}
	if c.Bytes() != 0 || c.Len() != 1 {
		t.Errorf("after Remove: bytes=%d len=%d", c.Bytes(), c.Len())
	}
	if _, ok := c.Get(Key{"zz", 9}); ok {
		t.Error("Get of absent key succeeded")
	}
	if st := c.Stats(); st.Hits != 2 || st.Misses != 1 {
		t.Errorf("hits/misses = %d/%d, want 2/1", st.Hits, st.Misses)
	}
}

func TestRejectedReplacesOld(t *testing.T) {
	c, _ := New[int](10)
	c.Add(1, newBuf([]byte("abc")))
	if c.Add(1, newBuf(make([]byte, 11))) {
		t.Fatal("oversized value stored")
	}
	if _, ok := c.Get(1); ok {
		t.Fatal("stale value left after rejected replacement")
	}
}

func TestZeroCache(t *testing.T) {
	c, _ := New[int](0)
	if c.Add(1, newBuf([]byte{1})) {
		t.Fatal("zero cache stored a value")
	}
	if !c.Add(2, newBuf(nil)) || c.Bytes() != 0 {
		t.Fatal("empty value should fit a zero cache")
	}
}

func TestConcurrent(t *testing.T) {
	c, _ := New[Key](1 << 12)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				k := Key{fmt.Sprint(g % 3), i % 37}
				if v, ok := c.Get(k); ok {
					n := len(v.B)
					v.Release()
					if n != 64+i%37 {
						t.Errorf("value for %v has length %d", k, n)
						return
					}
				}
				c.Add(k, newBuf(make([]byte, 64+i%37)))
				if b := c.Bytes(); b > 1<<12 {
					t.Errorf("byte bound exceeded: %d", b)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkGetAdd(b *testing.B) {
	c, _ := New[Key](1 << 20)
	v := newBuf(make([]byte, 1<<10))
	b.SetBytes(int64(len(v.B)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k := Key{"f", i % 2048}
		if x, ok := c.Get(k); ok {
			x.Release()
		} else {
			c.Add(k, v)
		}
	}
}

// TestBufLifecycle follows one pooled buffer through the cache: the cache
// and each reader hold references, and the storage returns to the pool
// only after the last of them is released, to be handed out again.
func TestBufLifecycle(t *testing.T) {
	c, _ := New[int](100)
	p := c.Pool()
	b := p.Get(60)
	if len(b.B) != 0 || cap(b.B) < 60 {
		t.Fatalf("Get(60): len %d cap %d", len(b.B), cap(b.B))
	}
	b.B = append(b.B, bytes.Repeat([]byte{7}, 60)...)
	storage := &b.B[:1][0]
	if !c.Add(1, b) {
		t.Fatal("not stored")
	}
	b.Release() // the builder's reference; the cache keeps one
	r, ok := c.Get(1)
	if !ok || r != b {
		t.Fatal("Get did not return the stored buffer")
	}
	c.Add(2, p.Get(60)) // evicts 1 while r still reads it
	if n, _ := p.Free(); n != 0 {
		t.Fatal("storage returned to the pool while a reader holds it")
	}
	if r.B[59] != 7 {
		t.Fatal("reader's bytes changed")
	}
	c.Remove(2) // room in the cache's bound for the storage to wait in
	r.Release()
	if n, bytes := p.Free(); n != 1 || bytes < 60 {
		t.Fatalf("pool holds %d buffers (%d bytes) after the last release, want 1", n, bytes)
	}
	again := p.Get(55)
	if &again.B[:1][0] != storage {
		t.Error("a close fit was not reused")
	}
	if p.Reused() != 1 {
		t.Errorf("Reused %d, want 1", p.Reused())
	}
	if far := p.Get(10); cap(far.B) >= 60 {
		t.Error("a much larger buffer was handed out for a small request")
	}
}

func TestPoolBound(t *testing.T) {
	c, _ := New[int](400)
	p := c.Pool() // keeps a quarter of the cache's bound
	bufs := []*Buf{p.Get(40), p.Get(40), p.Get(40), p.Get(300)}
	for _, b := range bufs[:3] {
		b.Release()
	}
	if n, bytes := p.Free(); bytes > 100 || n != 2 {
		t.Fatalf("pool holds %d buffers, %d bytes; want 2 within 100", n, bytes)
	}
	// Larger than the bound: kept alone, so that the next build of that
	// size reuses it rather than allocating.
	big := &bufs[3].B[:1][0]
	bufs[3].Release()
	if n, bytes := p.Free(); n != 1 || bytes < 300 {
		t.Fatalf("pool holds %d buffers, %d bytes; want the 300-byte one alone", n, bytes)
	}
	if again := p.Get(290); &again.B[:1][0] != big {
		t.Fatal("the large buffer was not reused for a request of about its size")
	}
	if n, bytes := p.Free(); n != 0 || bytes != 0 {
		t.Fatalf("pool holds %d buffers, %d bytes after handing out its only one", n, bytes)
	}
	small := p.Get(40)
	small.Release()
	if n, bytes := p.Free(); n != 1 || bytes > 100 {
		t.Fatalf("pool holds %d buffers, %d bytes; want one within 100", n, bytes)
	}
	extra := newBuf(make([]byte, 5))
	extra.Release()
	extra.Release() // one release too many must not hand storage out twice
	if extra.pool != nil {
		t.Fatal("over-released buffer still tied to a pool")
	}
}

func TestReserve(t *testing.T) {
	c, err := New[int](100)
	if err != nil {
		t.Fatal(err)
	}
	c.Add(1, newBuf(make([]byte, 0, 40)))
	c.Add(2, newBuf(make([]byte, 0, 40)))
	// A build of 30 bytes: 40+40+30 > 100, so the oldest value goes.
	c.Reserve(30)
	if c.Contains(1) || !c.Contains(2) {
		t.Fatalf("after Reserve(30): holds 1 %v, 2 %v; want only 2", c.Contains(1), c.Contains(2))
	}
	if st := c.Stats(); st.Reserved != 30 || st.Bytes != 40 || st.Evictions != 1 {
		t.Fatalf("stats %+v", st)
	}
	// While reserved, an Add must leave room for it.
	c.Add(3, newBuf(make([]byte, 0, 40)))
	if c.Contains(2) || !c.Contains(3) {
		t.Fatal("Add did not evict to keep the reservation")
	}
	c.Unreserve(30)
	c.Add(4, newBuf(make([]byte, 0, 30)))
	if !c.Contains(3) || !c.Contains(4) || c.Bytes() != 70 {
		t.Fatalf("after Unreserve: holds 3 %v, 4 %v, %d bytes", c.Contains(3), c.Contains(4), c.Bytes())
	}
	c.Unreserve(1000) // more than reserved: clamps at zero
	if st := c.Stats(); st.Reserved != 0 {
		t.Fatalf("reserved %d after over-release", st.Reserved)
	}
}

// TestAllocWithinBound: storage for a value being built comes from free
// storage that fits it, or, with the cache full, from the least recently
// used value, evicted for it; free storage counts against the bound with
// the values and reservations, and yields to them.
func TestAllocWithinBound(t *testing.T) {
	c, err := New[int](1000)
	if err != nil {
		t.Fatal(err)
	}
	p := c.Pool()
	held := func() int64 {
		st := c.Stats()
		_, free := p.Free()
		return st.Bytes + st.Reserved + free
	}
	var first *byte
	for k := range 4 {
		b := c.Alloc(200) // 212 bytes of storage
		if k == 0 {
			first = &b.B[:1][0]
		}
		b.B = append(b.B, bytes.Repeat([]byte{byte(k)}, 200)...)
		c.Unreserve(int64(cap(b.B)))
		c.Add(k, b)
		b.Release()
	}
	if h := held(); h > 1000 || c.Len() != 4 {
		t.Fatalf("%d values, %d bytes held in all; want 4 within 1000", c.Len(), h)
	}
	// Full: no room for fresh storage beside the four; the oldest value
	// goes and its storage is reused.
	b := c.Alloc(200)
	if &b.B[:1][0] != first || c.Contains(0) {
		t.Fatalf("Alloc on a full cache did not take the storage of the oldest value (still cached: %v)", c.Contains(0))
	}
	if st := c.Stats(); st.Reserved != int64(cap(b.B)) || held() > 1000 {
		t.Fatalf("reserved %d for storage of %d; %d held in all", st.Reserved, cap(b.B), held())
	}
	c.Unreserve(int64(cap(b.B)))
	b.Release() // not stored: its storage is free, within the bound
	if n, free := p.Free(); n != 1 || held() > 1000 {
		t.Fatalf("%d buffers (%d bytes) free, %d held in all", n, free, held())
	}
	// A value filling what is left pushes the free storage out.
	c.Add(9, newBuf(make([]byte, 0, 1000-3*212)))
	if _, free := p.Free(); free != 0 || held() > 1000 {
		t.Fatalf("%d bytes free beside a full cache, %d held in all", free, held())
	}
	// Storage returned while the cache is full is not kept either.
	r := p.Get(100)
	r.Release()
	if n, _ := p.Free(); n != 0 {
		t.Fatal("storage kept beyond the bound")
	}
}

// TestGetAgainCountsNothing: the second look of a caller whose Get missed
// neither hits nor misses, but hands out a reference and marks the value
// recently used as Get does.
func TestGetAgainCountsNothing(t *testing.T) {
	c, err := New[Key](100)
	if err != nil {
		t.Fatal(err)
	}
	a, b := Key{"f", 0}, Key{"f", 1}
	if _, ok := c.GetAgain(a); ok {
		t.Fatal("GetAgain of an empty cache found a value")
	}
	c.Add(a, newBuf(make([]byte, 50)))
	c.Add(b, newBuf(make([]byte, 40)))
	got, ok := c.GetAgain(a)
	if !ok || len(got.B) != 50 {
		t.Fatalf("GetAgain(a) = %v, %v", got, ok)
	}
	got.Release()
	if st := c.Stats(); st.Hits != 0 || st.Misses != 0 {
		t.Errorf("stats after GetAgain: %d hits, %d misses; want none", st.Hits, st.Misses)
	}
	c.Add(Key{"f", 2}, newBuf(make([]byte, 40))) // evicts the least recently used: b
	if !c.Contains(a) || c.Contains(b) {
		t.Errorf("after an eviction: a held %v, b held %v; want a kept (GetAgain used it), b evicted", c.Contains(a), c.Contains(b))
	}
}
