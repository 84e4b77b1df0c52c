package decode_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/hostile"
)

// containerDigests decodes every container of b, with one Decoder for
// the whole file (reuse) or a new one per container, and returns a
// description of each container's records or error. The reused Decoder
// starts with a base buffer full of 'X', so that a base left unwritten
// differs from fresh memory even in the file's first container.
func containerDigests(b []byte, reuse bool) ([]string, error) {
	f, err := decode.Open("x.cram", bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
	if err != nil {
		return nil, err
	}
	opt := decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true}
	d := f.NewDecoder(opt)
	if reuse {
		decode.PoisonBases(d, 8<<20, 'X')
	}
	out := make([]string, len(f.Containers))
	for i := range f.Containers {
		if !reuse {
			d = f.NewDecoder(opt)
		}
		recs, err := d.Container(i)
		if err != nil {
			out[i] = "error: " + err.Error()
			continue
		}
		var sb bytes.Buffer
		for _, r := range recs {
			fmt.Fprintf(&sb, "%q %d %d %d %d %v %d %d %d %q %q %q\n", r.Name, r.Flags, r.RefID, r.Pos, r.MapQ, r.Cigar, r.MateRefID, r.MatePos, r.TemplateLength, r.Seq, r.Qual, r.Aux)
		}
		out[i] = sb.String()
	}
	return out, nil
}

// corpusVariants returns the corpus CRAM testdata/cram/name and its
// hostile variants (seed 2, perKind of each kind).
func corpusVariants(t *testing.T, name string, perKind int) ([]byte, []hostile.Variant) {
	t.Helper()
	orig, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata/cram", name))
	if err != nil {
		t.Fatal(err)
	}
	vs, err := hostile.Variants(orig, 2, hostile.Options{PerKind: perKind})
	if err != nil {
		t.Fatal(err)
	}
	return orig, vs
}

// TestDamageDoesNotDependOnDecoderReuse decodes damaged copies of a
// fixture (CRCs recomputed, so the damage reaches the record decoder)
// with a reused Decoder and with fresh ones (fakeRef is unbounded, so
// only damage to record data is used, not to slice spans): the records must not
// depend on what an earlier container left in the Decoder's buffers,
// or the BAM would depend on the thread count.
func TestDamageDoesNotDependOnDecoderReuse(t *testing.T) {
	orig, vs := corpusVariants(t, "ce_1000.3.0-multislice.cram", 150)
	// A feature position (FP, external block 28) damaged so that a base
	// of a read is never written: it once showed the previous container's
	// base with a reused Decoder.
	for _, off := range []int{10330, 15207} {
		b, err := hostile.FlipAt(orig, off, 0x01, true)
		if err != nil {
			t.Fatal(err)
		}
		vs = append(vs, hostile.Variant{Name: fmt.Sprintf("FP byte %d ^= 0x01", off), Kind: hostile.FlipFixed, Data: b})
	}
	// A flip in corner_rg's FP block leaves a base of read "nm_only"
	// unwritten (found by decoding every corpus file's variants).
	_, rgs := corpusVariants(t, "corner_rg.st1.23-3.1.cram", 100)
	const rgFlip = "flip+crc: container 1 block 11 (external 28) data byte 1038 ^= 0x80"
	found := false
	for _, v := range rgs {
		if v.Name == rgFlip {
			vs, found = append(vs, v), true
		}
	}
	if !found {
		t.Fatalf("corner_rg has no variant %q", rgFlip)
	}
	n := 0
	for _, v := range vs {
		if v.Kind != hostile.FlipFixed || !strings.Contains(v.Name, "external") && !strings.Contains(v.Name, "core") {
			continue
		}
		a, errA := containerDigests(v.Data, true)
		b, errB := containerDigests(v.Data, false)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("%s: open errors differ: %v / %v", v.Name, errA, errB)
		}
		for i := range a {
			if a[i] != b[i] {
				t.Errorf("%s: container %d decodes differently with a reused Decoder", v.Name, i)
			}
		}
		n++
	}
	if n < 50 {
		t.Fatalf("only %d variants checked", n)
	}
}
