package decode_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/internal/corpus"
)

// goRunner runs every task on a goroutine of its own, the last started
// first, so that the tasks of a slice run at once and finish in any order;
// the late one, if any, is left running until Wait.
type goRunner struct {
	calls, lates, refs int
	fails              int // containers that failed to decode (splitMatches)
	late               sync.WaitGroup
}

func (r *goRunner) RunBlocks(tasks []decode.BlockTask, late int) {
	r.calls++
	var wg sync.WaitGroup
	for k := len(tasks) - 1; k >= 0; k-- {
		if tasks[k].Reference() {
			r.refs++
		}
		if k == late {
			r.lates++
			r.late.Add(1)
			go runTask(&r.late, &tasks[k])
			continue
		}
		wg.Add(1)
		go runTask(&wg, &tasks[k])
	}
	wg.Wait()
}

func (r *goRunner) Wait() { r.late.Wait() }

func runTask(wg *sync.WaitGroup, t *decode.BlockTask) {
	defer wg.Done()
	t.Decompress()
}

// TestSplitBlocksMatchUnsplit decodes every testdata CRAM with its blocks
// decompressed in turn and as tasks run at once, one decoder of each kind
// reused from container to container, and checks that both give the same
// records, or the same error.
func TestSplitBlocksMatchUnsplit(t *testing.T) {
	var all goRunner
	eachTestdataCRAM(t, func(t *testing.T, f *decode.File) {
		run := splitMatches(t, f, fakeOpt)
		all.lates += run.lates
		all.refs += run.refs
	})
	if all.lates == 0 || all.refs == 0 {
		t.Fatalf("%d slices had a late block, %d a reference read as a task; want some of each", all.lates, all.refs)
	}
}

// FuzzSplitDecode decodes damaged CRAMs with their blocks decompressed in
// turn and as tasks run at once (the QS block left running beside the
// records), which must agree on the records and on the error.
func FuzzSplitDecode(f *testing.F) {
	addCRAMSeeds(f, "ce_5b", "ce_1", "xx_minimal", "ce_1000")
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := decode.Open("fuzz.cram", bytes.NewReader(b), int64(len(b)), decode.OpenOptions{})
		if err != nil {
			return
		}
		splitMatches(t, file, fakeOpt)
	})
}

// failingRef is a reference whose bases cannot be read.
type failingRef struct{ fakeRef }

func (failingRef) Bases([]byte, int, int64, int64) ([]byte, error) {
	return nil, errors.New("no bases here")
}

// TestSplitReferenceErrors: a reference that fails to give a slice its
// bases fails the split decode, where the reference is read as a task,
// as it fails the unsplit one.
func TestSplitReferenceErrors(t *testing.T) {
	opt := fakeOpt
	opt.Reference = failingRef{}
	refs, fails := 0, 0
	eachTestdataCRAM(t, func(t *testing.T, f *decode.File) {
		run := splitMatches(t, f, opt)
		refs, fails = refs+run.refs, fails+run.fails
	})
	if refs == 0 || fails == 0 {
		t.Fatalf("%d references read as a task, %d containers failed; want some of each", refs, fails)
	}
}

// splitMatches fails t unless ContainerFunc and ContainerFuncWith a
// goRunner, both with opt, give the same records or the same error for
// every container of f, and returns the runner.
func splitMatches(t *testing.T, f *decode.File, opt decode.DecoderOptions) *goRunner {
	t.Helper()
	whole, split := f.NewDecoder(opt), f.NewDecoder(opt)
	run := &goRunner{}
	for i := range f.Containers {
		want, werr := whole.Container(i)
		n := 0
		gerr := split.ContainerFuncWith(i, run, func(j int, r *decode.Record) error {
			if j != n || j >= len(want) || !sameRecord(r, &want[j]) {
				t.Fatalf("container %d: record %d of the split decode differs from the unsplit one", i, j)
			}
			n++
			return nil
		})
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("container %d: unsplit decode fails with %v, split with %v", i, werr, gerr)
		}
		if werr != nil {
			run.fails++
		}
		if werr == nil && n != len(want) {
			t.Fatalf("container %d: split decode gives %d records, unsplit %d", i, n, len(want))
		}
	}
	return run
}

