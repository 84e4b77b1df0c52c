package gzip

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
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
	tb.Helper()
	f, err := os.Open(filepath.Join("testdata", "MANIFEST"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var fx []fixture
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 3 {
			tb.Fatalf("MANIFEST line %q: want 3 fields", sc.Text())
		}
		n, err := strconv.Atoi(fields[1])
		if err != nil {
			tb.Fatal(err)
		}
		src, err := os.ReadFile(filepath.Join("testdata", fields[0]))
		if err != nil {
			tb.Fatal(err)
		}
		fx = append(fx, fixture{name: fields[0], src: src, rawLen: n, sha: fields[2]})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	if len(fx) < 40 {
		tb.Fatalf("MANIFEST lists %d fixtures, want at least 40", len(fx))
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
