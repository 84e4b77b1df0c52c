package decode

import "testing"

// TestLeanPlan checks which series the lean pass still reads: none of the
// skipped ones in their own blocks; one sharing the block of a needed
// series' bytes, or reading the core block, or given no encoding; and all
// of them when an encoding the plan does not know appears.
func TestLeanPlan(t *testing.T) {
	header := func() *CompressionHeader {
		ch := &CompressionHeader{}
		for s := range ch.DataSeries {
			ch.DataSeries[s] = &Encoding{ID: EncodingExternal, ContentID: int32(100 + s)}
		}
		ch.DataSeries[DSRN] = &Encoding{ID: EncodingByteArrayStop, ContentID: 11}
		return ch
	}
	reads := func(ch *CompressionHeader) map[DataSeries]bool {
		var l leanState
		l.plan(ch)
		got := map[DataSeries]bool{}
		for _, s := range skippedSeries {
			if l.read[s] {
				got[s] = true
			}
		}
		return got
	}
	if got := reads(header()); len(got) != 0 {
		t.Errorf("own blocks: reads %v", got)
	}
	ch := header()
	ch.DataSeries[DSQS].ContentID = 11 // RN's, whose bytes are read
	ch.DataSeries[DSBS] = &Encoding{ID: EncodingHuffman, huff: &huffman{count: []int32{0, 2}}}
	ch.DataSeries[DSMQ] = nil
	// BA shares MF's block: MF is not read, so neither is BA.
	ch.DataSeries[DSBA].ContentID = ch.DataSeries[DSMF].ContentID
	if got := reads(ch); len(got) != 3 || !got[DSQS] || !got[DSBS] || !got[DSMQ] {
		t.Errorf("shared, core and missing: reads %v, want QS, BS, MQ", got)
	}
	ch = header()
	ch.DataSeries[DSNP] = &Encoding{ID: 41}
	if got := reads(ch); len(got) != len(skippedSeries) {
		t.Errorf("unknown encoding: reads %v, want every skipped series", got)
	}
}
