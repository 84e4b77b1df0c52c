package fqzcomp

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// testParam returns a parameter block of nsym symbols in one of three
// shapes: quality and position contexts only; a shifted quality part,
// a non-identity qtab, delta contexts and a selector; contexts that wrap
// modulo 2^16.
func testParam(nsym, shape int) param {
	pm := param{maxSym: nsym - 1, qmask: 1<<4 - 1, qshift: 2, sloc: 14}
	for i := range pm.qmap {
		pm.qmap[i] = byte(i)
		pm.qtab[i] = uint32(i)
	}
	for i := range pm.ptab {
		pm.ptab[i] = uint32(min(i, 255)/8) << 4
	}
	switch shape {
	case 1:
		pm.qmask, pm.qshift, pm.qloc = 1<<5-1, 3, 3
		for i := range pm.qtab {
			pm.qtab[i] = uint32(i) / 2
		}
		for i := range pm.dtab {
			pm.dtab[i] = uint32(min(i, 7)) << 11
		}
		pm.selCtx = 1 << pm.sloc
	case 2:
		pm.context = 0x1234
		for i := range pm.ptab {
			pm.ptab[i] = uint32(i) << 6
		}
	}
	pm.derive()
	pm.wraps = pm.partSum(1) > ctxSize-1
	return pm
}

// decodeRecords decodes records of recLen values from src with pm and the
// model layout the limit selects, as run does for records that are not
// duplicates, and returns the values, the bytes read and the error.
func decodeRecords(t *testing.T, src []byte, pm param, n, recLen, directLimit int) ([]byte, int, error) {
	t.Helper()
	d := new(decoder)
	d.gp.maxSel, d.gp.maxSym = 1, pm.maxSym
	d.gp.p = []param{pm}
	d.nsym = pm.maxSym + 1
	d.prepareModels(1<<30, directLimit)
	if d.direct != (directLimit > 0) {
		t.Fatalf("%d symbols, direct limit %d: direct layout %v", d.nsym, directLimit, d.direct)
	}
	if err := d.rc.Init(src); err != nil {
		t.Fatal(err)
	}
	d.out = make([]byte, n)
	p := &d.gp.p[0]
	for i := 0; i < n; i += recLen {
		if d.direct {
			d.store.record(d, p, d.out[i:i+recLen])
		} else {
			d.recordIndirect(p, i, i+recLen)
		}
	}
	return d.out, d.rc.Pos(), d.rc.Err()
}

// TestDirectMatchesIndirect decodes the same range-coded bytes with the
// direct layout, for alphabets of every direct model size and each
// parameter shape of testParam, and with the indirect layout, which uses
// arith.RangeDecoder.Decode, and wants the same values. Random bytes are a
// valid range code for almost every model state; the models see enough
// symbols to be reordered and renormalised.
func TestDirectMatchesIndirect(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	src := make([]byte, 1<<17)
	for i := range src {
		src[i] = byte(r.Uint32())
	}
	const n, recLen = 60000, 150
	clean := 0
	// The smallest and the largest alphabet of every model size.
	var alphabets []int
	low := 2
	for _, s := range strides {
		alphabets = append(alphabets, low, s-hdr)
		low = s - hdr + 1
	}
	for _, nsym := range alphabets {
		for shape := range 3 {
			t.Run(fmt.Sprintf("%d symbols shape %d", nsym, shape), func(t *testing.T) {
				for k := 0; k < 4; k++ {
					in := src[k*997:]
					pm := testParam(nsym, shape)
					want, wantPos, wantErr := decodeRecords(t, in, pm, n, recLen, 0)
					got, gotPos, gotErr := decodeRecords(t, in, pm, n, recLen, maxDirectModels)
					if (gotErr == nil) != (wantErr == nil) {
						t.Fatalf("offset %d: direct layout error %v, indirect %v", k*997, gotErr, wantErr)
					}
					if wantErr != nil {
						continue
					}
					clean++
					if !bytes.Equal(got, want) || gotPos != wantPos {
						i := 0
						for got[i] == want[i] {
							i++
						}
						t.Fatalf("offset %d: first difference at value %d; input read %d, want %d", k*997, i, gotPos, wantPos)
					}
				}
			})
		}
	}
	if clean < len(alphabets)*3 {
		t.Fatalf("only %d of %d decodes ran without a range code error", clean, len(alphabets)*3*4)
	}
}

// TestHeaderExact checks, for every total a model can have, the condition
// under which quotient is exact for every 32-bit range (see header):
// c*tot = 2^50 + e with 0 < e < 2^18, and c<<14 fits 64 bits; and
// compares quotient with the division for ranges at the edges.
func TestHeaderExact(t *testing.T) {
	for tot := uint64(2); tot <= maxFreq+modelStep; tot++ {
		h := header(uint32(tot))
		c := h >> 14
		if c<<14 != h {
			t.Fatalf("total %d: multiplier %#x does not fit 64 bits", tot, c)
		}
		if e := c*tot - 1<<50; c*tot <= 1<<50 || e >= 1<<18 {
			t.Fatalf("total %d: c*tot-2^50 = %d, want in (0, 2^18)", tot, int64(c*tot-1<<50))
		}
		for _, rng := range []uint32{1 << 24, 1<<24 + 1, uint32(tot) * 1 << 15, uint32(tot)*(1<<15) - 1, ^uint32(0), -uint32(tot)} {
			if got, want := quotient(rng, h), rng/uint32(tot); got != want {
				t.Fatalf("total %d, range %d: quotient %d, want %d", tot, rng, got, want)
			}
		}
	}
}
