package reference

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
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
