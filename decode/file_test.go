package decode_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/internal/corpus"
)

// fakeRef serves a repeating ACGT reference of any length; slices decode
// against it when MD5 checks are off.
type fakeRef struct{}

func (fakeRef) Bases(dst []byte, id int, start, end int64) ([]byte, error) {
	for p := start; p < end; p++ {
		dst = append(dst, "ACGT"[p%4])
	}
	return dst, nil
}
func (fakeRef) Length(int) int64 { return -1 }

// decodeAll opens b as a CRAM and decodes every container.
func decodeAll(name string, b []byte, opt decode.DecoderOptions) (int, error) {
	f, err := decode.Open(name, bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
	if err != nil {
		return 0, err
	}
	d := f.NewDecoder(opt)
	n := 0
	for i := range f.Containers {
		recs, err := d.Container(i)
		if err != nil {
			return n, err
		}
		n += len(recs)
	}
	return n, nil
}

func TestTruncatedFilesFail(t *testing.T) {
	dir := corpus.Dir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "samtools-test/quickcheck/*truncated*.cram"))
	files = append(files, filepath.Join(dir, "hts-specs/test/cram/3.0/failed/0000_empty_noeof.cram"))
	if len(files) < 3 {
		t.Fatalf("expected truncated files in the corpus, found %v", files)
	}
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		_, err = decodeAll(p, b, decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true})
		if !errors.Is(err, decode.ErrTruncated) {
			t.Errorf("%s: err %v, want ErrTruncated", filepath.Base(p), err)
			continue
		}
		var de *decode.Error
		if !errors.As(err, &de) || de.File != p || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not name the file", p, err)
		}
	}
}

func TestCutAtEveryContainerFails(t *testing.T) {
	p := filepath.Join(corpus.Root(), "testdata/cram/ce_1000.3.0-multislice.cram")
	f, b := openFile(t, p)
	var cuts []int64
	for _, c := range f.Containers {
		cuts = append(cuts, c.Offset, c.Offset+3, c.End()-1)
	}
	cuts = append(cuts, int64(len(b))-1, 10, 30)
	for _, n := range cuts {
		_, err := decodeAll(p, b[:n], decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true})
		if !errors.Is(err, decode.ErrTruncated) && !errors.Is(err, decode.ErrCorrupt) {
			t.Errorf("cut at %d: err %v, want ErrTruncated or ErrCorrupt", n, err)
		}
	}
}

func TestFlippedBytesNeverPanic(t *testing.T) {
	p := filepath.Join(corpus.Root(), "testdata/cram/ce_5b.3.0.cram")
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	want, err := decodeAll(p, orig, decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true})
	if err != nil {
		t.Fatal(err)
	}
	b := bytes.Clone(orig)
	errs := 0
	for i := range b {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			b[i] ^= x
			n, err := decodeAll(p, b, decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true})
			if err != nil {
				errs++
			} else if i >= 26 && n != want {
				// Bytes covered by CRCs change nothing silently; the file
				// ID and unused bytes may.
				t.Errorf("flip %#x at byte %d: %d records without error, want %d", x, i, n, want)
			}
			b[i] ^= x
		}
	}
	if errs == 0 {
		t.Fatal("no flipped byte was detected")
	}
}

func TestCorruptFixtureNamesBlock(t *testing.T) {
	p := filepath.Join(corpus.Root(), "testdata/cram/corrupt.ce_1000.3.0.cram")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	_, err = decodeAll(p, b, decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true})
	if !errors.Is(err, decode.ErrChecksum) {
		t.Fatalf("err %v, want ErrChecksum", err)
	}
	if !strings.Contains(err.Error(), "container at byte") {
		t.Errorf("error %q gives no container offset", err)
	}
}

func TestRefusesOtherVersions(t *testing.T) {
	for _, v := range [][2]byte{{1, 0}, {5, 0}} {
		b := append([]byte("CRAM"), v[0], v[1])
		b = append(b, make([]byte, 40)...)
		_, err := decode.Open("x.cram", bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
		if !errors.Is(err, decode.ErrUnsupported) || !strings.Contains(err.Error(), "x.cram") {
			t.Errorf("CRAM %d.%d: err %v, want ErrUnsupported naming the file", v[0], v[1], err)
		}
	}
}

func FuzzDecodeFile(f *testing.F) {
	// ce_1 and xx_minimal: short header containers and slices without
	// a QS block.
	addCRAMSeeds(f, "ce_5b", "ce_1", "xx_minimal")
	if dir := os.Getenv("CRAMFS_CORPUS"); dir != "" {
		more, _ := filepath.Glob(filepath.Join(dir, "hts-specs/test/cram/3.0/passed/0*.cram"))
		addSeedFiles(f, more)
	}
	// Every container is decoded both ways, Container and ContainerFunc,
	// which must agree on the records and on failing.
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := decode.Open("fuzz.cram", bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
		if err != nil {
			return
		}
		bothWays(t, file)
	})
}

// TestHeaderContainerShorterThanItsBlock opens a CRAM 2.1 fixture whose
// SAM header container is declared 2 bytes shorter than the block it
// holds, as scramble writes short headers: htslib reads the header block
// by its own size and the first data container after it, and so must
// Open. The same shortfall in a data container stays an error, and so
// does a header block that runs past the end of the file.
func TestHeaderContainerShorterThanItsBlock(t *testing.T) {
	orig, err := os.ReadFile(filepath.Join(corpus.Root(), "testdata/cram/ce_5b.2.1.cram"))
	if err != nil {
		t.Fatal(err)
	}
	open := func(b []byte) (*decode.File, error) {
		return decode.Open("x.cram", bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
	}
	want, err := open(orig)
	if err != nil {
		t.Fatal(err)
	}
	// The header container's length is the little-endian int32 after
	// the 26-byte file definition.
	const lenAt = 26
	shorten := func(b []byte, at int, by uint32) []byte {
		c := bytes.Clone(b)
		binary.LittleEndian.PutUint32(c[at:], binary.LittleEndian.Uint32(c[at:])-by)
		return c
	}
	got, err := open(shorten(orig, lenAt, 2))
	if err != nil {
		t.Fatalf("header container 2 bytes short: %v", err)
	}
	if !reflect.DeepEqual(got.Containers, want.Containers) || !bytes.Equal(got.HeaderText, want.HeaderText) {
		t.Fatalf("header container 2 bytes short: %d containers, want %d as in the original", len(got.Containers), len(want.Containers))
	}
	first := want.Containers[0]
	if _, err := decodeAll("x.cram", shorten(orig, int(first.Offset), 2), decode.DecoderOptions{Reference: fakeRef{}, IgnoreMD5: true}); err == nil {
		t.Errorf("data container at byte %d declared 2 bytes short: no error", first.Offset)
	}
	// Cut the file inside the header block: the block runs past the end.
	if _, err := open(shorten(orig[:lenAt+40], lenAt, 2)); !errors.Is(err, decode.ErrTruncated) {
		t.Errorf("header block past the end of the file: %v, want ErrTruncated", err)
	}
}

// addCRAMSeeds adds to f the corpus CRAMs of each set (testdata/cram/SET.*.cram).
func addCRAMSeeds(f *testing.F, sets ...string) {
	for _, set := range sets {
		paths, _ := filepath.Glob(filepath.Join(corpus.Root(), "testdata/cram", set+".*.cram"))
		addSeedFiles(f, paths)
	}
}

// addSeedFiles adds to f each of paths that reads and is under 64 KiB.
func addSeedFiles(f *testing.F, paths []string) {
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
}
