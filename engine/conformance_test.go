package engine

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/engine/source"
	"github.com/cramfs/cramfs/internal/corpus"
)

// convertMD5 decodes a whole CRAM to an uncompressed BAM stream and
// returns its MD5.
func convertMD5(t *testing.T, path string, fastas []string, noMD bool) (string, error) {
	t.Helper()
	store, err := reference.Open(fastas, reference.Options{NoEnv: true})
	if err != nil {
		return "", err
	}
	defer store.Close()
	c, err := cram.Open(path, cram.Path(path), cram.Options{Reference: store, NoMD: noMD, AllowMissingEOF: true})
	if err != nil {
		return "", err
	}
	defer c.Close()
	h := md5.New()
	hdr, err := c.Header()
	if err != nil {
		return "", err
	}
	h.Write(hdr)
	var buf, blocks, want []byte
	var comps [2]*bgzf.Compressor
	for l := range comps {
		if comps[l], err = bgzf.NewCompressor(l); err != nil {
			t.Fatal(err)
		}
	}
	ref, err := bgzf.NewCompressor(1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < c.NumContainers(); i++ {
		buf, err = c.AppendContainer(context.Background(), i, buf[:0])
		if err != nil {
			return "", err
		}
		h.Write(buf)
		// Blocks cut as the records are encoded are AppendBlocks' blocks
		// of the whole container, stored in place and compressed.
		for level, comp := range comps {
			var built source.Blocks
			if blocks, built, err = c.AppendContainerBlocks(context.Background(), i, comp, blocks[:0], source.BlockOptions{}); err != nil {
				t.Fatalf("container %d: AppendContainerBlocks at level %d: %v", i, level, err)
			}
			refComp := comp
			if level > 0 {
				refComp = ref
			}
			if want, err = refComp.AppendBlocks(want[:0], buf); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(blocks, want) || built.Raw != int64(len(buf)) {
				t.Fatalf("container %d: level %d blocks (%d bytes, %d raw) differ from AppendBlocks (%d bytes, %d raw)", i, level, len(blocks), built.Raw, len(want), len(buf))
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func TestCorpusConformance(t *testing.T) {
	dir := corpus.Dir(t)
	checkManifest(t, dir, filepath.Join(dir, "cram_manifest.tsv"))
}

func TestTestdataConformance(t *testing.T) {
	dir := filepath.Join(corpus.Root(), "testdata")
	checkManifest(t, dir, filepath.Join(dir, "cram", "manifest.tsv"))
}

// checkManifest converts every file of a manifest that samtools reads
// without error and compares the uncompressed BAM stream with samtools',
// with and without MD/NM generation. A file samtools refuses must be
// refused too, with an error naming the file and an offset in it.
func checkManifest(t *testing.T, dir, manifest string) {
	for _, e := range corpus.CRAMManifest(t, manifest) {
		if strings.Contains(e.Path, "truncated") {
			continue
		}
		if e.RC != "0" {
			t.Run(e.Path, func(t *testing.T) { checkRefused(t, dir, e) })
			continue
		}
		t.Run(e.Path, func(t *testing.T) {
			var fastas []string
			if e.Ref != "" {
				fastas = []string{filepath.Join(dir, e.Ref)}
			}
			for _, noMD := range []bool{false, true} {
				want := e.BAMMD5
				if noMD {
					want = e.BAMMD5NoMD
				}
				got, err := convertMD5(t, filepath.Join(dir, e.Path), fastas, noMD)
				if err != nil {
					t.Fatalf("noMD=%v: %v", noMD, err)
				}
				if got != want {
					t.Errorf("noMD=%v: BAM stream md5 %s, samtools %s", noMD, got, want)
				}
			}
		})
	}
}

// checkRefused converts a file samtools refuses: it must fail, naming the
// file and a byte offset.
func checkRefused(t *testing.T, dir string, e corpus.CRAMEntry) {
	var fastas []string
	if e.Ref != "" {
		fastas = []string{filepath.Join(dir, e.Ref)}
	}
	path := filepath.Join(dir, e.Path)
	_, err := convertMD5(t, path, fastas, false)
	if err == nil {
		t.Fatalf("samtools exits %s on it, cramfs converts it", e.RC)
	}
	if msg := err.Error(); !strings.Contains(msg, filepath.Base(path)) || !strings.Contains(msg, " byte ") {
		t.Errorf("error %q does not name the file and a byte offset", msg)
	}
}
