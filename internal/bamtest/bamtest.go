// Package bamtest walks BAM files for the index tests: records with the
// BGZF virtual offsets samtools index sees, and a samtools runner.
package bamtest

import (
	"encoding/binary"
	"os/exec"
	"sort"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/encode/bam"
	"github.com/cramfs/cramfs/internal/bgzftest"
	"github.com/cramfs/cramfs/internal/corpus"
)

// HTSlibTest holds the SAM files of Debian's htslib-test package.
const HTSlibTest = "/usr/share/htslib-test/test"

// Record is one BAM record with the virtual offsets bgzf_tell reports
// before and after reading it.
type Record struct {
	RefID      int32
	Beg, End   int64
	Flags      uint16
	VBeg, VEnd uint64
}

// File is a decompressed BAM: its reference count and longest reference,
// its records and the virtual offset after the last one.
type File struct {
	NRef   int
	MaxLen int64
	Recs   []Record
	Final  uint64
}

// Read decompresses a BAM file block by block. A position of the
// uncompressed stream has the virtual offset of the data block holding it;
// the end of the stream names the block after the last data block
// (normally the EOF block), as bgzf_tell does.
func Read(tb testing.TB, file []byte) File {
	tb.Helper()
	type block struct {
		coff   uint64
		ustart int
		ulen   int
	}
	var blocks []block
	var data []byte
	var coff uint64
	lastEnd := uint64(len(file))
	for rest := file; len(rest) > 0; {
		start := len(data)
		var n int
		var err error
		data, n, err = bgzftest.DecodeBlock(data, rest)
		if err != nil {
			tb.Fatalf("BGZF block at %d: %v", coff, err)
		}
		if len(data) > start {
			blocks = append(blocks, block{coff, start, len(data) - start})
			lastEnd = coff + uint64(n)
		}
		coff += uint64(n)
		rest = rest[n:]
	}
	voff := func(p int) uint64 {
		i := sort.Search(len(blocks), func(i int) bool { return blocks[i].ustart+blocks[i].ulen > p })
		if i == len(blocks) {
			return lastEnd << 16
		}
		return blocks[i].coff<<16 | uint64(p-blocks[i].ustart)
	}
	le := binary.LittleEndian
	if len(data) < 12 || string(data[:4]) != "BAM\x01" {
		tb.Fatal("not a BAM stream")
	}
	var f File
	p := 8 + int(le.Uint32(data[4:]))
	f.NRef = int(le.Uint32(data[p:]))
	p += 4
	for range f.NRef {
		p += 4 + int(le.Uint32(data[p:]))
		f.MaxLen = max(f.MaxLen, int64(le.Uint32(data[p:])))
		p += 4
	}
	for p < len(data) {
		tid, pos, end, flags, err := bam.RecordInfo(data[p:])
		if err != nil {
			tb.Fatalf("record at %d: %v", p, err)
		}
		n := 4 + int(le.Uint32(data[p:]))
		f.Recs = append(f.Recs, Record{tid, pos, end, flags, voff(p), voff(p + n)})
		p += n
	}
	f.Final = voff(len(data))
	return f
}

// Samtools returns the samtools path, or skips (fails under CI) without it.
func Samtools(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("samtools")
	if err != nil {
		corpus.Missing(tb, "samtools: %v", err)
	}
	return p
}

// Run runs a command, failing the test with its output when it fails.
func Run(tb testing.TB, name string, args ...string) {
	tb.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = corpus.NoRefEnv(tb)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}
