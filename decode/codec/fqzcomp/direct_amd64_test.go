package fqzcomp

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// recordGo is store.record with the portable loop, run, in place of the
// assembly one.
func (s *store[M]) recordGo(d *decoder, pm *param, out []byte) {
	var l loop
	l.src, l.pos, l.rng, l.code = d.rc.Registers()
	l.ctx = pm.context & (ctxSize - 1)
	for j := 0; ; {
		j = s.run(pm, out, j, &l)
		if j == len(out) {
			break
		}
		if m := &s.models[l.ctx]; (*m)[2] == 0 {
			s.create(d, l.ctx)
		} else {
			s.renormalise(m, d.nsym)
		}
	}
	d.rc.SetRegisters(l.pos, l.rng, l.code, false)
}

// TestAsmMatchesGo decodes the same range-coded bytes with the assembly
// loop and with run, for the alphabets and parameter shapes of
// TestDirectMatchesIndirect, and wants the same values, input position
// and error, also past the first error (both clamp the code alike).
func TestAsmMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	src := make([]byte, 1<<17)
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	var alphabets []int
	low := 2
	for _, s := range strides {
		alphabets = append(alphabets, low, s-hdr)
		low = s - hdr + 1
	}
	for _, nsym := range alphabets {
		for shape := range 3 {
			// Short records, records longer than the position table,
			// and records decoded in several calls of decodeAsm.
			for _, recLen := range []int{150, 1500, asmChunk + 1000} {
				n := max(60000, 2*recLen)
				t.Run(fmt.Sprintf("%d symbols shape %d records of %d", nsym, shape, recLen), func(t *testing.T) {
					for k := 0; k < 3; k++ {
						in := src[k*1009:]
						pm := testParam(nsym, shape)
						want, wantPos, wantErr := decodeGo(t, in, pm, n, recLen)
						got, gotPos, gotErr := decodeRecords(t, in, pm, n, recLen, maxDirectModels)
						if (gotErr == nil) != (wantErr == nil) || gotPos != wantPos || !bytes.Equal(got, want) {
							t.Fatalf("offset %d: assembly read %d bytes (error %v), run %d (error %v); values equal: %v",
								k*1009, gotPos, gotErr, wantPos, wantErr, bytes.Equal(got, want))
						}
					}
				})
			}
		}
	}
}

// decodeGo is decodeRecords for the direct layout with run.
func decodeGo(t *testing.T, src []byte, pm param, n, recLen int) ([]byte, int, error) {
	t.Helper()
	d := new(decoder)
	d.gp.maxSel, d.gp.maxSym = 1, pm.maxSym
	d.gp.p = []param{pm}
	d.nsym = pm.maxSym + 1
	d.prepareModels(1<<30, maxDirectModels)
	if err := d.rc.Init(src); err != nil {
		t.Fatal(err)
	}
	s := d.store.(interface {
		recordGo(d *decoder, pm *param, out []byte)
	})
	out := make([]byte, n)
	for i := 0; i < n; i += recLen {
		s.recordGo(d, &d.gp.p[0], out[i:i+recLen])
	}
	return out, d.rc.Pos(), d.rc.Err()
}
