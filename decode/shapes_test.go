package decode_test

import (
	"bytes"
	"errors"
	"fmt"
	"hash"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/decode/codec/tok3"
	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/hostile"
)

// shapeKey is what a Shape tells of a record, comparable: the unmapped
// flag stands for the flags (a Shape's mate bits may be missing), and the
// CIGAR's counts for the CIGAR (the lean pass counts it, a Record has it).
type shapeKey struct {
	unmapped             bool
	refID                int32
	pos                  int64
	nameLen, seqLen, aux int
	ops                  int
	cigRef, cigQuery     int64
}

func keyOf(s *decode.Shape) shapeKey {
	return shapeKey{s.Flags&4 != 0, s.RefID, s.Pos, s.NameLen, s.SeqLen, s.AuxLen, s.Ops, s.RefLen, s.QueryLen}
}

// cigarCounts is what a Shape keeps of a CIGAR: its operations and the
// bases they cover on the reference and in the read.
func cigarCounts(cigar []uint32) (ops int, ref, query int64) {
	for _, c := range cigar {
		switch n := int64(c >> 4); c & 0xf {
		case 0, 7, 8: // M, =, X
			ref += n
			query += n
		case 2, 3: // D, N
			ref += n
		case 1, 4: // I, S
			query += n
		}
	}
	return len(cigar), ref, query
}

// fullShapes decodes container i in full and returns its records' shapes.
func fullShapes(d *decode.Decoder, i int) ([]shapeKey, error) {
	recs, err := d.Container(i)
	if err != nil {
		return nil, err
	}
	out := make([]shapeKey, len(recs))
	for j := range recs {
		r := &recs[j]
		s := decode.Shape{Flags: r.Flags, RefID: r.RefID, Pos: r.Pos, NameLen: len(r.Name), SeqLen: len(r.Seq), AuxLen: len(r.Aux)}
		s.Ops, s.RefLen, s.QueryLen = cigarCounts(r.Cigar)
		out[j] = keyOf(&s)
	}
	return out, nil
}

// leanShapes measures container i with the lean pass.
func leanShapes(d *decode.Decoder, i int) ([]shapeKey, error) {
	var out []shapeKey
	err := d.ContainerShapes(i, func(j int, s *decode.Shape) error {
		if j != len(out) {
			return fmt.Errorf("record %d reported as %d", len(out), j)
		}
		out = append(out, keyOf(s))
		return nil
	})
	return out, err
}

// compareShapes opens b and, for every container the full decode
// decodes, checks that the lean pass gives the same shapes; it never
// panics on damaged input. It returns the containers compared.
func compareShapes(t *testing.T, b []byte, opt decode.DecoderOptions) int {
	t.Helper()
	f, err := decode.Open("x.cram", bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
	if err != nil {
		return 0
	}
	full, lean := f.NewDecoder(opt), f.NewDecoder(opt)
	n := 0
	for i := range f.Containers {
		want, ferr := fullShapes(full, i)
		got, lerr := leanShapes(lean, i)
		if ferr != nil {
			continue // the lean pass may or may not see the damage
		}
		if lerr != nil {
			t.Fatalf("container %d: the full decode succeeds, the lean pass fails: %v", i, lerr)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("container %d: lean shapes differ from the full decode's: %s", i, diffShapes(got, want))
		}
		n++
	}
	return n
}

func diffShapes(a, b []shapeKey) string {
	for j := range min(len(a), len(b)) {
		if a[j] != b[j] {
			return fmt.Sprintf("record %d: lean %+v, full %+v", j, a[j], b[j])
		}
	}
	return fmt.Sprintf("lean has %d records, full %d", len(a), len(b))
}

// shapeFixtures are the fixtures the damage test and the fuzz target
// start from: one slice and several, 3.0 and 3.1 codecs, unmapped reads.
var shapeFixtures = []string{"ce_1000.3.0-multislice.cram", "ce_1000.3.1-archive.cram", "ce_unmap2.3.0.cram", "ce_1000.3.0-lossynames.cram", "xx_tlen.3.0-lossynames.cram"}

// TestContainerShapesUnderDamage damages fixtures (bits flipped in every
// block with CRCs recomputed, lies in headers; internal/hostile): the lean
// pass never panics and, wherever the full decode succeeds, gives the same
// shapes. Decoders are reused from container to container, as in the
// engine.
func TestContainerShapesUnderDamage(t *testing.T) {
	opt := decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true}
	n := 0
	for _, name := range shapeFixtures {
		orig, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata", "cram", name))
		if err != nil {
			t.Fatal(err)
		}
		n += compareShapes(t, orig, opt)
		vs, err := hostile.Variants(orig, 3, hostile.Options{PerKind: 60})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			t.Run(name+"/"+v.Name, func(t *testing.T) { n += compareShapes(t, v.Data, opt) })
		}
	}
	if n < 100 {
		t.Fatalf("only %d containers compared", n)
	}
}

