package decode

import (
	"math/rand/v2"
	"testing"
)

// TestMDCountIsMDText drives the MD/NM rules with their writer (the full
// decode's, on the reference's bases) and their counter (the lean pass's,
// on a marks view of where its Ns lie) through the same random features:
// the counter's tag length is always the length of what the writer
// appends, and both fail alike.
func TestMDCountIsMDText(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 7))
	ref := make([]byte, 6000)
	for i := range ref {
		ref[i] = "ACGT"[rng.IntN(4)]
		if rng.IntN(50) == 0 {
			for j := i; j < min(i+1+rng.IntN(4), len(ref)); j++ {
				ref[j] = 'N'
			}
		}
	}
	var runs [][2]int64
	for i, b := range ref {
		switch {
		case b != 'N':
		case len(runs) > 0 && runs[len(runs)-1][1] == int64(i):
			runs[len(runs)-1][1]++
		default:
			runs = append(runs, [2]int64{int64(i), int64(i) + 1})
		}
	}
	for trial := range 3000 {
		md, nm := trial%4 != 0, trial%3 != 0
		refLen := int64(len(ref)) - rng.Int64N(3000)
		v := refView{buf: ref, limit: int64(len(ref))}
		marks := refView{marks: true, size: int64(len(ref)), runs: runs, limit: int64(len(ref))}
		text := mdText{mdAt: -1, nmAt: -1}
		w := mdRules{out: &text, md: md, nm: nm}
		c := mdRules{md: md, nm: nm}
		text.start(md)
		pos := rng.Int64N(3000)
		for range rng.IntN(20) {
			op, k := rng.IntN(7), 1+rng.Int64N(int64(1+rng.IntN(3)*700))
			if pos+k > int64(len(ref)) {
				break
			}
			errW := mdStep(&w, &v, op, pos, k, refLen)
			errC := mdStep(&c, &marks, op, pos, k, refLen)
			if (errW == nil) != (errC == nil) {
				t.Fatalf("trial %d: op %d at %d: writer %v, counter %v", trial, op, pos, errW, errC)
			}
			if errW != nil {
				break
			}
			pos += k
		}
		if got, want := c.tagLen(), len(text.finish(&w)); got != want {
			t.Fatalf("trial %d: counted %d bytes, wrote %d: %q", trial, got, want, text.aux)
		}
	}
}

// mdStep applies one feature's MD/NM rule, as featureWalker does, to m.
func mdStep(m *mdRules, v *refView, op int, pos, k, refLen int64) error {
	switch op {
	case 0:
		if pos+k > refLen {
			m.pastReference(k)
		} else {
			if b := mdTestBases(v, pos, k); !v.hasN(pos, pos+k) {
				m.dist += k
			} else {
				m.matchNs(v, pos, k, b)
			}
		}
	case 1:
		if pos >= refLen {
			m.offReference()
		} else {
			c, _ := v.at(pos)
			m.mismatch(c)
		}
		m.edits++
	case 2:
		return m.deletion(v, pos, k, refLen)
	case 3:
		return m.bases(v, pos, k, refLen, true)
	case 4:
		return m.base(v, pos, refLen, true)
	case 5:
		m.edits += k // an insertion
	case 6:
		return m.bases(v, pos, k, refLen, false)
	}
	return nil
}

// mdTestBases returns the k bases at pos of v, as a match has them.
func mdTestBases(v *refView, pos, k int64) []byte {
	b, _ := v.slice(pos, pos+k)
	return b
}
