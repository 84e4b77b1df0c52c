package decode

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"testing"
)

// putUint7 encodes v as CRAM 4.0's uint7: 7 bits a byte, most
// significant first, the top bit set on all but the last byte.
func putUint7(v uint64) []byte {
	n := 1
	for x := v >> 7; x != 0; x >>= 7 {
		n++
	}
	b := make([]byte, n)
	for i := n - 1; i >= 0; i-- {
		b[i] = byte(v & 0x7f)
		if i != n-1 {
			b[i] |= 0x80
		}
		v >>= 7
	}
	return b
}

// putSint7 encodes v as sint7 (uint7 of the zig-zag value).
func putSint7(v int64) []byte { return putUint7(uint64(v<<1) ^ uint64(v>>63)) }

func TestUint7KnownBytes(t *testing.T) {
	for _, c := range []struct {
		b []byte
		v uint64
	}{
		{[]byte{0x00}, 0}, {[]byte{0x7f}, 127}, {[]byte{0x81, 0x00}, 128},
		{[]byte{0x82, 0x2c}, 300}, {[]byte{0xff, 0x7f}, 16383}, {[]byte{0x81, 0x80, 0x00}, 16384},
	} {
		pos := 0
		v, err := readUint7u64(c.b, &pos)
		if err != nil || v != c.v || pos != len(c.b) {
			t.Errorf("% x: %d (pos %d, %v), want %d", c.b, v, pos, err, c.v)
		}
	}
	// sint7: 0, -1, 1, -2, 2 are 0, 1, 2, 3, 4.
	for u, want := range []int32{0, -1, 1, -2, 2} {
		pos := 0
		if v, err := readSint7s32([]byte{byte(u)}, &pos); err != nil || v != want {
			t.Errorf("sint7 %d: %d, %v, want %d", u, v, err, want)
		}
	}
}

func TestUint7RoundTrip(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 1<<14 - 1, 1 << 14, 1 << 21, 1<<28 - 1, 1 << 28, math.MaxUint32, 1 << 35, 1<<63 + 5, math.MaxUint64} {
		b := putUint7(v)
		pos := 0
		got, err := readUint7u64(b, &pos)
		if err != nil || got != v || pos != len(b) {
			t.Errorf("uint7 %d (% x): %d, pos %d, %v", v, b, got, pos, err)
		}
		if v <= math.MaxUint32 {
			pos = 0
			if got, err := readUint7u32(b, &pos); err != nil || uint64(got) != v {
				t.Errorf("uint7 %d as 32 bits: %d, %v", v, got, err)
			}
		}
	}
	for _, v := range []int64{0, -1, 1, math.MinInt32, math.MaxInt32, math.MinInt64, math.MaxInt64, -1 << 40} {
		pos := 0
		if got, err := readSint7s64(putSint7(v), &pos); err != nil || got != v {
			t.Errorf("sint7 %d: %d, %v", v, got, err)
		}
	}
}

func TestUint7Malformed(t *testing.T) {
	for _, b := range [][]byte{nil, {0x80}, {0xff, 0xff}, {0x81, 0x81, 0x81, 0x81, 0x81, 0x01}} {
		pos := 0
		if _, err := readUint7u32(b, &pos); !errors.Is(err, ErrCorrupt) {
			t.Errorf("% x: err %v, want ErrCorrupt", b, err)
		}
	}
	// 64 bits take at most 10 bytes.
	b := append(putUint7(math.MaxUint64)[:9], 0x81, 0x00)
	pos := 0
	if _, err := readUint7u64(b, &pos); !errors.Is(err, ErrCorrupt) {
		t.Errorf("11-byte uint7: err %v, want ErrCorrupt", err)
	}
}

func FuzzUint7(f *testing.F) {
	f.Add([]byte{0x82, 0x2c})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		pos := 0
		v, err := readUint7u64(b, &pos)
		if err != nil {
			return
		}
		if pos < 1 || pos > 10 || pos > len(b) {
			t.Fatalf("consumed %d of %d bytes", pos, len(b))
		}
		p2 := 0
		if w, err := readUint7u64(putUint7(v), &p2); err != nil || w != v {
			t.Fatalf("round trip of %d: %d, %v", v, w, err)
		}
	})
}

