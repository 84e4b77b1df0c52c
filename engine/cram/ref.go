package cram

import (
	"fmt"
	"sync"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/decode/reference"
)

// refSource resolves the @SQ lines of one file against a reference store,
// once per contig, on first use.
type refSource struct {
	store *reference.Store
	refs  []decode.RefSeq
	// lengths holds, per @SQ line, the length of the FASTA contig of the
	// same name, or -1: htslib's @SQ length sanitising.
	lengths []int64

	mu      sync.Mutex // guards contigs and errs
	contigs []*reference.Contig
	errs    []error
}

func newRefSource(s *reference.Store, refs []decode.RefSeq) *refSource {
	r := &refSource{store: s, refs: refs, lengths: make([]int64, len(refs)),
		contigs: make([]*reference.Contig, len(refs)), errs: make([]error, len(refs))}
	byName := map[string]int64{}
	for _, c := range s.Contigs() {
		if _, ok := byName[c.Name()]; !ok {
			byName[c.Name()] = c.Len()
		}
	}
	for i, q := range refs {
		r.lengths[i] = -1
		if n, ok := byName[q.Name]; ok {
			r.lengths[i] = n
		}
	}
	return r
}

func (r *refSource) contig(id int) (*reference.Contig, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.contigs[id] == nil && r.errs[id] == nil {
		q := r.refs[id]
		r.contigs[id], r.errs[id] = r.store.Resolve(reference.SQ{Name: q.Name, Length: q.Length, M5: q.M5, UR: q.UR})
	}
	return r.contigs[id], r.errs[id]
}

// Bases implements decode.ReferenceSource.
func (r *refSource) Bases(dst []byte, id int, start, end int64) ([]byte, error) {
	c, err := r.contig(id)
	if err != nil {
		return dst, err
	}
	end = min(end, c.Len())
	start = min(start, end)
	return c.Bases(dst, start, end)
}

// Origin implements decode.ReferenceOrigin: the file that reference id's
// bases are read from (a reference.Origin), nil when none was found.
func (r *refSource) Origin(id int) fmt.Stringer {
	c, err := r.contig(id)
	if err != nil {
		return nil
	}
	return c.Origin()
}

var _ decode.ReferenceOrigin = (*refSource)(nil)

// Length implements decode.ReferenceSource.
func (r *refSource) Length(id int) int64 {
	return r.lengths[id]
}
