package cache

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
)

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
	val := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
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
	if !ok || len(v) != 100 || v[0] != 5 {
		t.Fatalf("Get h/0 = %d bytes ok=%v", len(v), ok)
	}
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
	c.Add(1, []byte("abc"))
	if c.Add(1, make([]byte, 11)) {
		t.Fatal("oversized value stored")
	}
	if _, ok := c.Get(1); ok {
		t.Fatal("stale value left after rejected replacement")
	}
}

func TestZeroCache(t *testing.T) {
	c, _ := New[int](0)
	if c.Add(1, []byte{1}) {
		t.Fatal("zero cache stored a value")
	}
	if !c.Add(2, nil) || c.Bytes() != 0 {
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
				if v, ok := c.Get(k); ok && len(v) != 64+i%37 {
					t.Errorf("value for %v has length %d", k, len(v))
					return
				}
				c.Add(k, make([]byte, 64+i%37))
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
	v := make([]byte, 1<<10)
	b.SetBytes(int64(len(v)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		k := Key{"f", i % 2048}
		if _, ok := c.Get(k); !ok {
			c.Add(k, v)
		}
	}
}
