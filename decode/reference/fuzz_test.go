package reference

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/cramfs/cramfs/internal/corpus"
)

// fixture reads a bundled testdata file, or nil when it is absent.
func fixture(tb testing.TB, parts ...string) []byte {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(append([]string{corpus.Root(), "testdata"}, parts...)...))
	if err != nil {
		return nil
	}
	return data
}

// checkEntries reads every indexed contig in full from data and checks the
// result has the indexed length, and no line ends when strict (an .fai may
// point anywhere in the file; only a scanned index is known to skip them).
func checkEntries(t *testing.T, entries []entry, data []byte, strict bool) {
	m := &mapping{path: "fuzz", data: data}
	for _, e := range entries {
		c := &Contig{name: e.name, length: e.length, runs: e.runs, m: m}
		got, err := c.Bases(nil, 0, c.Len())
		if err != nil {
			t.Fatalf("%s: Bases(0,%d): %v", e.name, c.Len(), err)
		}
		if int64(len(got)) != c.Len() {
			t.Fatalf("%s: %d bases, want %d", e.name, len(got), c.Len())
		}
		if strict && bytes.ContainsAny(got, "\r\n") {
			t.Fatalf("%s: line end in bases", e.name)
		}
		if c.MD5() == "" {
			t.Fatalf("%s: empty MD5", e.name)
		}
		checkScan(t, c, 0, c.Len())
		checkScan(t, c, c.Len()/3, c.Len()-c.Len()/4)
	}
}

func FuzzScanFasta(f *testing.F) {
	f.Add([]byte(irregular))
	f.Add([]byte(">a\nACGT\nAC\n>b desc\r\nNNNN\r\n"))
	f.Add([]byte("\x1f\x8b\x08"))
	if ce := fixture(f, "ref", "ce.fa"); ce != nil {
		f.Add(ce[:4096])
	}
	if xx := fixture(f, "ref", "xx.fa"); xx != nil {
		f.Add(xx)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := scanFasta(data)
		if err != nil {
			return
		}
		checkEntries(t, entries, data, true)
		// The scanned index of a file, written as an .fai when regular,
		// must parse back to the same layout.
		var fai bytes.Buffer
		for _, e := range entries {
			if len(e.runs) > 1 {
				return
			}
		}
		for _, e := range entries {
			var r run
			if len(e.runs) == 1 {
				r = e.runs[0]
			} else {
				r.lineBases, r.lineWidth = 1, 1
			}
			fai.WriteString(e.name + "\t" + itoa(e.length) + "\t" + itoa(r.off) + "\t" + itoa(r.lineBases) + "\t" + itoa(r.lineWidth) + "\n")
		}
		back, err := parseFai(fai.Bytes(), plainText(data))
		if err != nil {
			t.Fatalf("parseFai of scanned index: %v\n%s", err, fai.Bytes())
		}
		if len(back) != len(entries) {
			t.Fatalf("parseFai: %d entries, scan %d", len(back), len(entries))
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func FuzzParseFai(f *testing.F) {
	ceFai, ce := fixture(f, "ref", "ce.fa.fai"), fixture(f, "ref", "ce.fa")
	if ceFai != nil && ce != nil {
		f.Add(ceFai, ce[:min(len(ce), 1<<16)])
	}
	if xxFai, xx := fixture(f, "ref", "xx.fa.fai"), fixture(f, "ref", "xx.fa"); xxFai != nil {
		f.Add(xxFai, xx)
	}
	f.Add([]byte("s\t10\t3\t4\t5\n"), []byte(">s\nACGT\nACGT\nAC\n"))
	f.Add([]byte("s\t9223372036854775807\t0\t1\t9223372036854775807\n"), []byte(">s\nA\n"))
	f.Fuzz(func(t *testing.T, fai, fasta []byte) {
		entries, err := parseFai(fai, plainText(fasta))
		if err != nil {
			return
		}
		// A parsed index is checked to fit the file, so every base must be
		// readable.
		checkEntries(t, entries, fasta, false)
	})
}
