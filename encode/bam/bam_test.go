package bam

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/internal/bgzftest"
	"github.com/cramfs/cramfs/internal/corpus"
	"github.com/cramfs/cramfs/internal/record"
)

func samtools(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("samtools")
	if err != nil {
		corpus.Missing(tb, "samtools: %v", err)
	}
	return p
}

func run(tb testing.TB, name string, args ...string) []byte {
	tb.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Env = corpus.NoRefEnv(tb)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return out
}

// aux builds BAM-encoded auxiliary fields.
type aux []byte

func (a aux) tag(tag string, typ byte) aux { return append(append(a, tag...), typ) }
func (a aux) A(tag string, c byte) aux     { return append(a.tag(tag, 'A'), c) }
func (a aux) c(tag string, v int8) aux     { return append(a.tag(tag, 'c'), byte(v)) }
func (a aux) C(tag string, v uint8) aux    { return append(a.tag(tag, 'C'), v) }
func (a aux) s(tag string, v int16) aux {
	return binary.LittleEndian.AppendUint16(a.tag(tag, 's'), uint16(v))
}
func (a aux) S(tag string, v uint16) aux { return binary.LittleEndian.AppendUint16(a.tag(tag, 'S'), v) }
func (a aux) i(tag string, v int32) aux {
	return binary.LittleEndian.AppendUint32(a.tag(tag, 'i'), uint32(v))
}
func (a aux) I(tag string, v uint32) aux { return binary.LittleEndian.AppendUint32(a.tag(tag, 'I'), v) }
func (a aux) f(tag string, v float32) aux {
	return binary.LittleEndian.AppendUint32(a.tag(tag, 'f'), math.Float32bits(v))
}
func (a aux) Z(tag, v string) aux { return append(append(a.tag(tag, 'Z'), v...), 0) }
func (a aux) H(tag, v string) aux { return append(append(a.tag(tag, 'H'), v...), 0) }

// B appends a B array; vals are stored with the element size of sub.
func (a aux) B(tag string, sub byte, vals ...float64) aux {
	a = binary.LittleEndian.AppendUint32(append(a.tag(tag, 'B'), sub), uint32(len(vals)))
	for _, v := range vals {
		switch sub {
		case 'c', 'C':
			a = append(a, byte(int64(v)))
		case 's', 'S':
			a = binary.LittleEndian.AppendUint16(a, uint16(int64(v)))
		case 'i', 'I':
			a = binary.LittleEndian.AppendUint32(a, uint32(int64(v)))
		case 'f':
			a = binary.LittleEndian.AppendUint32(a, math.Float32bits(float32(v)))
		}
	}
	return a
}

// cigar parses a SAM CIGAR string into BAM ops.
func cigar(s string) []uint32 {
	var ops []uint32
	n := uint32(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= '0' && c <= '9' {
			n = n*10 + uint32(c-'0')
			continue
		}
		ops = append(ops, n<<4|uint32(strings.IndexByte("MIDNSHP=X", c)))
		n = 0
	}
	return ops
}

func quals(q string) []byte {
	b := []byte(q)
	for i := range b {
		b[i] -= 33
	}
	return b
}

const testHeader = "@HD\tVN:1.6\tSO:unsorted\n@SQ\tSN:chr1\tLN:1000000\n@SQ\tSN:chr2\tLN:500000\tAN:two\n@CO\tmade by the cramfs bam tests\n"

type samCase struct {
	name string
	rec  record.Record
	sam  string // the line samtools view prints
}

