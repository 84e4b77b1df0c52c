package corpus

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// CodecVector is one row of codec_vectors_manifest.tsv: a compressed
// block payload and the raw input it must decode to.
type CodecVector struct {
	Compressed string // path of the compressed stream, relative to the corpus
	Codec      string // rans4x8, ransNx16, arith, fqzcomp, tok3
	RawInput   string // path of the raw input, relative to the corpus
	Result     string // OK when the stream must decode
	Params     string
	RawLen     int    // decoded length
	Transform  string // how the expected bytes derive from the raw input
}

// CodecVectors returns the manifest rows of codec in the corpus dir.
func CodecVectors(tb testing.TB, dir, codec string) []CodecVector {
	tb.Helper()
	f, err := os.Open(filepath.Join(dir, "codec_vectors_manifest.tsv"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var vs []CodecVector
	sc := bufio.NewScanner(f)
	for first := true; sc.Scan(); first = false {
		col := strings.Split(sc.Text(), "\t")
		if first || len(col) < 7 || col[1] != codec {
			continue
		}
		n, err := strconv.Atoi(col[5])
		if err != nil {
			tb.Fatalf("manifest raw_len %q: %v", col[5], err)
		}
		vs = append(vs, CodecVector{col[0], col[1], col[2], col[3], col[4], n, col[6]})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	if len(vs) == 0 {
		tb.Fatalf("no %s vectors in the manifest", codec)
	}
	return vs
}

// Input reads the vector's raw input, inflating .gz files.
func (v CodecVector) Input(tb testing.TB, dir string) []byte {
	tb.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, v.RawInput))
	if err != nil {
		tb.Fatal(err)
	}
	if strings.HasSuffix(v.RawInput, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			tb.Fatal(err)
		}
		if raw, err = io.ReadAll(zr); err != nil {
			tb.Fatal(err)
		}
	}
	return raw
}

// Expected derives the decoded bytes of a rANS or arithmetic coder vector
// from its raw input as the manifest says: "first-col,no-newlines" keeps
// each line's first tab-separated field with the newlines removed,
// "as-is" keeps the bytes.
func (v CodecVector) Expected(tb testing.TB, dir string) []byte {
	tb.Helper()
	raw := v.Input(tb, dir)
	switch v.Transform {
	case "as-is":
		return raw
	case "first-col,no-newlines":
		var out []byte
		for _, line := range bytes.SplitAfter(raw, []byte("\n")) {
			line = bytes.TrimSuffix(line, []byte("\n"))
			if k := bytes.IndexByte(line, '\t'); k >= 0 {
				line = line[:k]
			}
			out = append(out, line...)
		}
		return out
	}
	tb.Fatalf("unknown raw_transform %q", v.Transform)
	return nil
}

// DecodableCodecVectors returns the manifest rows of codec whose stream
// must decode (result OK).
func DecodableCodecVectors(tb testing.TB, dir, codec string) []CodecVector {
	tb.Helper()
	var vs []CodecVector
	for _, v := range CodecVectors(tb, dir, codec) {
		if v.Result == "OK" {
			vs = append(vs, v)
		}
	}
	return vs
}
