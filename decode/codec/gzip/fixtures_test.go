package gzip

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// fixture is a gzip file made by testdata/make.sh and what it decodes to.
type fixture struct {
	name   string
	src    []byte
	rawLen int
	sha    string // hex SHA-256 of the original
}

// loadFixtures reads testdata/MANIFEST and the files it lists.
func loadFixtures(tb testing.TB) []fixture {
	var fx []fixture
	for _, m := range corpus.ManifestFixtures(tb, "testdata", 40) {
		fx = append(fx, fixture{name: m.Name, src: m.Src, rawLen: m.RawLen, sha: m.SHA})
	}
	return fx
}

// TestFixtures decodes the streams written by GNU gzip and zlib and checks
// them against the original's SHA-256 and against klauspost's reader.
func TestFixtures(t *testing.T) {
	for _, fx := range loadFixtures(t) {
		got, err := Decode(fx.src, fx.rawLen)
		if err != nil {
			t.Errorf("%s: %v", fx.name, err)
			continue
		}
		if sum := sha256.Sum256(got); hex.EncodeToString(sum[:]) != fx.sha {
			t.Errorf("%s: decoded bytes differ from the original", fx.name)
		}
		if !checkAgainstOracle(t, fx.name, fx.src) {
			t.Errorf("%s: klauspost's reader rejects it", fx.name)
		}
	}
}
