package engine

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/internal/bgzftest"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/cramtest"
)

// TestVirtualBAMOfCorpusCRAM serves real CRAMs of the corpus: the virtual
// BAM decompresses to the oracle's BAM stream (manifest MD5) and its .bai
// equals `samtools index` of the virtual BAM.
func TestVirtualBAMOfCorpusCRAM(t *testing.T) {
	dir := corpus.Dir(t)
	cases := []struct{ cram, fasta, bamMD5 string }{
		{"hts-specs/test/cram/3.0/passed/1400_index_simple.cram", "hts-specs/test/cram/ce.fa", "e5d7e23b47185545b4d0c7a1478f74d1"},
		{"hts-specs/test/cram/3.0/passed/level-1.cram", "hts-specs/test/cram/ce.fa", "641fc9d99af71f147dfb321bd27c1e74"},
	}
	for _, tc := range cases {
		t.Run(filepath.Base(tc.cram), func(t *testing.T) {
			store, err := reference.Open([]string{filepath.Join(dir, tc.fasta)}, reference.Options{NoEnv: true})
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			src, err := cram.Open(filepath.Join(dir, tc.cram), cram.Path(filepath.Join(dir, tc.cram)), cram.Options{Reference: store})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			m, _ := newTestManager(t, Options{CacheSize: 256 << 10})
			v := openT(t, m, src)
			whole := readAll(t, v, 100<<10)
			if int64(len(whole)) != v.Size() {
				t.Fatalf("read %d bytes, Size %d", len(whole), v.Size())
			}
			raw, err := bgzftest.DecompressAll(whole)
			if err != nil {
				t.Fatal(err)
			}
			sum := md5.Sum(raw)
			if got := hex.EncodeToString(sum[:]); got != tc.bamMD5 {
				t.Fatalf("decompressed virtual BAM md5 %s, oracle %s", got, tc.bamMD5)
			}
			// Rebuilt after eviction: the same bytes again.
			if again := readAll(t, v, 64<<10); !bytes.Equal(again, whole) {
				t.Fatal("second read differs")
			}
			path := filepath.Join(t.TempDir(), "v.bam")
			if err := os.WriteFile(path, whole, 0o644); err != nil {
				t.Fatal(err)
			}
			cramtest.Samtools(t, "index", path)
			want, err := os.ReadFile(path + ".bai")
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(v.Index(), want) {
				t.Fatalf(".bai differs from samtools index (%d vs %d bytes)", len(v.Index()), len(want))
			}
		})
	}
}