func handBuilt() []samCase {
	allAux := aux(nil).A("XA", 'x').c("Xc", -5).C("XC", 200).s("Xs", -300).S("XS", 60000).
		i("Xi", -70000).I("XI", 3000000000).f("XF", 1.5).Z("XZ", "hello world").H("XH", "1AE301").
		B("Bc", 'c', -1, 2, -128).B("BC", 'C', 255, 0).B("Bs", 's', -32768, 5).B("BS", 'S', 65535).
		B("Bi", 'i', -2147483648, 7).B("BI", 'I', 4294967295).B("Bf", 'f', 0.5, -2.25).B("Be", 'c')
	allAuxSAM := "XA:A:x\tXc:i:-5\tXC:i:200\tXs:i:-300\tXS:i:60000\tXi:i:-70000\tXI:i:3000000000\tXF:f:1.5\t" +
		"XZ:Z:hello world\tXH:H:1AE301\tBc:B:c,-1,2,-128\tBC:B:C,255,0\tBs:B:s,-32768,5\tBS:B:S,65535\t" +
		"Bi:B:i,-2147483648,7\tBI:B:I,4294967295\tBf:B:f,0.5,-2.25\tBe:B:c"

	rng := rand.New(rand.NewPCG(3, 4))
	var longSeq []byte
	var longCigar strings.Builder
	for range 35000 {
		longSeq = append(longSeq, "ACGT"[rng.IntN(4)], "ACGT"[rng.IntN(4)])
		longCigar.WriteString("1M1I")
	}
	longName := strings.Repeat("n", 254)

	return []samCase{
		{"all aux types", record.Record{Name: []byte("r1"), Flags: 99, RefID: 0, Pos: 99, MapQ: 60,
			Cigar: cigar("3S5M2I4M1D3M2H"), MateRefID: 0, MatePos: 299, TemplateLength: 214,
			Seq: []byte("ACGTNacgtRYKMSWBD"), Qual: quals("!#%'),-./0123456I"), Aux: allAux},
			"r1\t99\tchr1\t100\t60\t3S5M2I4M1D3M2H\t=\t300\t214\tACGTNACGTRYKMSWBD\t!#%'),-./0123456I\t" + allAuxSAM},
		{"unmapped placed", record.Record{Name: []byte("u1"), Flags: 4, RefID: 1, Pos: 999, MateRefID: -1, MatePos: -1,
			Seq: []byte("ACGTA")}, "u1\t4\tchr2\t1000\t0\t*\t*\t0\t0\tACGTA\t*"},
		{"unmapped unplaced", record.Record{Name: []byte("u2"), Flags: 4, RefID: -1, Pos: -1, MateRefID: -1, MatePos: -1,
			Seq: []byte("NNNN"), Qual: []byte{2, 2, 2, 2}}, "u2\t4\t*\t0\t0\t*\t*\t0\t0\tNNNN\t####"},
		{"no sequence", record.Record{Name: []byte("s1"), RefID: 0, Pos: 4999, MapQ: 30, Cigar: cigar("10M"),
			MateRefID: -1, MatePos: -1}, "s1\t0\tchr1\t5000\t30\t10M\t*\t0\t0\t*\t*"},
		{"longest name", record.Record{Name: []byte(longName), Flags: 4, RefID: -1, Pos: -1, MateRefID: -1, MatePos: -1,
			Seq: []byte("A"), Qual: []byte{30}}, longName + "\t4\t*\t0\t0\t*\t*\t0\t0\tA\t?"},
		{"empty name", record.Record{Flags: 4, RefID: -1, Pos: -1, MateRefID: -1, MatePos: -1},
			"*\t4\t*\t0\t0\t*\t*\t0\t0\t*\t*"},
		{"no reference span", record.Record{Name: []byte("c1"), Flags: 16, RefID: 0, Pos: 6, Cigar: cigar("4S"),
			MateRefID: -1, MatePos: -1, Seq: []byte("ACGT")}, "c1\t16\tchr1\t7\t0\t4S\t*\t0\t0\tACGT\t*"},
		{"large deletion", record.Record{Name: []byte("d1"), Flags: 1, RefID: 1, Pos: 99, MapQ: 10,
			Cigar: cigar("5M100000D5M"), MateRefID: 1, MatePos: 199, TemplateLength: -50,
			Seq: []byte("AAAAACCCCC"), Qual: quals("IIIIIIIIII"), Aux: aux(nil).Z("RG", "grp")},
			"d1\t1\tchr2\t100\t10\t5M100000D5M\t=\t200\t-50\tAAAAACCCCC\tIIIIIIIIII\tRG:Z:grp"},
		{"other mate reference", record.Record{Name: []byte("m1"), Flags: 65, RefID: 0, Pos: 0, MapQ: 255,
			Cigar: cigar("2=1X1P3N2M"), MateRefID: 1, MatePos: 0, TemplateLength: math.MinInt32,
			Seq: []byte("ACGTA")}, "m1\t65\tchr1\t1\t255\t2=1X1P3N2M\tchr2\t1\t-2147483648\tACGTA\t*"},
		{"all base codes", record.Record{Name: []byte("b1"), RefID: 1, Pos: 16383, Cigar: cigar("16M"),
			MateRefID: -1, MatePos: -1, Seq: []byte("=ACMGRSVTWYHKDBN")},
			"b1\t0\tchr2\t16384\t0\t16M\t*\t0\t0\t=ACMGRSVTWYHKDBN\t*"},
		{"long CIGAR", record.Record{Name: []byte("L1"), RefID: 0, Pos: 9999, Cigar: cigar(longCigar.String()),
			MateRefID: -1, MatePos: -1, Seq: longSeq, Aux: aux(nil).S("NM", 35000)},
			"L1\t0\tchr1\t10000\t0\t" + longCigar.String() + "\t*\t0\t0\t" + string(longSeq) + "\t*\tNM:i:35000"},
	}
}

