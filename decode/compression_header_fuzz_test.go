package decode

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// rawHeader is a compression header's bytes and how its file's version
// writes integers.
type rawHeader struct {
	raw []byte
	r   varints
}

// compressionHeaders returns the raw compression header of every data
// container of the testdata fixtures.
func compressionHeaders(tb testing.TB) []rawHeader {
	paths, _ := filepath.Glob(filepath.Join(corpus.Root(), "testdata", "cram", "*.cram"))
	var out []rawHeader
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		f, err := Open(p, bytes.NewReader(b), int64(len(b)), OpenOptions{})
		if err != nil {
			continue // the corrupt fixture
		}
		for i := range f.Containers {
			data, err := f.readContainerData(&f.Containers[i], nil)
			if err != nil {
				continue
			}
			pos := 0
			blk, err := parseBlock(data, &pos, f.Def.Major)
			if err != nil {
				continue
			}
			raw, err := blk.Decompress(&defaultCodecs, nil)
			if err == nil {
				out = append(out, rawHeader{bytes.Clone(raw), varintsFor(f.Def.Major)})
			}
		}
	}
	return out
}

func TestCompressionHeadersOfFixturesParse(t *testing.T) {
	hs := compressionHeaders(t)
	if len(hs) < 50 {
		t.Fatalf("only %d compression headers found in the fixtures", len(hs))
	}
	var a encodings // reused from header to header, as a Decoder does
	v4 := 0
	for i, h := range hs {
		raw := h.raw
		if h.r.v4 {
			v4++
		}
		ch, err := parseCompressionHeader(raw, nil, h.r)
		if err != nil {
			t.Fatalf("header %d: %v", i, err)
		}
		if ch.DataSeries[DSBF] == nil || ch.DataSeries[DSRL] == nil {
			t.Errorf("header %d: BF or RL has no encoding", i)
		}
		a.reset()
		if reused, err := parseCompressionHeader(raw, &a, h.r); err != nil || !reflect.DeepEqual(reused, ch) {
			t.Fatalf("header %d parses otherwise into reused storage (%v)", i, err)
		}
	}
	if v4 < 50 {
		t.Errorf("only %d CRAM 4.0 compression headers found in the fixtures", v4)
	}
}

// FuzzCompressionHeader parses arbitrary compression headers (CRAMv3
// §8.4) as CRAM 2 and 3 write them: no panic, and what parses has sane
// tag lines and encodings.
func FuzzCompressionHeader(f *testing.F) {
	for _, h := range compressionHeaders(f) {
		if !h.r.v4 {
			f.Add(h.raw)
		}
	}
	var a encodings // reused from input to input, as a Decoder does
	f.Fuzz(func(t *testing.T, b []byte) { checkCompressionHeader(t, b, varints{}, &a) })
}

// FuzzCompressionHeader4 is FuzzCompressionHeader for CRAM 4.0's
// headers (uint7 integers, VARINT and CONST encodings, placeholders).
func FuzzCompressionHeader4(f *testing.F) {
	for _, h := range compressionHeaders(f) {
		if h.r.v4 {
			f.Add(h.raw)
		}
	}
	var a encodings
	f.Fuzz(func(t *testing.T, b []byte) { checkCompressionHeader(t, b, varints{v4: true}, &a) })
}

// checkCompressionHeader is the check of both fuzz targets.
func checkCompressionHeader(t *testing.T, b []byte, r varints, a *encodings) {
	ch, err := parseCompressionHeader(b, nil, r)
	a.reset()
	reused, rerr := parseCompressionHeader(b, a, r)
	if (err == nil) != (rerr == nil) || !reflect.DeepEqual(reused, ch) {
		t.Fatalf("parsed into reused storage: %v, %v; allocated: %v", reused, rerr, err)
	}
	if err != nil {
		if ch != nil {
			t.Fatalf("error %v with a header", err)
		}
		return
	}
	if len(ch.tagPlans) != len(ch.TagLines) {
		t.Fatalf("%d tag plans for %d tag lines", len(ch.tagPlans), len(ch.TagLines))
	}
	for i, line := range ch.TagLines {
		if len(line) > len(b) {
			t.Fatalf("tag line of %d bytes from %d input bytes", len(line), len(b))
		}
		plan := ch.tagPlans[i]
		if len(plan.ops) != len(line)/3 {
			t.Fatalf("tag line %q: %d planned tags", line, len(plan.ops))
		}
		for j, op := range plan.ops {
			if string(op.key[:]) != string(line[3*j:3*j+3]) {
				t.Fatalf("tag line %q: tag %d planned as %q", line, j, op.key[:])
			}
			if op.kind == tagConst && (op.n < 0 || op.val == nil || op.val.ID != EncodingExternal) {
				t.Fatalf("tag %q: constant length %d from %+v", op.key[:], op.n, op.val)
			}
			if op.kind == tagStop && (op.enc == nil || op.enc.ID != EncodingByteArrayStop) {
				t.Fatalf("tag %q planned as a stop-byte array", op.key[:])
			}
			if op.kind >= tagMDSlot && (!r.v4 || op.key[2] != '*') {
				t.Fatalf("tag %q planned as a placeholder (CRAM 4: %v)", op.key[:], r.v4)
			}
		}
	}
	// Decoding from empty streams must fail cleanly, never panic.
	var st streams
	st.index()
	for _, e := range ch.DataSeries {
		if e != nil {
			e.decodeInt(&st)
			e.decodeLong(&st)
			e.decodeByte(&st)
			e.appendArray(&st, nil)
		}
	}
	for _, e := range ch.Tags {
		e.appendArray(&st, nil)
	}
}
