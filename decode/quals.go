package decode

import "fmt"

// readQuals reads the preserved qualities (QS) of a record, read length
// values (CRAMv3 §10.6 DecodeMappedRead, §10.7), into qual or, when
// the container allows (viewQuals), only notes where they lie in the QS
// block (cr.qualOff into qsData), saving a copy of every quality score.
func (d *Decoder) readQuals(ds *[numDataSeries]*Encoding, cr *crec, qual []byte) error {
	e := ds[DSQS]
	if e == nil {
		return noEncoding(DSQS)
	}
	if d.viewQuals {
		if len(qual) == 0 {
			// No bytes to view, and maybe no QS block in the slice.
			cr.qualOff, cr.hasQualView = 0, true
			return nil
		}
		// The bytes are not read here: the block may still be
		// decompressed (lateBlock) while its raw size bounds the views.
		x := d.st.series[DSQS].x // EXTERNAL (viewQuals), found once per slice
		if x == nil {
			var err error
			if x, err = e.position(&d.st); err != nil {
				return fmt.Errorf("QS: %w", err)
			}
		}
		at := x.pos
		if err := x.skip(len(qual)); err != nil {
			return fmt.Errorf("QS: %w", err)
		}
		// One slice, one QS stream: every viewed record shares qsData.
		d.qsData = x.data
		cr.qualOff, cr.hasQualView = int32(at), true
		return nil
	}
	b, err := e.appendBytes(&d.st, qual[:0], len(qual))
	if err != nil {
		return fmt.Errorf("QS: %w", err)
	}
	if len(b) != len(qual) || (len(b) > 0 && &b[0] != &qual[0]) {
		return corruptf("QS gave %d values for %d", len(b), len(qual))
	}
	return nil
}