// encodeStream returns the uncompressed BAM stream of the cases.
func encodeStream(t *testing.T, cases []samCase) []byte {
	t.Helper()
	refs, err := ParseHeaderRefs([]byte(testHeader))
	if err != nil {
		t.Fatal(err)
	}
	out := AppendHeader(nil, []byte(testHeader), refs)
	for _, c := range cases {
		out, err = AppendRecord(out, &c.rec)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	return out
}

// TestHandBuiltMatchesSamtools encodes tricky records and checks them two
// ways: samtools view prints the expected SAM for our BAM, and our stream
// is byte-identical to what samtools writes for that SAM.
func TestHandBuiltMatchesSamtools(t *testing.T) {
	st := samtools(t)
	dir := t.TempDir()
	cases := handBuilt()
	stream := encodeStream(t, cases)

	c, err := bgzf.NewCompressor(6)
	if err != nil {
		t.Fatal(err)
	}
	bamFile, err := c.AppendBlocks(nil, stream)
	if err != nil {
		t.Fatal(err)
	}
	ours := filepath.Join(dir, "ours.bam")
	if err := os.WriteFile(ours, append(bamFile, bgzf.EOF...), 0o644); err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	want.WriteString(testHeader)
	for _, c := range cases {
		want.WriteString(c.sam + "\n")
	}
	got := string(run(t, st, "view", "-h", "--no-PG", ours))
	gotLines, wantLines := strings.Split(got, "\n"), strings.Split(want.String(), "\n")
	for i := range max(len(gotLines), len(wantLines)) {
		g, w := "", ""
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if g != w {
			t.Errorf("samtools view line %d:\n got %.300q\nwant %.300q", i+1, g, w)
		}
	}

	sam := filepath.Join(dir, "want.sam")
	if err := os.WriteFile(sam, []byte(want.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	oracle, err := bgzftest.DecompressAll(run(t, st, "view", "-u", "--no-PG", sam))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(stream, oracle) {
		t.Fatalf("stream differs from samtools' at byte %d (len %d vs %d)", firstDiff(stream, oracle), len(stream), len(oracle))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func TestAppendRecordErrors(t *testing.T) {
	ok := record.Record{Name: []byte("x"), RefID: 0, Pos: 10, Cigar: cigar("4M"), MateRefID: -1, MatePos: -1,
		Seq: []byte("ACGT")}
	tests := []struct {
		name string
		edit func(r *record.Record)
	}{
		{"name too long", func(r *record.Record) { r.Name = bytes.Repeat([]byte("n"), 255) }},
		{"quality length", func(r *record.Record) { r.Qual = []byte{1, 2, 3} }},
		{"mapped without CIGAR", func(r *record.Record) { r.Cigar = nil }},
		{"CIGAR query length", func(r *record.Record) { r.Cigar = cigar("3M") }},
		{"position too large", func(r *record.Record) { r.Pos = math.MaxInt32 + 1 }},
		{"position too small", func(r *record.Record) { r.Pos = math.MinInt32 - 1 }},
		{"mate position too large", func(r *record.Record) { r.MatePos = math.MaxInt32 + 1 }},
		{"template length", func(r *record.Record) { r.TemplateLength = math.MaxInt32 + 1 }},
		{"long CIGAR spanning 2^28", func(r *record.Record) {
			r.Cigar = append(cigar("4M"), make([]uint32, 70000)...)
			for i := 1; i < len(r.Cigar); i++ {
				r.Cigar[i] = 4000<<4 | 2 // 4000D
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			tc.edit(&r)
			dst := []byte("keep")
			out, err := AppendRecord(dst, &r)
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("got %v, want ErrInvalid", err)
			}
			if string(out) != "keep" {
				t.Fatalf("dst changed on error: %q", out)
			}
		})
	}
	if _, err := AppendRecord(nil, &ok); err != nil {
		t.Fatalf("valid record: %v", err)
	}
}

func TestAppendRecordNoAlloc(t *testing.T) {
	cases := handBuilt()
	dst := make([]byte, 0, 1<<20)
	allocs := testing.AllocsPerRun(20, func() {
		d := dst[:0]
		for i := range cases {
			var err error
			if d, err = AppendRecord(d, &cases[i].rec); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run", allocs)
	}
}

func TestRecordInfo(t *testing.T) {
	for _, c := range handBuilt() {
		t.Run(c.name, func(t *testing.T) {
			b, err := AppendRecord(nil, &c.rec)
			if err != nil {
				t.Fatal(err)
			}
			tid, pos, end, flags, err := RecordInfo(b)
			if err != nil {
				t.Fatal(err)
			}
			rlen := int64(1)
			if c.rec.Flags&4 == 0 {
				if r, _ := cigarLens(c.rec.Cigar); r > 0 {
					rlen = r
				}
			}
			if tid != c.rec.RefID || pos != c.rec.Pos || flags != c.rec.Flags || end != c.rec.Pos+rlen {
				t.Fatalf("RecordInfo = %d %d %d %d, want %d %d %d %d", tid, pos, end, flags, c.rec.RefID, c.rec.Pos, c.rec.Pos+rlen, c.rec.Flags)
			}
			for n := 0; n < len(b); n += 1 + n/2 {
				if _, _, _, _, err := RecordInfo(b[:n]); !errors.Is(err, ErrCorrupt) {
					t.Fatalf("truncated to %d bytes: got %v", n, err)
				}
			}
		})
	}
}

func TestReg2Bin(t *testing.T) {
	tests := []struct {
		beg, end int64
		want     uint16
	}{
		{-1, 0, 4680}, {0, 1, 4681}, {16383, 16385, 585}, {0, 1 << 29, 0},
		{(1 << 29) - 1, 1 << 29, 37448}, {-1, 99, 0},
	}
	for _, tc := range tests {
		if got := Reg2Bin(tc.beg, tc.end); got != tc.want {
			t.Errorf("Reg2Bin(%d, %d) = %d, want %d", tc.beg, tc.end, got, tc.want)
		}
	}
}

func TestParseHeaderRefs(t *testing.T) {
	tests := []struct {
		name, text string
		want       []Reference
		err        bool
	}{
		{"empty", "", nil, false},
		{"basic", "@HD\tVN:1.6\n@SQ\tSN:a\tLN:10\n@CO\tx\ty\n@SQ\tLN:20\tSN:b\tM5:0\n", []Reference{{"a", 10}, {"b", 20}}, false},
		{"last tag wins", "@SQ\tSN:a\tLN:10\tLN:30\n", []Reference{{"a", 30}}, false},
		{"stops at NUL", "@SQ\tSN:a\tLN:1\n\x00@SQ\tSN:b\tLN:2\n", []Reference{{"a", 1}}, false},
		{"no final newline", "@SQ\tSN:a\tLN:5", []Reference{{"a", 5}}, false},
		{"LN prefix", "@SQ\tSN:a\tLN: +12x\n", []Reference{{"a", 12}}, false},
		{"LN above 32 bits", "@SQ\tSN:a\tLN:5000000000\n", []Reference{{"a", math.MaxUint32}}, false},
		{"SN after AN", "@SQ\tSN:a\tLN:1\tAN:b,c\n@SQ\tSN:b\tLN:2\n", []Reference{{"a", 1}, {"b", 2}}, false},
		{"CR kept in value", "@SQ\tLN:7\tSN:a\r\n", []Reference{{"a\r", 7}}, false},
		{"short tail ignored", "@SQ\tSN:a\tLN:1\n@S", []Reference{{"a", 1}}, false},
		{"duplicate SN", "@SQ\tSN:a\tLN:1\n@SQ\tSN:a\tLN:2\n", nil, true},
		{"missing LN", "@SQ\tSN:a\n", nil, true},
		{"missing SN", "@SQ\tLN:4\n", nil, true},
		{"not @", "@SQ\tSN:a\tLN:1\nxx\tSN:b\n", nil, true},
		{"bad type", "@1Q\tSN:a\tLN:1\n", nil, true},
		{"bad field", "@SQ\tSN:a\tLN1\n", nil, true},
		{"empty line", "@SQ\tSN:a\tLN:1\n\n@SQ\tSN:b\tLN:1\n", nil, true},
		{"too short", "@S", nil, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseHeaderRefs([]byte(tc.text))
			if (err != nil) != tc.err {
				t.Fatalf("error %v, want error %v", err, tc.err)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestParseHeaderRefsMatchesSamtools checks the references and the header
// bytes against samtools' BAM for SAM headers with @SQ lines.
func TestParseHeaderRefsMatchesSamtools(t *testing.T) {
	st := samtools(t)
	dir := t.TempDir()
	texts := []string{
		testHeader,
		"@SQ\tSN:a\tLN:1\tAN:b,c\n@SQ\tSN:b\tLN:2\n@SQ\tSN:big\tLN:5000000000\n@SQ\tLN:+17\tSN:d\n",
	}
	for i, text := range texts {
		p := filepath.Join(dir, fmt.Sprintf("h%d.sam", i))
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		oracle, err := bgzftest.DecompressAll(run(t, st, "view", "-u", "--no-PG", p))
		if err != nil {
			t.Fatal(err)
		}
		refs, err := ParseHeaderRefs([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendHeader(nil, []byte(text), refs); !bytes.Equal(got, oracle) {
			t.Errorf("header %d differs at byte %d:\n got %q\nwant %q", i, firstDiff(got, oracle), got, oracle)
		}
	}
}

// TestAppendRecordNameAndSeq checks the strncpy-like name copy (an
// embedded NUL ends the name, the rest of l_read_name is zeros) and the
// base packing for every length around the 8-base unrolled loop.
func TestAppendRecordNameAndSeq(t *testing.T) {
	const bases = "ACGTNacgtn=MRSVWYHKDB*xQ"
	for n := 0; n <= 19; n++ {
		seq := make([]byte, n)
		for i := range seq {
			seq[i] = bases[(i*7+n)%len(bases)]
		}
		r := record.Record{Name: []byte("ab\x00cd"), Flags: 4, RefID: -1, Pos: -1, MateRefID: -1, MatePos: -1, Seq: seq}
		out, err := AppendRecord([]byte{0xEE}, &r)
		if err != nil {
			t.Fatal(err)
		}
		if out[0] != 0xEE {
			t.Fatal("prefix overwritten")
		}
		b := out[1+4:]
		if b[8] != 6 {
			t.Fatalf("l_read_name %d, want 6", b[8])
		}
		if got := string(b[32:38]); got != "ab\x00\x00\x00\x00" {
			t.Fatalf("name bytes %q", got)
		}
		packed := b[38 : 38+(n+1)/2]
		for i := 0; i < n; i++ {
			code := packed[i/2] >> 4
			if i%2 == 1 {
				code = packed[i/2] & 0xf
			}
			if code != nt16[seq[i]] {
				t.Fatalf("n=%d base %d %q: code %d, want %d", n, i, seq[i], code, nt16[seq[i]])
			}
		}
		if n%2 == 1 && packed[n/2]&0xf != 0 {
			t.Fatalf("n=%d: odd length leaves a non-zero low nibble", n)
		}
	}
}

// TestPutCigar checks the one-copy CIGAR writer against the one that
// stores each operation little-endian.
func TestPutCigar(t *testing.T) {
	for _, n := range []int{0, 1, 7, 1000} {
		cig := make([]uint32, n)
		for i := range cig {
			cig[i] = uint32(i*2654435761) ^ uint32(i)<<28
		}
		want := make([]byte, 4*n+3)
		got := make([]byte, 4*n+3)
		for i := range got {
			want[i], got[i] = 0xaa, 0xaa
		}
		if w, g := putCigarLE(want, cig), putCigar(got, cig); w != 4*n || g != 4*n || !bytes.Equal(got, want) {
			t.Errorf("%d ops: putCigar wrote %d bytes % x, want %d bytes % x", n, g, got[:min(len(got), 16)], w, want[:min(len(want), 16)])
		}
	}
}
