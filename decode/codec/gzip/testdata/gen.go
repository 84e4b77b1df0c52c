//go:build ignore

// Command gen writes the original inputs of the gzip test fixtures into
// the directory named by its argument. make.sh runs it; the output depends
// only on this file (its generator is a fixed-seed splitmix64, not
// math/rand, so the bytes cannot change with the Go version).
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cramfs/cramfs/internal/splitmix"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: go run gen.go DIR")
		os.Exit(2)
	}
	r := splitmix.Rand(42)
	words := strings.Fields("read name quality cigar sequence tag slice container block the of and a to in")
	var text []byte
	for len(text) < 3000 {
		text = append(text, words[r.Intn(len(words))]...)
		text = append(text, " \n"[r.Intn(2)])
	}
	random := make([]byte, 1000)
	for i := range random {
		random[i] = byte(r.Next())
	}
	var runs []byte
	for n := 1; len(runs) < 3000; n += 7 {
		runs = append(runs, bytes.Repeat([]byte{byte('A' + n%26)}, n)...)
	}
	dna := make([]byte, 4000)
	for i := range dna {
		dna[i] = "ACGT"[r.Intn(4)]
	}
	for name, b := range map[string][]byte{
		"empty":  nil,
		"one":    {'x'},
		"text":   text,
		"random": random,
		"runs":   runs,
		"dna":    dna,
	} {
		if err := os.WriteFile(filepath.Join(os.Args[1], name), b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
