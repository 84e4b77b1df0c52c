package bam

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/internal/bgzftest"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/record"
)

// splitBAM splits an uncompressed BAM stream into header text, references
// and raw records (block_size prefix included).
func splitBAM(tb testing.TB, data []byte) (headerLen int, text []byte, refs []Reference, recs [][]byte) {
	tb.Helper()
	le := binary.LittleEndian
	if len(data) < 12 || string(data[:4]) != "BAM\x01" {
		tb.Fatal("not a BAM stream")
	}
	lt := int(le.Uint32(data[4:]))
	text = data[8 : 8+lt]
	p := 8 + lt
	n := int(le.Uint32(data[p:]))
	p += 4
	for range n {
		ln := int(le.Uint32(data[p:]))
		name := data[p+4 : p+4+ln-1]
		refs = append(refs, Reference{string(name), int64(le.Uint32(data[p+4+ln:]))})
		p += 8 + ln
	}
	headerLen = p
	for p < len(data) {
		bs := 4 + int(le.Uint32(data[p:]))
		recs = append(recs, data[p:p+bs])
		p += bs
	}
	return headerLen, text, refs, recs
}

// parseRecord decodes a BAM record into a record.Record, moving a CG:B:I
// tag back into the CIGAR like htslib's reader.
func parseRecord(b []byte) record.Record {
	le := binary.LittleEndian
	b = b[4:]
	lname := int(b[8])
	nc := int(le.Uint16(b[12:]))
	lseq := int(le.Uint32(b[16:]))
	r := record.Record{
		RefID: int32(le.Uint32(b[0:])), Pos: int64(int32(le.Uint32(b[4:]))), MapQ: b[9],
		Flags: le.Uint16(b[14:]), MateRefID: int32(le.Uint32(b[20:])), MatePos: int64(int32(le.Uint32(b[24:]))),
		TemplateLength: int64(int32(le.Uint32(b[28:]))),
	}
	p := 32
	r.Name = b[p : p+lname-1]
	p += lname
	for i := range nc {
		r.Cigar = append(r.Cigar, le.Uint32(b[p+4*i:]))
	}
	p += 4 * nc
	const codes = "=ACMGRSVTWYHKDBN"
	for i := range lseq {
		c := b[p+i/2]
		if i%2 == 0 {
			c >>= 4
		}
		r.Seq = append(r.Seq, codes[c&0xf])
	}
	p += (lseq + 1) / 2
	r.Qual = b[p : p+lseq]
	if lseq > 0 && r.Qual[0] == 0xff {
		r.Qual = nil // absent
	}
	p += lseq
	r.Aux = b[p:]
	if nc == 2 && r.Cigar[0] == uint32(lseq)<<4|4 {
		if i := bytes.Index(r.Aux, []byte("CGBI")); i >= 0 {
			n := int(le.Uint32(r.Aux[i+4:]))
			r.Cigar = r.Cigar[:0]
			for k := range n {
				r.Cigar = append(r.Cigar, le.Uint32(r.Aux[i+8+4*k:]))
			}
			r.Aux = r.Aux[:i]
		}
	}
	return r
}

