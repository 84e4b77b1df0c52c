package decode

import "fmt"

// DataSeries identifies a record data series by its two-letter key
// (CRAMv3 §8.4, Data series encodings).
type DataSeries int

// The data series, in no particular order.
const (
	DSBF DataSeries = iota
	DSCF
	DSRI
	DSRL
	DSAP
	DSRG
	DSRN
	DSMF
	DSNS
	DSNP
	DSTS
	DSNF
	DSTL
	DSFN
	DSFC
	DSFP
	DSDL
	DSBB
	DSQQ
	DSBS
	DSIN
	DSRS
	DSPD
	DSHC
	DSSC
	DSMQ
	DSBA
	DSQS
	numDataSeries
)

// dataSeriesInfo gives each series its key and value type.
var dataSeriesInfo = [numDataSeries]struct {
	key string
	vt  valueType
}{
	DSBF: {"BF", typeInt}, DSCF: {"CF", typeInt}, DSRI: {"RI", typeInt},
	DSRL: {"RL", typeInt}, DSAP: {"AP", typeInt}, DSRG: {"RG", typeInt},
	DSRN: {"RN", typeByteArray}, DSMF: {"MF", typeInt}, DSNS: {"NS", typeInt},
	DSNP: {"NP", typeInt}, DSTS: {"TS", typeInt}, DSNF: {"NF", typeInt},
	DSTL: {"TL", typeInt}, DSFN: {"FN", typeInt}, DSFC: {"FC", typeByte},
	DSFP: {"FP", typeInt}, DSDL: {"DL", typeInt}, DSBB: {"BB", typeByteArray},
	DSQQ: {"QQ", typeByteArray}, DSBS: {"BS", typeByte}, DSIN: {"IN", typeByteArray},
	DSRS: {"RS", typeInt}, DSPD: {"PD", typeInt}, DSHC: {"HC", typeInt},
	DSSC: {"SC", typeByteArray}, DSMQ: {"MQ", typeInt}, DSBA: {"BA", typeByte},
	DSQS: {"QS", typeByte},
}

// String returns the series' two-letter key.
func (s DataSeries) String() string {
	if s >= 0 && s < numDataSeries {
		return dataSeriesInfo[s].key
	}
	return fmt.Sprintf("DataSeries(%d)", int(s))
}

// dataSeriesKeys maps each key to its series.
var dataSeriesKeys = func() map[string]DataSeries {
	m := make(map[string]DataSeries, numDataSeries)
	for s, info := range dataSeriesInfo {
		m[info.key] = DataSeries(s)
	}
	return m
}()

// noEncoding is the error for a data series that a record reads but the
// compression header gives no encoding. Like htslib, a series that no
// record reads needs none: writers leave out the series they never use.
func noEncoding(s DataSeries) error {
	return corruptf("data series %v is read but has no encoding", s)
}

// CompressionHeader is a container's compression header (CRAMv3 §8.4).
type CompressionHeader struct {
	ReadNamesIncluded bool // RN
	APDelta           bool // AP
	ReferenceRequired bool // RR
	QSSeqOrient       bool // QO (CRAM 4 only; true otherwise)
	// V4 says the CRAM 4.0 rules apply: AP, NP and TS are 64-bit series,
	// and tag lines hold placeholders (MD*, NM*, RG*) for the tags the
	// decoder makes; MD and NM are made only where they stand.
	V4                 bool
	SubstitutionMatrix [5][4]byte
	// TagLines is the tag dictionary TD: for each line, the tags as
	// 3-byte (name, name, BAM type) entries.
	TagLines [][]byte
	// tagPlans holds, per tag line, how to read each of its tags, so
	// records skip the map and the encodings' general paths.
	tagPlans   []tagPlan
	DataSeries [numDataSeries]*Encoding
	// Tags maps a tag key (name0<<16 | name1<<8 | type) to its encoding.
	Tags map[int32]*Encoding
}

// parseCompressionHeader parses the raw bytes of a compression header block
// (CRAMv3 §8.4): the preservation map, the data series encodings and the
// tag encodings, taking the storage of its encodings from a (nil:
// allocated). r reads its integers as the file's version writes them;
// from CRAM 4.0 on, AP, NP and TS are 64-bit series.
func parseCompressionHeader(b []byte, a *encodings, r varints) (*CompressionHeader, error) {
	h := &CompressionHeader{APDelta: true, ReferenceRequired: true, QSSeqOrient: true, V4: r.v4}
	copy(h.SubstitutionMatrix[0][:], "CGTN")
	copy(h.SubstitutionMatrix[1][:], "AGTN")
	copy(h.SubstitutionMatrix[2][:], "ACTN")
	copy(h.SubstitutionMatrix[3][:], "ACGN")
	copy(h.SubstitutionMatrix[4][:], "ACGT")
	pos := 0
	if err := h.parsePreservationMap(b, &pos, r); err != nil {
		return nil, err
	}
	if err := h.parseDataSeriesEncodings(b, &pos, a, r); err != nil {
		return nil, err
	}
	if err := h.parseTagEncodings(b, &pos, a, r); err != nil {
		return nil, err
	}
	h.tagPlans = make([]tagPlan, len(h.TagLines))
	for i, line := range h.TagLines {
		h.tagPlans[i] = planTagLine(line, h.Tags, h.V4)
	}
	return h, nil
}

// section is one of the three parts of a compression header: its byte
// size and entry count, as read at its start.
type section struct {
	what  string // for errors
	size  int32
	start int // offset of the entry count
	n     int32
}