// containerHeader4 builds a CRAM 4.0 container header as htslib 1.16
// writes one.
func containerHeader4(length uint32, ref int32, start, span uint64, nrec uint32, counter, bases uint64, nblocks uint32, landmarks []uint32) []byte {
	var b []byte
	b = append(b, putUint7(uint64(length))...)
	b = append(b, putSint7(int64(ref))...)
	b = append(b, putUint7(start)...)
	b = append(b, putUint7(span)...)
	b = append(b, putUint7(uint64(nrec))...)
	b = append(b, putUint7(counter)...)
	b = append(b, putUint7(bases)...)
	b = append(b, putUint7(uint64(nblocks))...)
	b = append(b, putUint7(uint64(len(landmarks)))...)
	for _, l := range landmarks {
		b = append(b, putUint7(uint64(l))...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

func TestContainerHeader4(t *testing.T) {
	b := containerHeader4(1000, -2, 1<<33, 5000, 42, 1<<40, 123456, 7, []uint32{0, 300, 700})
	h, err := parseContainerHeader(b, 26, 4)
	if err != nil {
		t.Fatal(err)
	}
	if h.Length != 1000 || h.RefSeqID != -2 || h.RefStart != 1<<33 || h.AlignmentSpan != 5000 || h.NumRecords != 42 ||
		h.RecordCounter != 1<<40 || h.Bases != 123456 || h.NumBlocks != 7 || len(h.Landmarks) != 3 || h.Landmarks[2] != 700 ||
		h.HeaderSize != len(b) || h.DataOffset() != 26+int64(len(b)) {
		t.Errorf("parsed %+v", h)
	}
	// The CRC32 covers the length too.
	c := append([]byte{}, b...)
	c[0] ^= 1
	if _, err := parseContainerHeader(c, 26, 4); !errors.Is(err, ErrChecksum) {
		t.Errorf("length changed: err %v, want ErrChecksum", err)
	}
	// Read as CRAM 3 (a little-endian int32 length), the same bytes fail.
	if _, err := parseContainerHeader(b, 26, 3); err == nil {
		t.Errorf("CRAM 4.0 header parsed as CRAM 3")
	}
	if _, err := parseContainerHeader(b[:len(b)-1], 26, 4); !errors.Is(err, ErrCorrupt) {
		t.Errorf("cut short: err %v, want ErrCorrupt", err)
	}
	eof := containerHeader4(15, -1, 4542278, 0, 0, 0, 0, 1, nil)
	if h, err := parseContainerHeader(eof, 0, 4); err != nil || !h.isEOF() {
		t.Errorf("EOF container: %+v, %v", h, err)
	}
}

func TestSliceHeader4(t *testing.T) {
	var b []byte
	b = append(b, putSint7(-2)...)
	b = append(b, putUint7(1<<34)...) // start
	b = append(b, putUint7(99)...)    // span
	b = append(b, putUint7(3)...)     // records
	b = append(b, putUint7(1<<36)...) // record counter
	b = append(b, putUint7(2)...)     // blocks
	b = append(b, putUint7(2)...)     // content ids
	b = append(b, putUint7(11)...)
	b = append(b, putUint7(300)...)
	b = append(b, putUint7(0)...) // no embedded reference
	b = append(b, make([]byte, 16)...)
	h, err := parseSliceHeader(b, 4)
	if err != nil {
		t.Fatal(err)
	}
	if h.RefSeqID != -2 || h.RefStart != 1<<34 || h.RefSpan != 99 || h.NumRecords != 3 || h.RecordCounter != 1<<36 ||
		h.NumBlocks != 2 || len(h.ContentIDs) != 2 || h.ContentIDs[1] != 300 || h.EmbeddedRefID != -1 {
		t.Errorf("parsed %+v", h)
	}
	// A non-zero id names the embedded reference's block.
	b[len(b)-17] = 5
	if h, err := parseSliceHeader(b, 4); err != nil || h.EmbeddedRefID != 5 {
		t.Errorf("embedded reference 5: %d, %v", h.EmbeddedRefID, err)
	}
	if _, err := parseSliceHeader(b[:len(b)-1], 4); !errors.Is(err, ErrCorrupt) {
		t.Errorf("MD5 cut short: err %v, want ErrCorrupt", err)
	}
}

// FuzzContainerHeader parses arbitrary container headers of each major
// version: no panic, and what parses is consistent.
func FuzzContainerHeader(f *testing.F) {
	f.Add(containerHeader4(1000, 3, 1, 5000, 42, 7, 123456, 7, []uint32{0, 300}), uint8(4))
	f.Add(containerHeader4(15, -1, 4542278, 0, 0, 0, 0, 1, nil), uint8(4))
	f.Add([]byte{0x0f, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0xe0, 0x45, 0x4f, 0x46, 0, 0, 0, 0, 1, 0, 5, 0xbd, 0xd9, 0x4f}, uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, major uint8) {
		m := int(major%3) + 2
		h, err := parseContainerHeader(b, 0, m)
		if err != nil {
			return
		}
		if h.HeaderSize > len(b) || h.HeaderSize < 4 || h.Length < 0 || h.NumRecords < 0 || h.NumBlocks < 0 {
			t.Fatalf("CRAM %d: %+v from %d bytes", m, h, len(b))
		}
	})
}

// FuzzSliceHeader parses arbitrary slice headers of each major version.
func FuzzSliceHeader(f *testing.F) {
	f.Add(append([]byte{0, 1, 99, 3, 0, 2, 2, 11, 12, 0}, make([]byte, 16)...), uint8(4))
	f.Add(append([]byte{0, 1, 99, 3, 0, 2, 2, 11, 12, 0xff, 0xff, 0xff, 0xff, 0x0f}, make([]byte, 16)...), uint8(3))
	f.Fuzz(func(t *testing.T, b []byte, major uint8) {
		m := int(major%3) + 2
		h, err := parseSliceHeader(b, m)
		if err != nil {
			return
		}
		if h.RefStart < 0 || h.RefSpan < 0 || h.NumRecords < 0 || h.NumBlocks < 0 || len(h.ContentIDs) > len(b) ||
			m >= 4 && h.EmbeddedRefID == 0 {
			t.Fatalf("CRAM %d: %+v from %d bytes", m, h, len(b))
		}
	})
}
