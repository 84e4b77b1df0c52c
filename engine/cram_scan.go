package engine

import (
	"context"
)

// ScanLayout implements LayoutScanner by building the container's BAM
// records in full and measuring them.
func (c *CRAM) ScanLayout(ctx context.Context, i int, each func(r RecordLayout) error) (int64, error) {
	raw, err := c.appendContainer(ctx, i, false, nil, nil, nil)
	if err != nil {
		return 0, err
	}
	recs, err := walkRecords(nil, raw)
	if err != nil {
		return 0, err
	}
	for _, r := range recs {
		if err := each(RecordLayout{Len: r.uEnd - r.uStart, RefID: r.refID, Beg: r.beg, End: r.end, Unmapped: r.unmapped}); err != nil {
			return 0, err
		}
	}
	return int64(len(raw)), nil
}
var _ LayoutScanner = (*CRAM)(nil)