// bamInputs returns uncompressed BAM streams written by samtools.
func bamInputs(tb testing.TB) map[string][]byte {
	tb.Helper()
	st := samtools(tb)
	dir := tb.TempDir()
	out := map[string][]byte{}
	for _, name := range []string{"ce#1000.sam", "ce#unmap2.sam", "c1#pad3.sam", "xx#large_aux.sam", "auxf#values.sam", "c1#noseq.sam", "ce#large_seq.sam"} {
		src := filepath.Join("/usr/share/htslib-test/test", name)
		if _, err := os.Stat(src); err != nil {
			continue
		}
		dst := filepath.Join(dir, name+".bam")
		run(tb, st, "view", "--no-PG", "-o", dst, src)
		file, err := os.ReadFile(dst)
		if err != nil {
			tb.Fatal(err)
		}
		if out[name], err = bgzftest.DecompressAll(file); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

// TestReencodeSamtoolsBAMs decodes every record of BAMs written by
// samtools and checks that AppendHeader, ParseHeaderRefs and AppendRecord
// reproduce them byte for byte.
func TestReencodeSamtoolsBAMs(t *testing.T) {
	inputs := bamInputs(t)
	dir := corpus.Dir(t)
	for _, p := range []string{"hts-specs/test/bam/passed/level-1.bam", "samtools-test/dat/test_input_1_a.bam", "htslib-test/range.bam"} {
		file, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if inputs[p], err = bgzftest.DecompressAll(file); err != nil {
			t.Fatal(err)
		}
	}
	for name, data := range inputs {
		t.Run(name, func(t *testing.T) {
			hl, text, refs, recs := splitBAM(t, data)
			if got := AppendHeader(nil, text, refs); !bytes.Equal(got, data[:hl]) {
				t.Fatalf("header differs at byte %d", firstDiff(got, data[:hl]))
			}
			if parsed, err := ParseHeaderRefs(text); err != nil {
				t.Fatal(err)
			} else if len(parsed) > 0 && !equalRefs(parsed, refs) {
				t.Fatalf("ParseHeaderRefs = %v, header has %v", parsed, refs)
			}
			var buf []byte
			for i, rec := range recs {
				r := parseRecord(rec)
				var err error
				buf, err = AppendRecord(buf[:0], &r)
				if err != nil {
					t.Fatalf("record %d (%s): %v", i, r.Name, err)
				}
				if !bytes.Equal(buf, rec) {
					t.Fatalf("record %d (%s) differs at byte %d", i, r.Name, firstDiff(buf, rec))
				}
			}
			if len(recs) == 0 {
				t.Fatal("no records")
			}
		})
	}
}

func equalRefs(a, b []Reference) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// level1Records loads the records of the corpus' level-1.bam.
func level1Records(b *testing.B) ([]record.Record, int) {
	file, err := os.ReadFile(filepath.Join(corpus.Dir(b), "hts-specs/test/bam/passed/level-1.bam"))
	if err != nil {
		b.Fatal(err)
	}
	data, err := bgzftest.DecompressAll(file)
	if err != nil {
		b.Fatal(err)
	}
	hl, _, _, raw := splitBAM(b, data)
	recs := make([]record.Record, len(raw))
	for i, r := range raw {
		recs[i] = parseRecord(r)
	}
	return recs, len(data) - hl
}

func BenchmarkAppendRecord(b *testing.B) {
	recs, size := level1Records(b)
	dst := make([]byte, 0, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		d := dst[:0]
		for i := range recs {
			var err error
			if d, err = AppendRecord(d, &recs[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkAppendRecordLongRead encodes records shaped like long reads:
// 10,000 bases with an insertion or deletion every 10 or so, 2,000 CIGAR
// operations each.
func BenchmarkAppendRecordLongRead(b *testing.B) {
	const n, reads = 10000, 64
	var cig []uint32
	q := 0
	for q < n {
		m := min(9, n-q)
		cig = append(cig, uint32(m)<<4)
		q += m
		if q < n {
			if len(cig)%4 == 1 {
				cig = append(cig, 1<<4|1) // 1I
				q++
			} else {
				cig = append(cig, 1<<4|2) // 1D
			}
		}
	}
	seq := bytes.Repeat([]byte("ACGT"), n/4)
	qual := bytes.Repeat([]byte{30}, n)
	recs := make([]record.Record, reads)
	for i := range recs {
		recs[i] = record.Record{Name: []byte("long-read"), RefID: 0, Pos: int64(i) * 100, MapQ: 60, Cigar: cig,
			MateRefID: -1, MatePos: -1, Seq: seq, Qual: qual, Aux: []byte("NMi\x01")}
	}
	dst, err := AppendRecord(nil, &recs[0])
	if err != nil {
		b.Fatal(err)
	}
	dst = make([]byte, 0, reads*len(dst))
	b.SetBytes(int64(cap(dst)))
	b.ReportAllocs()
	for b.Loop() {
		d := dst[:0]
		for i := range recs {
			if d, err = AppendRecord(d, &recs[i]); err != nil {
				b.Fatal(err)
			}
		}
	}
}
