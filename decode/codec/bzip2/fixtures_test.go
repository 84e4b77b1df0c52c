package bzip2

import (
	"bytes"
	"compress/bzip2"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"

	"github.com/cramfs/cramfs/internal/codectest"
	"github.com/cramfs/cramfs/internal/corpus"
)

// decodeNew decodes src into a new slice (see codectest.Decode).
func decodeNew(src []byte, rawSize int) ([]byte, error) {
	return codectest.Decode(AppendDecode, src, rawSize)
}

// fixture is a bzip2 file made by testdata/make.sh and what it decodes to.
type fixture = corpus.ManifestFixture

// loadFixtures reads testdata/MANIFEST and the files it lists.
func loadFixtures(tb testing.TB) []fixture {
	return corpus.ManifestFixtures(tb, "testdata", 30)
}

func fixtureNamed(tb testing.TB, name string) fixture {
	tb.Helper()
	for _, f := range loadFixtures(tb) {
		if f.Name == name {
			return f
		}
	}
	tb.Fatalf("no fixture %s", name)
	return fixture{}
}

func sha(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// stdDecode decodes src with compress/bzip2, reading at most max+1 bytes.
func stdDecode(src []byte, max int) ([]byte, error) {
	return io.ReadAll(io.LimitReader(bzip2.NewReader(bytes.NewReader(src)), int64(max)+1))
}

func TestFixtures(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.Name, func(t *testing.T) {
			got, err := decodeNew(f.Src, f.RawLen)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(got) != f.RawLen || sha(got) != f.SHA {
				t.Fatalf("Decode: %d bytes with SHA-256 %s, want %d bytes with %s", len(got), sha(got), f.RawLen, f.SHA)
			}
			// Differential: compress/bzip2 must produce the same bytes.
			want, err := stdDecode(f.Src, f.RawLen)
			if err != nil {
				t.Fatalf("compress/bzip2: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("differs from compress/bzip2 (%d vs %d bytes)", len(got), len(want))
			}
			for _, n := range []int{f.RawLen - 1, f.RawLen + 1} {
				if n < 0 {
					continue
				}
				if _, err := decodeNew(f.Src, n); !errors.Is(err, ErrCorrupt) {
					t.Errorf("Decode with rawSize %d for %d bytes: err = %v, want ErrCorrupt", n, f.RawLen, err)
				}
			}
		})
	}
}
