//go:build ignore

// Command gen writes the original inputs of the bzip2 test fixtures into
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

// bases appends n random bases with no four equal in a row, so that each
// byte is one symbol of bzip2's first (RLE1) stage.
func bases(b []byte, r *splitmix.Rand, n int) []byte {
	for range n {
		c := "ACGT"[r.Intn(4)]
		if k := len(b); k >= 3 && b[k-1] == c && b[k-2] == c && b[k-3] == c {
			c = "ACGT"[(strings.IndexByte("ACGT", c)+1+r.Intn(3))%4]
		}
		b = append(b, c)
	}
	return b
}

func main() {
	dir := os.Args[1]
	files := map[string][]byte{}
	r := splitmix.Rand(20240613)

	files["empty"] = nil
	files["one"] = []byte("x")
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	files["bytes256"] = all
	for _, n := range []int{3, 4, 5, 255, 256, 259, 260, 1000, 100000} {
		files[fmt.Sprintf("run%d", n)] = bytes.Repeat([]byte{'a'}, n)
	}

	// Runs of every length from 1 to 600 of varying bytes, each run
	// differing from its neighbours.
	var runs []byte
	prev := -1
	for n := 1; n <= 600; n++ {
		c := r.Intn(256)
		if c == prev {
			c = (c + 1) % 256
		}
		prev = c
		runs = append(runs, bytes.Repeat([]byte{byte(c)}, n)...)
	}
	files["runs"] = runs

	rnd := make([]byte, 8000)
	for i := range rnd {
		rnd[i] = byte(r.Next())
	}
	files["random"] = rnd

	words := strings.Fields(`the of and to in is was that for on as with by he at
		from his an were are which this be or has had not first one their its new
		after who they have her she two been other when there all during into
		school time may years more most only over city some world would where
		later up such used many can state about national out known university
		united then made sequence read genome reference alignment quality base`)
	var text bytes.Buffer
	for text.Len() < 40000 {
		n := 5 + r.Intn(15)
		for i := range n {
			w := words[r.Intn(len(words))]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			text.WriteString(w)
			if i < n-1 {
				text.WriteByte(' ')
			}
		}
		text.WriteString(".\n")
	}
	files["text"] = text.Bytes()

	// With -1 a block holds at most 99,981 RLE1 symbols. 99,000 bases
	// (one symbol each) then 100,000 'Z's (5 symbols per 255 bytes) put
	// the first block boundary inside the run of Z, so the run continues
	// in the second block; the 'Y' run lands near the second boundary.
	var mb []byte
	mb = bases(mb, &r, 99000)
	mb = append(mb, bytes.Repeat([]byte{'Z'}, 100000)...)
	mb = bases(mb, &r, 99000)
	mb = append(mb, bytes.Repeat([]byte{'Y'}, 5000)...)
	mb = bases(mb, &r, 30000)
	files["multiblock"] = mb

	// Read names as CRAM stores them: NUL-terminated, from one run, in
	// increasing order with gaps.
	var names bytes.Buffer
	id := 1
	for names.Len() < 300000 {
		id += 1 + r.Intn(3)
		fmt.Fprintf(&names, "SRR062634.%d%c", id, 0)
	}
	files["names"] = names.Bytes()

	// Quality strings of 100 bases: binned Illumina-like values, mostly
	// high, dropping towards the end of a read.
	var qual []byte
	for len(qual) < 150000 {
		for i := range 100 {
			q := 37
			switch x := r.Intn(100); {
			case x < 4+i/5:
				q = 2 + r.Intn(10)
			case x < 15+i/4:
				q = 22 + r.Intn(6)
			case x < 35:
				q = 32 + r.Intn(3)
			}
			qual = append(qual, byte(q+33))
		}
	}
	files["qual"] = qual

	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}
