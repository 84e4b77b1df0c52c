package decode

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestRefViewHasN checks hasN against a plain scan for runs of queries in
// order, going back, and across a reload of the window.
func TestRefViewHasN(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	contig := make([]byte, 5000)
	for i := range contig {
		contig[i] = "ACGT"[rng.IntN(4)]
	}
	for _, p := range []int{0, 17, 18, 400, 2047, 2048, 4999} {
		contig[p] = 'N'
	}
	copy(contig[3000:3100], bytes.Repeat([]byte{'N'}, 100))
	views := map[string]*refView{
		"fixed":   {buf: contig, limit: int64(len(contig))},
		"windows": {src: memRef{contig}, limit: int64(len(contig))},
	}
	for name, v := range views {
		for q := 0; q < 20000; q++ {
			from := int64(rng.IntN(len(contig)))
			if q%3 != 0 { // mostly sorted, as records come
				from = min(int64(q)*5000/20000+int64(rng.IntN(40)), int64(len(contig)))
			}
			to := min(from+int64(rng.IntN(160)), int64(len(contig)))
			b, err := v.slice(from, to)
			if err != nil {
				t.Fatalf("%s: slice(%d, %d): %v", name, from, to, err)
			}
			want := bytes.IndexByte(contig[from:to], 'N') >= 0
			if !bytes.Equal(b, contig[from:to]) {
				t.Fatalf("%s: slice(%d, %d) returned other bases", name, from, to)
			}
			if got := v.hasN(from, to); got != want {
				t.Fatalf("%s: query %d: hasN(%d, %d) = %v, want %v", name, q, from, to, got, want)
			}
		}
	}
}

// memRef is a ReferenceSource of one contig held in memory.
type memRef struct{ bases []byte }

func (r memRef) Bases(dst []byte, _ int, start, end int64) ([]byte, error) {
	return append(dst, r.bases[start:end]...), nil
}
func (r memRef) Length(int) int64 { return int64(len(r.bases)) }

// countingMemRef is memRef counting its loads and the bases they return.
type countingMemRef struct {
	memRef
	loads, bases int64
}

func (r *countingMemRef) Bases(dst []byte, id int, start, end int64) ([]byte, error) {
	r.loads++
	r.bases += end - start
	return r.memRef.Bases(dst, id, start, end)
}

// TestRefViewWindowGrowsOverSpacedReads reads a window view as long reads
// at a depth below one do (10 kb reads starting every 15 kb, in 10-base
// steps between features): the window must grow past a read's length
// rather than start afresh at each read, and still load about the bases
// the reads span.
func TestRefViewWindowGrowsOverSpacedReads(t *testing.T) {
	const readLen, every, reads = 10000, 15000, 200
	contig := bytes.Repeat([]byte("ACGT"), every*reads/4)
	src := &countingMemRef{memRef: memRef{contig}}
	v := &refView{src: src, limit: int64(len(contig))}
	for i := range int64(reads) {
		for pos := i * every; pos < i*every+readLen; pos += 10 {
			b, err := v.slice(pos, pos+10)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, contig[pos:pos+10]) {
				t.Fatalf("slice(%d, %d) returned other bases", pos, pos+10)
			}
		}
	}
	if src.loads > reads/4 {
		t.Errorf("%d loads for %d reads, want at most %d", src.loads, reads, reads/4)
	}
	if span := int64(every * reads); src.bases > span+maxWindow {
		t.Errorf("loaded %d bases for reads spanning %d", src.bases, span)
	}
}

// TestRefViewHeld checks held, slice's inlined case, against the bases a
// view holds: every range around a window's bounds, empty and reversed
// ones included; a marks view covers the same ranges but holds no bases.
func TestRefViewHeld(t *testing.T) {
	contig := bytes.Repeat([]byte("ACGTN"), 40)
	v := &refView{buf: contig[50:120], start: 50, limit: int64(len(contig))}
	for from := int64(30); from < 140; from++ {
		for to := from - 3; to < 140; to++ {
			b, ok := v.held(from, to)
			want := from >= 50 && to <= 120 && from <= to
			if ok != want {
				t.Fatalf("held(%d, %d) ok = %v, want %v", from, to, ok, want)
			}
			if ok && !bytes.Equal(b, contig[from:to]) {
				t.Fatalf("held(%d, %d) = %q, want %q", from, to, b, contig[from:to])
			}
		}
	}
	m := &refView{marks: true, start: 50, size: 70, limit: int64(len(contig))}
	for from := int64(30); from < 140; from++ {
		for to := from - 3; to < 140; to++ {
			b, ok := m.held(from, to)
			if want := from >= 50 && to <= 120 && from <= to; ok != want || b != nil {
				t.Fatalf("marks view: held(%d, %d) = %q, %v, want no bases, %v", from, to, b, ok, want)
			}
		}
	}
}
