package gzip

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"testing"

	"github.com/cramfs/cramfs/internal/splitmix"
)

// TestDistance32768 checks the longest distance, against exactly as much
// output and one byte less.
func TestDistance32768(t *testing.T) {
	r := splitmix.Rand(7)
	hist := make([]byte, 32768)
	for i := range hist {
		hist[i] = byte(r.Next())
	}
	for _, n := range []int{32768, 32767} {
		var w bitWriter
		// Stored blocks of the history, then a fixed block with a
		// 258-byte match at distance 24577+8191.
		for off := 0; off < n; off += 20000 {
			k := min(20000, n-off)
			w.bits(0, 3)
			w.align()
			w.bits(uint64(k)|uint64(^uint16(k))<<16, 32)
			w.out = append(w.out, hist[off:off+k]...)
		}
		w.bits(0b011, 3)
		fixedLitCode(&w, 285)
		w.code(29, 5)
		w.bits(8191, 13)
		fixedLitCode(&w, 256)
		raw := append(bytes.Clone(hist[:n]), hist[:258]...)
		ok := checkAgainstOracle(t, fmt.Sprintf("history%d", n), member(w.bytes(), raw))
		if ok != (n == 32768) {
			t.Errorf("distance 32768 after %d bytes: accepted %v", n, ok)
		}
	}
}

// smallStreams are a few short streams of every block type for the
// exhaustive truncation and bit flip tests.
func smallStreams() map[string][]byte {
	data := []byte("a short text, a short text with repeats: abcabcabcabcabcabc, and some more text")
	m := map[string][]byte{}
	m["stored"] = member(compressors[2].f(data), data)          // flate level 0
	m["fixed"] = member(compressors[3].f(data[:30]), data[:30]) // level 1, short: fixed
	m["dynamic"] = member(compressors[11].f(bytes.Repeat(data, 5)), bytes.Repeat(data, 5))
	m["huffman-only"] = member(compressors[0].f(data), data)
	var w bitWriter
	out := craftedCases()[18].block(&w, true) // dynamic-match
	m["crafted-dynamic"] = member(w.bytes(), out)
	m["two-members"] = append(bytes.Clone(m["fixed"]), m["stored"]...)
	return m
}

// TestTruncated cuts small streams at every length: each prefix is
// rejected, as by klauspost's reader.
func TestTruncated(t *testing.T) {
	for name, src := range smallStreams() {
		if !checkAgainstOracle(t, name, src) {
			t.Fatalf("%s: rejected whole", name)
		}
		for n := range len(src) {
			cut := src[:n]
			if name == "two-members" && n == len(smallStreams()["fixed"]) {
				continue // the first member alone is valid
			}
			if checkAgainstOracle(t, fmt.Sprintf("%s[:%d]", name, n), cut) {
				t.Errorf("%s cut to %d bytes is accepted", name, n)
			}
		}
	}
}

// TestBitFlips flips every bit of small streams and checks the result
// against klauspost's reader (most are rejected by the trailer's CRC, if
// not before; a flip in an ignored field is accepted).
func TestBitFlips(t *testing.T) {
	for name, src := range smallStreams() {
		accepted := 0
		for i := range 8 * len(src) {
			bad := bytes.Clone(src)
			bad[i/8] ^= 1 << (i % 8)
			if checkAgainstOracle(t, fmt.Sprintf("%s^bit%d", name, i), bad) {
				accepted++
			}
		}
		t.Logf("%s: %d of %d flips accepted", name, accepted, 8*len(src))
	}
}

// TestRawSize checks the expected size: exact is accepted; smaller fails
// without writing past rawSize bytes of dst's spare capacity; larger
// fails; -1 takes any length; below -1 is an error.
func TestRawSize(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789abcdef"), 5000)
	for _, c := range compressors {
		src := member(c.f(data), data)
		for _, raw := range []int{len(data), len(data) - 1, len(data) / 2, 0, 300, len(data) + 1, 2 * len(data)} {
			name := fmt.Sprintf("%s/raw%d", c.name, raw)
			// A dst with a prefix and spare capacity beyond raw,
			// filled with a sentinel.
			buf := bytes.Repeat([]byte{0xee}, 5+len(data)+1000)
			copy(buf, "head:")
			dst := buf[:5]
			got, err := AppendDecode(dst, src, raw)
			if raw == len(data) {
				if err != nil || !bytes.Equal(got[5:], data) || string(got[:5]) != "head:" {
					t.Errorf("%s: %d bytes, %v", name, len(got), err)
				}
				if &got[0] != &buf[0] {
					t.Errorf("%s: did not decode into dst", name)
				}
				continue
			}
			if err == nil {
				t.Errorf("%s: accepted %d bytes", name, len(got))
				continue
			}
			if !errors.Is(err, ErrCorrupt) || len(got) != 5 || &got[0] != &buf[0] {
				t.Errorf("%s: error %v, returned %d bytes", name, err, len(got))
			}
			if raw < len(data) {
				for i, b := range buf[5+raw:] {
					if b != 0xee {
						t.Fatalf("%s: byte %d past rawSize written", name, i)
					}
				}
			}
		}
		got, err := AppendDecode(nil, src, -1)
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s/unknown: %d bytes, %v", c.name, len(got), err)
		}
		// Unknown size into a small dst: grows as output is produced.
		got, err = AppendDecode(make([]byte, 2, 10), src, -1)
		if err != nil || !bytes.Equal(got[2:], data) {
			t.Errorf("%s/unknown-small-dst: %d bytes, %v", c.name, len(got), err)
		}
		// Known size, too little room in dst: one allocation.
		got, err = AppendDecode(make([]byte, 2, 100), src, len(data))
		if err != nil || !bytes.Equal(got[2:], data) {
			t.Errorf("%s/small-dst: %d bytes, %v", c.name, len(got), err)
		}
	}
	if _, err := decodeNew(member(compressors[5].f(data), data), -2); !errors.Is(err, ErrCorrupt) {
		t.Errorf("rawSize -2: %v", err)
	}
	if out, err := decodeNew(member(compressors[5].f(nil), nil), 0); err != nil || out == nil || len(out) != 0 {
		t.Errorf("empty member: %q, %v", out, err)
	}
}

// TestRawSizeBoundsAllocation decodes a stream claiming a huge size: the
// buffer allocated up front is bounded by what the input can expand to,
// not by the claim.
func TestRawSizeBoundsAllocation(t *testing.T) {
	data := []byte("tiny")
	src := member(compressors[5].f(data), data)
	decodeNew(src, len(data)) // fill the pool
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := decodeNew(src, 1<<30); err == nil {
		t.Fatal("accepted")
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("allocated %d bytes", n)
	}
}

// TestZeroAllocs checks that decoding into a dst with room allocates
// nothing once the pool holds the working memory.
func TestZeroAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under -race")
	}
	data := shapes()[12].data // mixed
	for _, c := range compressors {
		src := member(c.f(data), data)
		dst := make([]byte, 0, len(data))
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := AppendDecode(dst, src, len(data)); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per call", c.name, allocs)
		}
	}
}
