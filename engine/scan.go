package engine

import (
	"context"
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/cramfs/cramfs/encode/bai"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/encode/csi"
)

// indexBuilder is a BAI or CSI builder.
type indexBuilder interface {
	Add(refID int32, beg, end int64, unmapped bool, vStart, vEnd uint64) error
	Finish(finalVOffset uint64) ([]byte, error)
}

// baiMaxRefLen is the longest reference a BAI can index (SAMv1 §5.2).
const baiMaxRefLen = 1 << 29

// scan decodes and compresses every container of src once, in parallel,
// and derives the layout and the .bai (SAMv1 §5.2) from the results, which
// are consumed in container order within a bounded window.
func (m *Manager) scan(ctx context.Context, src Source, hdrRaw []byte, hdrSeg Segment) (*indexFile, error) {
	n := src.NumContainers()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	window := 2 * m.opts.Threads
	slots := make(chan struct{}, window)
	var hint atomic.Int64 // largest container's blocks so far
	res := make([]chan *builtSegment, n)
	for i := range res {
		res[i] = make(chan *builtSegment, 1)
	}
	g.Go(func() error {
		for i := 0; i < n; i++ {
			select {
			case slots <- struct{}{}:
			case <-gctx.Done():
				return nil
			}
			if err := m.acquire(gctx); err != nil {
				return nil
			}
			g.Go(func() error {
				defer m.release()
				c, err := m.getComp()
				if err != nil {
					return fmt.Errorf("%s: BGZF level %d: %w", src.Name(), m.opts.Level.Deflate(), err)
				}
				defer m.putComp(c)
				bs, raw, err := scanContainer(gctx, src, c, m.pool, hint.Load(), i, m.getRaw())
				m.putRaw(raw)
				if err != nil {
					return err
				}
				if n := bgzf.StoredSize(bs.seg.RawLen); n > hint.Load() {
					hint.Store(n) // racy max: only a size hint
				}
				res[i] <- bs
				return nil
			})
		}
		return nil
	})

	var bld indexBuilder
	csiIndex := false
	if nRef, maxLen, err := parseRefs(hdrRaw); err != nil {
		m.log.Warn("no index: unreadable header", "file", src.Name(), "err", err)
	} else if maxLen > baiMaxRefLen {
		// BAI addresses 2^29 bases; longer references need a CSI, as
		// samtools index -c builds.
		bld, csiIndex = csi.NewBuilder(nRef, maxLen), true
	} else {
		bld = bai.NewBuilder(nRef)
	}
	noIndex := func(err error) {
		m.log.Warn("no index for this file", "file", src.Name(), "err", err)
		bld = nil
	}
	segs := make([]Segment, 0, n)
	off := hdrSeg.CompLen
	var consumeErr error
consume:
	for i := 0; i < n; i++ {
		var bs *builtSegment
		select {
		case bs = <-res[i]:
		case <-gctx.Done():
			break consume
		}
		<-slots
		s := bs.seg
		s.Offset = off
		off += s.CompLen
		segs = append(segs, s)
		if bld == nil {
			continue
		}
		vm := voffsetMapper{base: s.Offset, end: s.End(), blocks: bs.blocks}
		for _, r := range bs.recs {
			vs, err := vm.at(r.uStart)
			if err != nil {
				consumeErr = fmt.Errorf("%s: container %d: %w", src.Name(), i, err)
				cancel()
				break consume
			}
			ve, err := vm.at(r.uEnd)
			if err != nil {
				consumeErr = fmt.Errorf("%s: container %d: %w", src.Name(), i, err)
				cancel()
				break consume
			}
			if err := bld.Add(r.refID, r.beg, r.end, r.unmapped, vs, ve); err != nil {
				noIndex(fmt.Errorf("container %d: %w", i, err))
				break
			}
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if consumeErr != nil {
		return nil, consumeErr
	}
	if len(segs) != n {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s: scan stopped after %d of %d containers", src.Name(), len(segs), n)
	}
	idx := &indexFile{
		Layout: Layout{
			Level:    m.opts.Level.Deflate(),
			Header:   hdrSeg,
			Segments: segs,
			Size:     off + int64(len(bgzf.EOF)),
		},
	}
	if bld != nil {
		b, err := bld.Finish(uint64(off) << 16)
		if err != nil {
			noIndex(err)
		} else {
			idx.HasBAI, idx.BAI, idx.CSI = true, b, csiIndex
		}
	}
	return idx, nil
}
