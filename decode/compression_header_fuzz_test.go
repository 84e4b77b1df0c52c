package decode

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// compressionHeaders returns the raw compression header of every data
// container of the testdata fixtures.
func compressionHeaders(tb testing.TB) [][]byte {
	paths, _ := filepath.Glob(filepath.Join(corpus.Root(), "testdata", "cram", "*.cram"))
	var out [][]byte
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
				out = append(out, bytes.Clone(raw))
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
	for i, raw := range hs {
		ch, err := parseCompressionHeader(raw, nil, varints{})
		if err != nil {
			t.Fatalf("header %d: %v", i, err)
		}
		if ch.DataSeries[DSBF] == nil || ch.DataSeries[DSRL] == nil {
			t.Errorf("header %d: BF or RL has no encoding", i)
		}
		a.reset()
		if reused, err := parseCompressionHeader(raw, &a, varints{}); err != nil || !reflect.DeepEqual(reused, ch) {
			t.Fatalf("header %d parses otherwise into reused storage (%v)", i, err)
		}
	}
}

// FuzzCompressionHeader parses arbitrary compression headers (CRAMv3
// §8.4): no panic, and what parses has sane tag lines and encodings.
func FuzzCompressionHeader(f *testing.F) {
	for _, raw := range compressionHeaders(f) {
		f.Add(raw)
	}
	var a encodings // reused from input to input, as a Decoder does
	f.Fuzz(func(t *testing.T, b []byte) {
		ch, err := parseCompressionHeader(b, nil, varints{})
		a.reset()
		reused, rerr := parseCompressionHeader(b, &a, varints{})
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
			}
		}
		// Decoding from empty streams must fail cleanly, never panic.
		var st streams
		st.index()
		for _, e := range ch.DataSeries {
			if e != nil {
				e.decodeInt(&st)
				e.decodeByte(&st)
				e.appendArray(&st, nil)
			}
		}
		for _, e := range ch.Tags {
			e.appendArray(&st, nil)
		}
	})
}
