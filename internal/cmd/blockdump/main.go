// Command blockdump writes the compressed blocks of a CRAM file, one file
// per block, grouped by codec, so codec benchmarks can run on real data:
//
//	go run ./internal/cmd/blockdump -o /tmp/blocks -max 4 x.cram
//
// writes /tmp/blocks/<codec>/<stem>.c<container>.b<n>.<rawsize> holding
// the block's data exactly as stored (what the codec's Decode takes), for
// every block of the first -max data containers. Records are decoded
// against a reference of Ns with MD5 checks off: only the blocks matter.
//
// Gzip blocks (method 1) are not decoded through a pluggable codec, so
// they are found by walking the container's block framing (gzip.go) and
// written to <out>/gzip.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/cramfs/cramfs/decode"
)

// nRef is a reference of Ns of unknown length.
type nRef struct{}

func (nRef) Bases(dst []byte, _ int, start, end int64) ([]byte, error) {
	for i := start; i < end; i++ {
		dst = append(dst, 'N')
	}
	return dst, nil
}

func (nRef) Length(int) int64 { return -1 }

func main() {
	out := flag.String("o", "blocks", "output directory")
	maxPer := flag.Int("max", 4, "data containers dumped per file")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: blockdump [-o DIR] [-max N] X.cram...")
		os.Exit(2)
	}
	for _, name := range flag.Args() {
		if err := dump(name, *out, *maxPer); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func dump(name, out string, maxPer int) error {
	fh, err := os.Open(name)
	if err != nil {
		return err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return err
	}
	f, err := decode.Open(name, fh, fi.Size(), decode.OpenOptions{AllowMissingEOF: true})
	if err != nil {
		return err
	}
	stem := strings.TrimSuffix(filepath.Base(name), ".cram")
	kept := map[string]int{}
	container := 0
	var werr error
	wrap := func(codec string, dec decode.AppendDecoder) decode.AppendDecoder {
		return func(dst, src []byte, raw int) ([]byte, error) {
			res, err := dec(dst, src, raw)
			if err != nil {
				return res, err
			}
			n := kept[codec]
			kept[codec] = n + 1
			dir := filepath.Join(out, codec)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				werr = err
			}
			p := filepath.Join(dir, fmt.Sprintf("%s.c%d.b%d.%d", stem, container, n, raw))
			if err := os.WriteFile(p, src, 0o644); err != nil {
				werr = err
			}
			return res, nil
		}
	}
	c := decode.DefaultCodecs()
	codecs := decode.Codecs{
		RANS4x8:  wrap("r4x8", c.RANS4x8),
		RANSNx16: wrap("r4x16", c.RANSNx16),
		Arith:    wrap("arith", c.Arith),
		FQZComp:  wrap("fqzcomp", c.FQZComp),
		Tok3:     wrap("tok3", c.Tok3),
	}
	d := f.NewDecoder(decode.DecoderOptions{Reference: nRef{}, Codecs: &codecs, IgnoreMD5: true})
	done := 0
	for i := range f.Containers {
		if f.Containers[i].NumRecords == 0 {
			continue
		}
		if done >= maxPer {
			break
		}
		done++
		container = i
		if err := dumpGzip(fh, f, i, filepath.Join(out, "gzip"), stem); err != nil {
			return fmt.Errorf("%s: container %d: %w", name, i, err)
		}
		if _, err := d.Container(i); err != nil {
			fmt.Fprintf(os.Stderr, "%s: container %d: %v (blocks before it kept)\n", name, i, err)
		}
	}
	return werr
}