// FuzzContainerShapes flips bits of a fixture (CRCs recomputed, so the
// damage reaches the record decoders) and checks compareShapes.
func FuzzContainerShapes(f *testing.F) {
	var origs [][]byte
	for _, name := range shapeFixtures {
		b, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata", "cram", name))
		if err != nil {
			f.Fatal(err)
		}
		origs = append(origs, b)
	}
	for i := range origs {
		f.Add(uint8(i), uint32(0), uint8(0))
		f.Add(uint8(i), uint32(len(origs[i])/2), uint8(0x10))
	}
	opt := decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true}
	f.Fuzz(func(t *testing.T, which uint8, off uint32, mask byte) {
		orig := origs[int(which)%len(origs)]
		b, err := hostile.FlipAt(orig, int(off%uint32(len(orig))), mask, true)
		if err != nil {
			return
		}
		compareShapes(t, b, opt)
	})
}

// TestContainerShapesSkipsQualities decodes a 3.1 archive fixture, whose
// qualities are fqzcomp-compressed, with a Decoder that cannot decode
// fqzcomp: the full decode fails, the lean pass never decompresses the
// quality block and gives the shapes of a Decoder that can.
func TestContainerShapesSkipsQualities(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata", "cram", "ce_1000.3.1-archive.cram"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := decode.Open("x.cram", bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	noFQZ := decode.DefaultCodecs()
	errNoFQZ := errors.New("no fqzcomp here")
	noFQZ.FQZComp = func(dst, src []byte, rawSize int) ([]byte, error) { return dst, errNoFQZ }
	opt := decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true}
	good := f.NewDecoder(opt)
	opt.Codecs = &noFQZ
	bad := f.NewDecoder(opt)
	for i := range f.Containers {
		if _, err := bad.Container(i); !errors.Is(err, errNoFQZ) {
			t.Fatalf("container %d: the full decode without fqzcomp gives %v", i, err)
		}
		want, err := leanShapes(good, i)
		if err != nil {
			t.Fatal(err)
		}
		got, err := leanShapes(bad, i)
		if err != nil {
			t.Fatalf("container %d: lean pass without fqzcomp: %v", i, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("container %d: %s", i, diffShapes(got, want))
		}
	}
}

