package reference

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTruncatedWhileMapped: a FASTA truncated under its mapping makes
// reads of the lost bases fail with ErrChanged instead of killing the
// process with SIGBUS.
func TestTruncatedWhileMapped(t *testing.T) {
	fa := filepath.Join(t.TempDir(), "r.fa")
	var b bytes.Buffer
	b.WriteString(">pad\n")
	for range 1000 {
		b.WriteString("ACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGT\n")
	}
	b.WriteString(">chr\nacgtnACGTN\n")
	if err := os.WriteFile(fa, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open([]string{fa}, Options{NoEnv: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var chr *Contig
	for _, c := range s.Contigs() {
		if c.Name() == "chr" {
			chr = c
		}
	}
	if chr == nil {
		t.Fatal("contig chr not found")
	}
	got, err := chr.Bases([]byte("x"), 0, 10)
	if err != nil || string(got) != "xACGTNACGTN" {
		t.Fatalf("before truncation: %q, %v", got, err)
	}
	if err := os.Truncate(fa, 100); err != nil {
		t.Fatal(err)
	}
	got, err = chr.Bases([]byte("x"), 0, 10)
	if !errors.Is(err, ErrChanged) || string(got) != "x" {
		t.Fatalf("after truncation: %q, %v; want ErrChanged and dst unchanged", got, err)
	}
}

// mappedThenTruncated writes content to dir/name, maps it and truncates
// the file to 100 bytes, so that reading the mapping past its first page
// faults.
func mappedThenTruncated(t *testing.T, dir, name string, content []byte) *mapping {
	t.Helper()
	fn := filepath.Join(dir, name)
	if err := os.WriteFile(fn, content, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := mapFile(fn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.unmap() })
	if err := os.Truncate(fn, 100); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestM5FileTruncatedWhileMapped: an M5-named sequence file truncated
// between its mapping and the look for its final line end (the last byte,
// pages past the new end) gives ErrChanged instead of SIGBUS.
func TestM5FileTruncatedWhileMapped(t *testing.T) {
	seq := append(bytes.Repeat([]byte("ACGT"), 3*pageSize/4), '\n')
	m := mappedThenTruncated(t, t.TempDir(), md5hex(string(seq[:len(seq)-1])), seq)
	c, err := m5Contig(m, "m5")
	if !errors.Is(err, ErrChanged) || c != nil || !strings.Contains(err.Error(), m.path) {
		t.Fatalf("m5Contig of a truncated mapping = %v, %v; want ErrChanged naming %s", c, err, m.path)
	}
}

// TestFastaTruncatedWhileIndexing: a FASTA truncated between its mapping
// and its indexing, by scanning or by checking its .fai, gives ErrChanged
// instead of SIGBUS.
func TestFastaTruncatedWhileIndexing(t *testing.T) {
	var b bytes.Buffer
	for i := range 3 {
		fmt.Fprintf(&b, ">c%d\n", i)
		for range pageSize / 50 {
			b.WriteString("ACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTACGTAC\n")
		}
	}
	entries, err := scanFasta(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var fai strings.Builder
	for _, e := range entries {
		r := e.runs[0]
		fmt.Fprintf(&fai, "%s\t%d\t%d\t%d\t%d\n", e.name, e.length, r.off, r.lineBases, r.lineWidth)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		fai     []byte
		haveFai bool
	}{{"scanned", nil, false}, {"with .fai", []byte(fai.String()), true}} {
		t.Run(tc.name, func(t *testing.T) {
			m := mappedThenTruncated(t, dir, strings.ReplaceAll(tc.name, " ", "")+".fa", b.Bytes())
			got, _, err := indexFasta(m, tc.fai, tc.haveFai, newBlockCache())
			if !errors.Is(err, ErrChanged) || got != nil || !strings.Contains(err.Error(), m.path) {
				t.Fatalf("indexFasta of a truncated mapping = %v, %v; want ErrChanged naming %s", got, err, m.path)
			}
		})
	}
}
