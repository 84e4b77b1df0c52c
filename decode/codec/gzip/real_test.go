package gzip

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"

	"github.com/cramfs/cramfs/internal/corpus"
)

// realBig is the decoded size from which a real block is a sub-benchmark
// of its own; smaller ones are grouped.
const realBig = 100000

func realKey(src []byte) string { return "small" }

// BenchmarkDecodeReal decodes the real blocks dumped by
// internal/cmd/blockdump into the directory named by CRAMFS_CODEC_BLOCKS
// (for example /tmp/blocks/gzip): a sub-benchmark per block of 100,000
// decoded bytes or more, the smaller ones grouped.
func BenchmarkDecodeReal(b *testing.B) {
	corpus.BenchmarkAppendDecode(b, AppendDecode, realBig, realKey)
}

// BenchmarkKlauspostReal decodes the same blocks the way decode/block.go
// did before this package: a klauspost gzip.Reader reset onto a
// bytes.Reader for each block, read into a reused buffer until EOF.
func BenchmarkKlauspostReal(b *testing.B) {
	var k klauspostDecoder
	corpus.BenchmarkAppendDecode(b, k.appendDecode, realBig, realKey)
}

// klauspostDecoder is the gzip path of decode/block.go (inflater and
// readAllCapped), kept from block to block.
type klauspostDecoder struct {
	src bytes.Reader
	gz  *kgzip.Reader
}

func (k *klauspostDecoder) appendDecode(dst, src []byte, raw int) ([]byte, error) {
	k.src.Reset(src)
	if k.gz == nil {
		gz, err := kgzip.NewReader(&k.src)
		if err != nil {
			return dst, err
		}
		k.gz = gz
	} else if err := k.gz.Reset(&k.src); err != nil {
		return dst, err
	}
	base := len(dst)
	limit := base + raw
	buf := slices.Grow(dst, raw+1)
	for len(buf) <= limit {
		n, err := k.gz.Read(buf[len(buf) : limit+1])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return dst, err
		}
	}
	if len(buf) != limit {
		return dst, fmt.Errorf("decoded %d bytes, want %d", len(buf)-base, raw)
	}
	return buf, nil
}
