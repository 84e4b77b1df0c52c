package bam

import (
	"math/rand/v2"
	"testing"
)

// packSeqRef is packSeq one base at a time (SAMv1 §4.2.1, seq).
func packSeqRef(out, seq []byte) {
	for i, c := range seq {
		if i%2 == 0 {
			out[i/2] = nt16[c] << 4
		} else {
			out[i/2] |= nt16[c]
		}
	}
}

// TestPackSeq checks packSeq against one base at a time: every pair of
// byte values, and random sequences of every length up to 40 (so each
// loop and the odd tail run) over all 256 byte values and over bases.
func TestPackSeq(t *testing.T) {
	seq := make([]byte, 0, 2*256*256)
	for a := range 256 {
		for b := range 256 {
			seq = append(seq, byte(a), byte(b))
		}
	}
	got, want := make([]byte, len(seq)/2), make([]byte, len(seq)/2)
	packSeq(got, seq)
	packSeqRef(want, seq)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pair %q: got %#02x, want %#02x", seq[2*i:2*i+2], got[i], want[i])
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 41 {
		for _, alphabet := range []string{"", "ACGTN=acgtnMRWSYKVHDB"} {
			s := make([]byte, n)
			for i := range s {
				if alphabet == "" {
					s[i] = byte(r.IntN(256))
				} else {
					s[i] = alphabet[r.IntN(len(alphabet))]
				}
			}
			got, want := make([]byte, (n+1)/2), make([]byte, (n+1)/2)
			packSeq(got, s)
			packSeqRef(want, s)
			if string(got) != string(want) {
				t.Fatalf("%q: got %x, want %x", s, got, want)
			}
		}
	}
}

func BenchmarkPackSeq(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	seq := make([]byte, 151)
	for i := range seq {
		seq[i] = "ACGT"[r.IntN(4)]
	}
	out := make([]byte, (len(seq)+1)/2)
	b.SetBytes(int64(len(seq)))
	b.ReportAllocs()
	for b.Loop() {
		packSeq(out, seq)
	}
}
