package decode

import "github.com/cramfs/cramfs/internal/record"

// Record is one alignment decoded from a CRAM slice, in the shape BAM
// stores it (SAMv1 §4.2); see record.Record. Slices decode into reusable
// Records: the byte slices alias buffers owned by the Decoder and are
// valid until the next container is decoded.
type Record = record.Record