// readSection reads the size and entry count of the section what at *pos.
func readSection(what string, b []byte, pos *int, r varints) (section, error) {
	sec := section{what: what}
	var err error
	if sec.size, err = r.u32(b, pos); err != nil {
		return sec, fmt.Errorf("%s: %w", what, err)
	}
	sec.start = *pos
	if sec.n, err = r.u32(b, pos); err != nil {
		return sec, fmt.Errorf("%s: %w", what, err)
	}
	return sec, nil
}

// end checks that the section ends at pos, where its size says.
func (sec section) end(pos int) error {
	if pos-sec.start != int(sec.size) {
		return corruptf("%s: %d bytes declared, %d read", sec.what, sec.size, pos-sec.start)
	}
	return nil
}

// parsePreservationMap reads the preservation map at *pos into h: the
// flags, the substitution matrix and the tag dictionary.
func (h *CompressionHeader) parsePreservationMap(b []byte, pos *int, r varints) error {
	sec, err := readSection("preservation map", b, pos, r)
	if err != nil {
		return err
	}
	for i := int32(0); i < sec.n; i++ {
		if *pos+3 > len(b) {
			return corruptf("preservation map: entry %d past the end", i)
		}
		key := string(b[*pos : *pos+2])
		*pos += 2
		switch key {
		case "RN", "AP", "RR", "QO", "MI", "UI", "PI":
			v := b[*pos] != 0
			*pos++
			switch key {
			case "RN":
				h.ReadNamesIncluded = v
			case "AP":
				h.APDelta = v
			case "RR":
				h.ReferenceRequired = v
			case "QO":
				h.QSSeqOrient = v
			}
		case "SM":
			if *pos+5 > len(b) {
				return corruptf("preservation map: SM past the end")
			}
			h.setSubstitutionMatrix(b[*pos : *pos+5])
			*pos += 5
		case "TD":
			tdLen, err := r.u32(b, pos)
			if err != nil {
				return fmt.Errorf("tag dictionary: %w", err)
			}
			if tdLen < 0 || int(tdLen) > len(b)-*pos {
				return corruptf("tag dictionary: %d bytes declared, %d remain", tdLen, len(b)-*pos)
			}
			h.TagLines = splitTagLines(b[*pos : *pos+int(tdLen)])
			*pos += int(tdLen)
		default:
			// An unknown key: like htslib, assume a one-byte value.
			*pos++
		}
	}
	return sec.end(*pos)
}

// setSubstitutionMatrix decodes the five bytes of the SM entry: for each
// reference base in ACGTN order, the 2-bit codes of the other four.
func (h *CompressionHeader) setSubstitutionMatrix(sm []byte) {
	const bases = "ACGTN"
	for r := 0; r < 5; r++ {
		c := sm[r]
		k := 0
		for _, alt := range []byte(bases) {
			if alt == bases[r] {
				continue
			}
			h.SubstitutionMatrix[r][(c>>(6-2*k))&3] = alt
			k++
		}
	}
}

// parseDataSeriesEncodings reads the data series encodings at *pos into
// h.DataSeries; series this decoder does not know (TC, TN, ...) are
// never read, and their encodings are passed over.
func (h *CompressionHeader) parseDataSeriesEncodings(b []byte, pos *int, a *encodings, r varints) error {
	sec, err := readSection("data series encodings", b, pos, r)
	if err != nil {
		return err
	}
	a.ensure(min(max(int(sec.n), 0), len(b)-*pos))
	for i := int32(0); i < sec.n; i++ {
		if *pos+2 > len(b) {
			return corruptf("data series encodings: entry %d past the end", i)
		}
		key := string(b[*pos : *pos+2])
		*pos += 2
		ds, known := dataSeriesKeys[key]
		vt := typeInt
		if known {
			vt = dataSeriesInfo[ds].vt
			if r.v4 && (ds == DSAP || ds == DSNP || ds == DSTS) {
				vt = typeLong
			}
			if r.v4 && ds == DSRN {
				vt = typeByteBlock
			}
		}
		enc, err := parseEncoding(b, pos, vt, 0, a, r)
		if err != nil {
			if known {
				return fmt.Errorf("data series %s: %w", key, err)
			}
			continue
		}
		if known {
			h.DataSeries[ds] = enc
		}
	}
	return sec.end(*pos)
}

// parseTagEncodings reads the tag encodings at *pos into h.Tags.
func (h *CompressionHeader) parseTagEncodings(b []byte, pos *int, a *encodings, r varints) error {
	sec, err := readSection("tag encodings", b, pos, r)
	if err != nil {
		return err
	}
	if sec.n < 0 || int(sec.n) > len(b)-*pos {
		return corruptf("tag encodings: %d entries", sec.n)
	}
	h.Tags = make(map[int32]*Encoding, sec.n)
	a.ensure(int(sec.n))
	vt := typeByteArray
	if r.v4 {
		vt = typeByteBlock
	}
	for i := int32(0); i < sec.n; i++ {
		key, err := r.u32(b, pos)
		if err != nil {
			return fmt.Errorf("tag encodings: %w", err)
		}
		enc, err := parseEncoding(b, pos, vt, 0, a, r)
		if err != nil {
			return fmt.Errorf("tag %c%c:%c: %w", byte(key>>16), byte(key>>8), byte(key), err)
		}
		if enc != nil { // a NULL encoding leaves the tag without one
			h.Tags[key] = enc
		}
	}
	return sec.end(*pos)
}

// splitTagLines splits the tag dictionary TD (CRAMv3 §8.4, Preservation
// map) into its NUL-terminated lines.
func splitTagLines(td []byte) [][]byte {
	if len(td) == 0 {
		return nil
	}
	var lines [][]byte
	start := 0
	for i := 0; i <= len(td); i++ {
		if i == len(td) || td[i] == 0 {
			if i == len(td) && i == start && len(lines) > 0 {
				break
			}
			lines = append(lines, td[start:i])
			start = i + 1
		}
	}
	return lines
}