// TestSplitBlocksErrors damages blocks of the first slice of a CRAM and
// checks that the split decode fails as the unsplit one does, on the
// block the unsplit decode names: a block that cannot be decompressed
// (a method no codec has), the first of two such, and one that cannot be
// decompressed before one whose CRC32 is wrong.
func TestSplitBlocksErrors(t *testing.T) {
	_, b := openFile(t, filepath.Join(corpus.Root(), "testdata", "cram", "ce_1000.3.0.cram"))
	spans, err := decode.SliceBlockSpans(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) < 4 {
		t.Fatalf("%d blocks in the first slice, want 4 or more", len(spans))
	}
	last, mid := spans[len(spans)-1], spans[len(spans)/2]
	qsID, err := decode.QSContentID(b, 0)
	if err != nil {
		t.Fatal(err)
	}
	qs := slices.IndexFunc(spans, func(s decode.BlockSpan) bool {
		return s.ContentType == decode.ContentExternal && s.ContentID == qsID
	})
	if qs <= 0 || qs == len(spans)-1 {
		t.Fatalf("QS (content ID %d) is block %d of %d; want one with blocks before and after it", qsID, qs, len(spans))
	}
	before := slices.IndexFunc(spans, func(s decode.BlockSpan) bool { return s.RawSize > 0 })
	if before < 0 || before >= qs {
		t.Fatal("no block before QS has bytes")
	}
	late, first := spans[qs], spans[before]
	cases := []struct {
		name   string
		damage func(c []byte)
	}{
		{"last block unsupported", func(c []byte) { badMethod(c, last) }},
		{"two blocks unsupported", func(c []byte) { badMethod(c, mid); badMethod(c, last) }},
		{"unsupported then bad CRC", func(c []byte) { badMethod(c, mid); c[last.End-1] ^= 0xff }},
		{"garbled data", func(c []byte) { garble(c, last) }},
		// The QS block is left running while the records are decoded.
		{"late block unsupported", func(c []byte) { badMethod(c, late) }},
		{"late block garbled", func(c []byte) { garble(c, late) }},
		{"late then last unsupported", func(c []byte) { badMethod(c, late); badMethod(c, last) }},
		{"first then late unsupported", func(c []byte) { badMethod(c, first); badMethod(c, late) }},
		{"late unsupported then bad CRC", func(c []byte) { badMethod(c, late); c[last.End-1] ^= 0xff }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := bytes.Clone(b)
			tc.damage(c)
			f, err := decode.Open("x.cram", bytes.NewReader(c), int64(len(c)), decode.OpenOptions{})
			if err != nil {
				t.Fatal(err)
			}
			_, werr := f.NewDecoder(fakeOpt).Container(0)
			gerr := f.NewDecoder(fakeOpt).ContainerFuncWith(0, &goRunner{}, func(int, *decode.Record) error { return nil })
			t.Logf("unsplit: %v", werr)
			if werr == nil && !strings.Contains(tc.name, "garbled") {
				t.Fatal("the damaged container decodes")
			}
			if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
				t.Fatalf("unsplit decode fails with %v, split with %v", werr, gerr)
			}
		})
	}
}

// badMethod gives the block at s the compression method 15, which no
// codec has, and its CRC32 again.
func badMethod(c []byte, s decode.BlockSpan) {
	c[s.Start] = 15
	fixCRC(c, s)
}

// garble overwrites the middle of the payload of the block at s, its
// CRC32 made again.
func garble(c []byte, s decode.BlockSpan) {
	for k := s.Start + (s.End-s.Start)/2; k < s.End-4; k++ {
		c[k] ^= 0x5a
	}
	fixCRC(c, s)
}

func fixCRC(c []byte, s decode.BlockSpan) {
	binary.LittleEndian.PutUint32(c[s.End-4:], crc32.ChecksumIEEE(c[s.Start:s.End-4]))
}
