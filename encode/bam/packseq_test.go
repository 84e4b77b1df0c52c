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

// TestPackSeq checks packSeq and its scalar path against one base at a time: every pair of
// byte values, and random sequences of every length up to 100 (so each
// loop, the vector path's several steps and the odd tail run) over all
// 256 byte values and over bases.
func TestPackSeq(t *testing.T) {
	seq := make([]byte, 0, 2*256*256)
	for a := range 256 {
		for b := range 256 {
			seq = append(seq, byte(a), byte(b))
		}
	}
	for _, pack := range []struct {
		name string
		f    func(out, seq []byte)
	}{{"packSeq", packSeq}, {"packSeqScalar", packSeqScalar}} {
		testPackSeq(t, pack.name, pack.f, seq)
	}
}

func testPackSeq(t *testing.T, name string, packSeq func(out, seq []byte), seq []byte) {
	got, want := make([]byte, len(seq)/2), make([]byte, len(seq)/2)
	packSeq(got, seq)
	packSeqRef(want, seq)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s: pair %q: got %#02x, want %#02x", name, seq[2*i:2*i+2], got[i], want[i])
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for n := range 101 {
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
				t.Fatalf("%s: %q: got %x, want %x", name, s, got, want)
			}
		}
	}
}

// TestPackSeqVector checks the vector path alone: it packs the even part
// of 32 bases or more where the CPU has one (nothing elsewhere) and agrees
// with one base at a time over random bytes, the output's last byte of an
// odd length left untouched.
func TestPackSeqVector(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 31, 32, 33, 34, 46, 62, 63, 64, 65, 66, 94, 96, 98, 150, 151, 1000, 1001} {
		s := make([]byte, n)
		for i := range s {
			s[i] = byte(r.IntN(256))
		}
		got, want := make([]byte, (n+1)/2), make([]byte, (n+1)/2)
		for i := range got {
			got[i] = 0xaa
		}
		m := packSeqVector(got, s)
		if m != 0 && (n < 32 || m != n&^1) {
			t.Fatalf("%d bases: vector path packed %d", n, m)
		}
		packSeqRef(want, s[:m])
		if string(got[:m/2]) != string(want[:m/2]) {
			t.Fatalf("%d bases: got %x, want %x", n, got[:m/2], want[:m/2])
		}
		for i := m / 2; i < len(got); i++ {
			if got[i] != 0xaa {
				t.Fatalf("%d bases: byte %d written past the %d packed", n, i, m/2)
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
