package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cramfs/cramfs/decode"
)

// dumpGzip writes the gzip (method 1) blocks of container i of f to dir,
// named <stem>.c<i>.b<n>.<rawsize> like the other codecs' blocks. A
// container's data is a sequence of blocks (CRAMv3 §7, §8): the
// compression header block, then each slice's header and data blocks,
// so the framing alone finds them all.
func dumpGzip(r io.ReaderAt, f *decode.File, i int, dir, stem string) error {
	h := &f.Containers[i]
	if h.Length < 0 || h.Length > decode.MaxBlockSize {
		return fmt.Errorf("container length %d", h.Length)
	}
	data := make([]byte, h.Length)
	if _, err := r.ReadAt(data, h.DataOffset()); err != nil {
		return err
	}
	n := 0
	for pos := 0; pos < len(data); {
		method, raw, body, next, err := nextBlock(data, pos, f.Def.Major)
		if err != nil {
			return fmt.Errorf("block at container byte %d: %w", pos, err)
		}
		pos = next
		if method != byte(decode.MethodGzip) {
			continue
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		p := filepath.Join(dir, fmt.Sprintf("%s.c%d.b%d.%d", stem, i, n, raw))
		if err := os.WriteFile(p, body, 0o644); err != nil {
			return err
		}
		n++
	}
	return nil
}

// nextBlock parses the block framing at b[pos:] (CRAMv3 §8): method,
// content type, content id, compressed and raw sizes as ITF-8, the data,
// and from major version 3 a CRC32, which is not checked here.
func nextBlock(b []byte, pos, major int) (method byte, raw int, body []byte, next int, err error) {
	if pos+2 > len(b) {
		return 0, 0, nil, 0, io.ErrUnexpectedEOF
	}
	method = b[pos]
	pos += 2
	var v [3]int
	for k := range v {
		if v[k], pos, err = itf8(b, pos); err != nil {
			return 0, 0, nil, 0, err
		}
	}
	size, raw := v[1], v[2]
	if size < 0 || size > len(b)-pos {
		return 0, 0, nil, 0, fmt.Errorf("%d bytes declared, %d remain", size, len(b)-pos)
	}
	body = b[pos : pos+size]
	pos += size
	if major >= 3 {
		pos += 4
	}
	return method, raw, body, pos, nil
}

// itf8 decodes the ITF-8 integer (CRAMv3 §2.3) at b[pos:].
func itf8(b []byte, pos int) (int, int, error) {
	if pos >= len(b) {
		return 0, 0, io.ErrUnexpectedEOF
	}
	c := b[pos]
	n := 1
	for n < 5 && c&(0x80>>(n-1)) != 0 {
		n++
	}
	if pos+n > len(b) {
		return 0, 0, io.ErrUnexpectedEOF
	}
	var buf [5]byte
	copy(buf[:], b[pos:pos+n])
	var v uint32
	switch n {
	case 1:
		v = uint32(c)
	case 5:
		v = uint32(c&0x0f)<<28 | uint32(buf[1])<<20 | uint32(buf[2])<<12 | uint32(buf[3])<<4 | uint32(buf[4]&0x0f)
	default:
		// n-1 whole bytes follow the 8-n payload bits of the first.
		v = uint32(c) & (0xff >> n)
		for _, x := range buf[1:n] {
			v = v<<8 | uint32(x)
		}
	}
	return int(int32(v)), pos + n, nil
}
