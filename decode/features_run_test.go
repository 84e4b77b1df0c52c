package decode

import (
	"bytes"
	"testing"
)

// TestFastRunsLeaveSharedBlocks: series that share an external block hold
// their values interleaved there, in the order they are read (FC, FP, FC,
// FP for FC and FP in one block), so neither walker's fast run may read
// them as two streams of their own: each leaves such features to the
// general path. The same features in blocks of their own are taken, so
// the walkers below are ones whose fast runs work.
func TestFastRunsLeaveSharedBlocks(t *testing.T) {
	const n = 200
	ref := bytes.Repeat([]byte("ACGT"), n/4)
	for _, c := range []struct {
		name   string
		fc, fp func() *extStream
		want   int
	}{
		// Two substitutions, at read positions 2 and 4.
		{"own blocks", func() *extStream { return &extStream{id: 1, data: []byte{'X', 'X'}} },
			func() *extStream { return &extStream{id: 2, data: []byte{2, 2}} }, 2},
		{"one block", nil, nil, 0},
	} {
		fc, fp := (*extStream)(nil), (*extStream)(nil)
		if c.fc != nil {
			fc, fp = c.fc(), c.fp()
		} else {
			fc = &extStream{id: 1, data: []byte{'X', 2, 'X', 2}}
			fp = fc
		}
		var ds [numDataSeries]*Encoding
		st := &streams{gen: 1}
		lean := leanWalker{st: st, ds: &ds, fx: &featStreams{fc: fc, fp: fp, skipBS: true, skipBA: true},
			view: &refView{marks: true, size: n, limit: n}, n: n, refLen: n, hasRef: true, placed: true, seqPos: 1, cigOp: cigM}
		if k := lean.fastRun(2); k != c.want {
			t.Errorf("%s: lean fastRun took %d features, want %d", c.name, k, c.want)
		}
		fc.pos, fp.pos = 0, 0
		var sm [5][4]byte
		full := featureWalker[*fullSink]{st: st, ds: &ds, sm: &sm,
			fx:   featStreams{fc: fc, fp: fp, bs: &extStream{id: 3, data: []byte{1, 1}}},
			view: &refView{buf: ref, limit: n}, seq: make([]byte, n), n: n, refLen: n, hasRef: true, placed: true, seqPos: 1, cigOp: cigM}
		if k := full.fastRun(2); k != c.want {
			t.Errorf("%s: full fastRun took %d features, want %d", c.name, k, c.want)
		}
	}
}
