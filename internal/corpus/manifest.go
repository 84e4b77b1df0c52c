package corpus

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ManifestFixture is a compressed test file listed in a codec's
// testdata/MANIFEST, with what its original holds.
type ManifestFixture struct {
	Name   string
	Src    []byte
	RawLen int    // length of the original
	SHA    string // hex SHA-256 of the original
}

// ManifestFixtures reads dir/MANIFEST, written by the codec's
// testdata/make.sh (one line per file: name, original length, hex SHA-256
// of the original), and the files it lists, failing tb when it lists
// fewer than min.
func ManifestFixtures(tb testing.TB, dir string, min int) []ManifestFixture {
	tb.Helper()
	f, err := os.Open(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var fx []ManifestFixture
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
		src, err := os.ReadFile(filepath.Join(dir, fields[0]))
		if err != nil {
			tb.Fatal(err)
		}
		fx = append(fx, ManifestFixture{Name: fields[0], Src: src, RawLen: n, SHA: fields[2]})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	if len(fx) < min {
		tb.Fatalf("MANIFEST lists %d fixtures, want at least %d", len(fx), min)
	}
	return fx
}
