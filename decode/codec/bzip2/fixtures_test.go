package bzip2

import (
	"bytes"
	"compress/bzip2"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// fixture is a bzip2 file made by testdata/make.sh and what it decodes to.
type fixture struct {
	name   string
	src    []byte
	rawLen int
	sha    string // hex SHA-256 of the original
}

// loadFixtures reads testdata/MANIFEST and the files it lists.
func loadFixtures(tb testing.TB) []fixture {
	var fx []fixture
	for _, m := range corpus.ManifestFixtures(tb, "testdata", 30) {
		fx = append(fx, fixture{name: m.Name, src: m.Src, rawLen: m.RawLen, sha: m.SHA})
	}
	return fx
}

func fixtureNamed(tb testing.TB, name string) fixture {
	tb.Helper()
	for _, f := range loadFixtures(tb) {
		if f.name == name {
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
		t.Run(f.name, func(t *testing.T) {
			got, err := Decode(f.src, f.rawLen)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if len(got) != f.rawLen || sha(got) != f.sha {
				t.Fatalf("Decode: %d bytes with SHA-256 %s, want %d bytes with %s", len(got), sha(got), f.rawLen, f.sha)
			}
			// Differential: compress/bzip2 must produce the same bytes.
			want, err := stdDecode(f.src, f.rawLen)
			if err != nil {
				t.Fatalf("compress/bzip2: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("differs from compress/bzip2 (%d vs %d bytes)", len(got), len(want))
			}
			for _, n := range []int{f.rawLen - 1, f.rawLen + 1} {
				if n < 0 {
					continue
				}
				if _, err := Decode(f.src, n); !errors.Is(err, ErrCorrupt) {
					t.Errorf("Decode with rawSize %d for %d bytes: err = %v, want ErrCorrupt", n, f.rawLen, err)
				}
			}
		})
	}
}
