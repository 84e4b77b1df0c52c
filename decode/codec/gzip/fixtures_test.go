package gzip

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/cramfs/cramfs/internal/codectest"
	"github.com/cramfs/cramfs/internal/corpus"
)

// decodeNew decodes src into a new slice (see codectest.Decode).
func decodeNew(src []byte, rawSize int) ([]byte, error) {
	return codectest.Decode(AppendDecode, src, rawSize)
}

// fixture is a gzip file made by testdata/make.sh and what it decodes to.
type fixture = corpus.ManifestFixture

// loadFixtures reads testdata/MANIFEST and the files it lists.
func loadFixtures(tb testing.TB) []fixture {
	return corpus.ManifestFixtures(tb, "testdata", 40)
}

// TestFixtures decodes the streams written by GNU gzip and zlib and checks
// them against the original's SHA-256 and against klauspost's reader.
func TestFixtures(t *testing.T) {
	for _, fx := range loadFixtures(t) {
		got, err := decodeNew(fx.Src, fx.RawLen)
		if err != nil {
			t.Errorf("%s: %v", fx.Name, err)
			continue
		}
		if sum := sha256.Sum256(got); hex.EncodeToString(sum[:]) != fx.SHA {
			t.Errorf("%s: decoded bytes differ from the original", fx.Name)
		}
		if !checkAgainstOracle(t, fx.Name, fx.Src) {
			t.Errorf("%s: klauspost's reader rejects it", fx.Name)
		}
	}
}