// BenchmarkContainerShapes is BenchmarkDecode for the lean pass: every
// container of testdata files measured; bytes are the CRAM file's size.
func BenchmarkContainerShapes(b *testing.B) {
	root := filepath.Join(corpus.Root(), "testdata")
	for _, name := range []string{"ce_1000.3.0", "ce_1000.3.1-normal", "ce_1000.3.1-archive", "ce_1000.scramble-3.0-s1S50"} {
		b.Run(name, func(b *testing.B) {
			p := filepath.Join(root, "cram", name+".cram")
			data, err := os.ReadFile(p)
			if err != nil {
				b.Fatal(err)
			}
			store, err := reference.Open([]string{filepath.Join(root, "ref/ce.fa")}, reference.Options{NoEnv: true})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			f, err := decode.Open(p, bytes.NewReader(data), int64(len(data)), decode.OpenOptions{})
			if err != nil {
				b.Fatal(err)
			}
			d := f.NewDecoder(decode.DecoderOptions{Reference: newStoreRef(b, store, f.Refs)})
			count := func(int, *decode.Shape) error { return nil }
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				for i := range f.Containers {
					if err := d.ContainerShapes(i, count); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// TestContainerShapesMeasuresNames: in 3.1 fixtures, whose read names are
// tok3-compressed, the lean pass measures the names (Tok3Lengths) without
// decoding them: with a Tok3 that fails, the full decode fails and the
// lean pass gives the shapes of a Decoder that decodes them. Without
// Tok3Lengths, or with one that fails, the names are decoded instead.
func TestContainerShapesMeasuresNames(t *testing.T) {
	for _, name := range []string{"ce_1000.3.1-normal", "ce_1000.3.1-archive"} {
		b, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata", "cram", name+".cram"))
		if err != nil {
			t.Fatal(err)
		}
		f, err := decode.Open("x.cram", bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		errNoTok3 := errors.New("no tok3 here")
		noTok3 := decode.DefaultCodecs()
		noTok3.Tok3 = func(dst, src []byte, rawSize int) ([]byte, error) { return dst, errNoTok3 }
		noLengths := decode.DefaultCodecs()
		noLengths.Tok3Lengths = nil
		badLengths := decode.DefaultCodecs()
		badLengths.Tok3Lengths = func(dst []uint32, src []byte, rawSize int) ([]uint32, error) { return dst, errNoTok3 }
		opt := decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true}
		good := f.NewDecoder(opt)
		var decoders []*decode.Decoder
		for _, c := range []*decode.Codecs{&noTok3, &noLengths, &badLengths} {
			opt.Codecs = c
			decoders = append(decoders, f.NewDecoder(opt))
		}
		for i := range f.Containers {
			if _, err := decoders[0].Container(i); !errors.Is(err, errNoTok3) {
				t.Fatalf("%s: container %d: the full decode without tok3 gives %v", name, i, err)
			}
			want, err := fullShapes(good, i)
			if err != nil {
				t.Fatal(err)
			}
			for k, d := range decoders {
				got, err := leanShapes(d, i)
				if err != nil {
					t.Fatalf("%s: container %d, codecs %d: lean pass: %v", name, i, k, err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: container %d, codecs %d: %s", name, i, k, diffShapes(got, want))
				}
			}
		}
	}
}

// TestTok3LengthsOfEveryBlock: every tok3 block of every CRAM of the
// fixtures and the corpus, as the full decode decompresses it, is measured
// by Tok3Lengths as the names it decodes to (their lengths between the
// NULs), or reported as holding a NUL inside a name.
func TestTok3LengthsOfEveryBlock(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(corpus.Root(), "testdata", "cram", "*.cram"))
	if err != nil {
		t.Fatal(err)
	}
	if dir := corpus.Dir(t); dir != "" {
		for _, sub := range []string{"hts-specs/test/cram/3.1/passed", "htslib-test"} {
			more, err := filepath.Glob(filepath.Join(dir, sub, "*.cram"))
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, more...)
		}
	}
	blocks := 0
	var mismatch error
	c := decode.DefaultCodecs()
	checked := c
	checked.Tok3 = func(dst, src []byte, rawSize int) ([]byte, error) {
		out, err := c.Tok3(dst, src, rawSize)
		if err != nil {
			return out, err
		}
		names := out[len(dst):]
		lens, lerr := c.Tok3Lengths(nil, src, rawSize)
		switch {
		case errors.Is(lerr, tok3.ErrNUL):
		case lerr != nil:
			mismatch = fmt.Errorf("a %d-byte block decodes, Tok3Lengths fails: %w", len(src), lerr)
		default:
			for i, n := range lens {
				k := bytes.IndexByte(names, 0)
				if k != int(n) {
					mismatch = fmt.Errorf("name %d: %d bytes, measured %d", i, k, n)
					break
				}
				names = names[k+1:]
			}
			if len(names) != 0 && mismatch == nil {
				mismatch = fmt.Errorf("%d bytes left after %d names", len(names), len(lens))
			}
		}
		blocks++
		return out, nil
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := decode.Open(p, bytes.NewReader(b), int64(len(b)), decode.OpenOptions{AllowMissingEOF: true})
		if err != nil {
			continue // fixtures made to fail
		}
		d := f.NewDecoder(decode.DecoderOptions{Reference: fakeRef{}, Codecs: &checked, IgnoreMD5: true})
		for i := range f.Containers {
			d.Container(i) // a container failing after its names is fine: they were checked
			if mismatch != nil {
				t.Fatalf("%s: container %d: %v", p, i, mismatch)
			}
		}
	}
	if blocks < 10 {
		t.Fatalf("only %d tok3 blocks in %d files", blocks, len(files))
	}
	t.Logf("%d tok3 blocks of %d files", blocks, len(files))
}

// shortRef is a ReferenceScanner over a store's contigs whose first
// contig is cut to cut bases: a FASTA shorter than the slices' spans.
type shortRef struct {
	contigs []*reference.Contig
	cut     int64
}

func (r *shortRef) Length(id int) int64 {
	if id == 0 {
		return min(r.cut, r.contigs[0].Len())
	}
	return r.contigs[id].Len()
}

func (r *shortRef) Bases(dst []byte, id int, start, end int64) ([]byte, error) {
	end = min(end, r.Length(id))
	return r.contigs[id].Bases(dst, min(start, end), end)
}

func (r *shortRef) ScanBases(id int, start, end int64, h hash.Hash, runs [][2]int64) (int64, [][2]int64, error) {
	end = min(end, r.Length(id))
	start = min(start, end)
	runs, err := r.contigs[id].Scan(start, end, h, runs)
	return end - start, runs, err
}

// TestContainerShapesShortReference: against a reference shorter than
// the slices' spans (read without MD5 checks), the lean pass reading it in
// place (marks views) fails where the full decode fails and otherwise
// gives its shapes: matches, deletions and stored bases that run past the
// reference's end, and the slice's limit at that end.
func TestContainerShapesShortReference(t *testing.T) {
	root := filepath.Join(corpus.Root(), "testdata")
	b, err := os.ReadFile(filepath.Join(root, "cram", "ce_1000.3.0.cram"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := decode.Open("x.cram", bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	store, err := reference.Open([]string{filepath.Join(root, "ref/ce.fa")}, reference.Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ref := &shortRef{}
	for _, q := range f.Refs {
		c, err := store.Resolve(reference.SQ{Name: q.Name, Length: q.Length, M5: q.M5})
		if err != nil {
			t.Fatal(err)
		}
		ref.contigs = append(ref.contigs, c)
	}
	ref.cut = math.MaxInt64
	opt := decode.DecoderOptions{Reference: ref, IgnoreMD5: true}
	var first, last int64 = -1, 0
	good := f.NewDecoder(opt)
	for i := range f.Containers {
		recs, err := good.Container(i)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.RefID == 0 && first < 0 {
				first = r.Pos
			}
			if r.RefID == 0 {
				last = r.Pos
			}
		}
	}
	failed := 0
	for k := range 40 {
		ref.cut = first + (last-first+200)*int64(k)/40
		fd, ld := f.NewDecoder(opt), f.NewDecoder(opt)
		for i := range f.Containers {
			want, ferr := fullShapes(fd, i)
			got, lerr := leanShapes(ld, i)
			if (ferr == nil) != (lerr == nil) {
				t.Fatalf("cut %d: container %d: full decode %v, lean pass %v", ref.cut, i, ferr, lerr)
			}
			if ferr != nil {
				failed++
				continue
			}
			if !slices.Equal(got, want) {
				t.Fatalf("cut %d: container %d: %s", ref.cut, i, diffShapes(got, want))
			}
		}
	}
	if failed == 0 {
		t.Fatal("no cut made a container fail")
	}
	t.Logf("%d containers failed with the full decode and the lean pass", failed)
}
