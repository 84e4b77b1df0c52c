package decode

import "bytes"

// DataSeriesKeyOffsets returns the file offsets of the two-letter key of
// data series key in the encoding maps of the compression headers of b,
// for the containers whose compression header is stored raw, so that a
// test can rename a series in place.
func DataSeriesKeyOffsets(b []byte, key string) ([]int64, error) {
	f, err := Open("x.cram", bytes.NewReader(b), int64(len(b)), OpenOptions{})
	if err != nil {
		return nil, err
	}
	var offs []int64
	for i := range f.Containers {
		h := &f.Containers[i]
		data := b[h.DataOffset():h.End()]
		pos := 0
		blk, err := parseBlock(data, &pos, f.Def.Major)
		if err != nil {
			return nil, err
		}
		if blk.Method != MethodRaw {
			continue
		}
		ch := blk.Data
		p := 0
		size, err := readITF8(ch, &p) // preservation map
		if err != nil {
			return nil, err
		}
		p += int(size)
		if _, err = readITF8(ch, &p); err != nil { // encoding map size
			return nil, err
		}
		n, err := readITF8(ch, &p)
		if err != nil {
			return nil, err
		}
		for range n {
			k := string(ch[p : p+2])
			at := p
			p += 2
			if _, err := parseEncoding(ch, &p, dataSeriesInfo[dataSeriesKeys[k]].vt, 0, nil, varints{}); err != nil {
				return nil, err
			}
			if k == key {
				// blk.Data aliases data, so their capacities give its offset.
				offs = append(offs, h.DataOffset()+int64(cap(data)-cap(blk.Data)+at))
			}
		}
	}
	return offs, nil
}

// BlockSpan is where one block lies in a file: [Start, End), its CRC32
// (CRAM 3 and later) in the last four bytes.
type BlockSpan struct {
	Start, End  int64
	Method      BlockMethod
	ContentType ContentType
	ContentID   int32
	RawSize     int32
}

// SliceBlockSpans returns the spans of the blocks of the first slice of
// container i of the CRAM b (its slice header block excluded), so that a
// test can damage one of them.
func SliceBlockSpans(b []byte, i int) ([]BlockSpan, error) {
	f, err := Open("x.cram", bytes.NewReader(b), int64(len(b)), OpenOptions{})
	if err != nil {
		return nil, err
	}
	h := &f.Containers[i]
	data := b[h.DataOffset():h.End()]
	pos := int(h.Landmarks[0])
	hb, err := parseBlock(data, &pos, f.Def.Major)
	if err != nil {
		return nil, err
	}
	raw, err := hb.decompress(&defaultCodecs, nil)
	if err != nil {
		return nil, err
	}
	sh, err := parseSliceHeader(raw, f.Def.Major)
	if err != nil {
		return nil, err
	}
	var spans []BlockSpan
	for range sh.NumBlocks {
		start := pos
		blk, err := parseBlock(data, &pos, f.Def.Major)
		if err != nil {
			return nil, err
		}
		spans = append(spans, BlockSpan{Start: h.DataOffset() + int64(start), End: h.DataOffset() + int64(pos), Method: blk.Method, ContentType: blk.ContentType, ContentID: blk.ContentID, RawSize: blk.RawSize})
	}
	return spans, nil
}

// QSContentID returns the content ID of the external block that QS is
// read from in container i of the CRAM b, or -1 when QS is not EXTERNAL.
func QSContentID(b []byte, i int) (int32, error) {
	f, err := Open("x.cram", bytes.NewReader(b), int64(len(b)), OpenOptions{})
	if err != nil {
		return 0, err
	}
	h := &f.Containers[i]
	data := b[h.DataOffset():h.End()]
	pos := 0
	blk, err := parseBlock(data, &pos, f.Def.Major)
	if err != nil {
		return 0, err
	}
	raw, err := blk.decompress(&defaultCodecs, nil)
	if err != nil {
		return 0, err
	}
	var encs encodings
	ch, err := parseCompressionHeader(raw, &encs, varintsFor(f.Def.Major))
	if err != nil {
		return 0, err
	}
	if e := ch.DataSeries[DSQS]; e != nil && e.ID == EncodingExternal {
		return e.ContentID, nil
	}
	return -1, nil
}

// PoisonBases gives d a base buffer of n bytes of b, as if an earlier
// container had filled it, so that a test can tell a base the decoder
// left unwritten from one it wrote.
func PoisonBases(d *Decoder, n int, b byte) {
	d.seqs = bytes.Repeat([]byte{b}, n)[:0]
}
