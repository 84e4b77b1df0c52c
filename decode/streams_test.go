package decode

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestReadUntil reads stop-terminated values one after another and
// compares them with what was written: values of every length from 0 to
// 20, of bytes that differ from the stop byte in one bit or next to it (a
// word-at-a-time search could mistake them for it), and a block that ends
// without a stop byte.
func TestReadUntil(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, stop := range []byte{0, '\t', 0x80, 0xff} {
		near := []byte{stop - 1, stop + 1, stop ^ 0x80, stop ^ 1, 'A'}
		var data []byte
		var want [][]byte
		for range 2000 {
			v := make([]byte, rng.IntN(21))
			for i := range v {
				v[i] = near[rng.IntN(len(near))]
				if rng.IntN(4) == 0 {
					v[i] = byte(rng.IntN(256))
				}
				if v[i] == stop {
					v[i] = stop + 1
				}
			}
			want = append(want, v)
			data = append(data, v...)
			data = append(data, stop)
		}
		data = append(data, stop+1, stop+2, stop+3) // no stop at the end
		x := &extStream{id: 7, data: data}
		for k, w := range want {
			got, err := x.readUntil(stop)
			if err != nil || !bytes.Equal(got, w) {
				t.Fatalf("stop %#x value %d: got %q, %v; want %q", stop, k, got, err, w)
			}
		}
		if _, err := x.readUntil(stop); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("stop %#x: reading past the last stop byte: %v, want ErrCorrupt", stop, err)
		}
	}
}

// BenchmarkReadUntil reads NUL-terminated values of the lengths of MC:Z
// tags (a mate CIGAR of 4 to 12 bytes) from one block.
func BenchmarkReadUntil(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	var data []byte
	n := 0
	for len(data) < 1<<20 {
		for range 4 + rng.IntN(9) {
			data = append(data, "0123456789MSID"[rng.IntN(14)])
		}
		data = append(data, 0)
		n++
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		x := &extStream{data: data}
		for range n {
			if _, err := x.readUntil(0); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestEmptyReadNeedsNoBlock reads zero values of an EXTERNAL series whose
// block the slice lacks: writers leave out the block of a series no record
// reads (a QS block when every read has no quality bytes), and htslib
// accepts it as long as nothing is read from it. One value more is an error.
func TestEmptyReadNeedsNoBlock(t *testing.T) {
	var s streams
	s.reset()
	s.add(11, []byte("ACGT"))
	s.index()
	e := &Encoding{ID: EncodingExternal, ContentID: 12}
	got, err := e.appendBytes(&s, []byte("x"), 0)
	if err != nil || string(got) != "x" {
		t.Fatalf("appendBytes(0) without block 12: %q, %v; want \"x\", nil", got, err)
	}
	if _, err := e.appendBytes(&s, nil, 1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("appendBytes(1) without block 12: %v, want ErrCorrupt", err)
	}
	// A present block still bounds the read.
	e = &Encoding{ID: EncodingExternal, ContentID: 11}
	if got, err := e.appendBytes(&s, nil, 4); err != nil || string(got) != "ACGT" {
		t.Fatalf("appendBytes(4) of block 11: %q, %v", got, err)
	}
	if _, err := e.appendBytes(&s, nil, 1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("appendBytes past block 11: %v, want ErrCorrupt", err)
	}
}

// TestBindSeriesAllocatesNothing binds the series of a slice that has the
// block of one of them: a slice of one read lacks most series' blocks, and
// binding runs once per slice, so finding that a block is missing must not
// build an error (a slice of one read paid 20% more CPU for it).
func TestBindSeriesAllocatesNothing(t *testing.T) {
	var s streams
	s.reset()
	s.add(11, []byte("ACGT"))
	s.add(1000, []byte("xyz"))
	s.index()
	var ds [numDataSeries]*Encoding
	for i := range ds {
		ds[i] = &Encoding{ID: EncodingExternal, ContentID: int32(12 + i)}
	}
	ds[DSBA] = &Encoding{ID: EncodingExternal, ContentID: 11}
	ds[DSRN] = &Encoding{ID: EncodingByteArrayStop, ContentID: 1000}
	if n := testing.AllocsPerRun(100, func() { s.bindSeries(&ds) }); n != 0 {
		t.Errorf("bindSeries allocates %v times per slice, want 0", n)
	}
	if s.series[DSBA].x == nil || s.series[DSRN].x == nil || s.series[DSFC].x != nil {
		t.Errorf("bound blocks: BA %v, RN %v, FC %v; want BA's and RN's, no FC", s.series[DSBA].x != nil, s.series[DSRN].x != nil, s.series[DSFC].x != nil)
	}
}
