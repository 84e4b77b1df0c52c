package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/cramfs/cramfs/cache"
	"github.com/cramfs/cramfs/encode/bgzf"
	"github.com/cramfs/cramfs/engine/layout"
	"github.com/cramfs/cramfs/engine/source"
)

// buildHeader builds the header's blocks of src again and checks them
// against want, the header segment src was opened with.
func (m *Manager) buildHeader(src source.Source, want layout.Segment) (*cache.Buf, error) {
	raw, err := headerOf(src)
	if err != nil {
		return nil, err
	}
	c, err := m.getComp()
	if err != nil {
		return nil, fmt.Errorf("%s: BGZF level %d: %w", src.Name(), m.opts.Level.Deflate(), err)
	}
	defer m.putComp(c)
	buf := m.pool.Get(int(want.CompLen))
	var got layout.Segment
	buf.B, got, err = compressHeader(c, src, buf.B[:0], raw)
	if err == nil && got != want {
		err = fmt.Errorf("%w: %s: header built again gives %+v, not %+v", source.ErrChanged, src.Name(), got, want)
	}
	if err != nil {
		buf.Release()
		return nil, err
	}
	return buf, nil
}

// building is one segment build in flight, shared by every caller that
// asks for the segment meanwhile.
//
// INVARIANT: b is in Manager.building exactly while done is open (both
// change together under Manager.mu, in finishBuild)
type building struct {
	// Constant.
	done chan struct{} // closed when buf and err are set

	// Mutable, guarded by Manager.mu.
	//
	// INVARIANT: waiters >= 0
	waiters int // callers waiting besides the leader
	// Set once, before done is closed; read after it is.
	buf *cache.Buf // holds one reference per waiter
	err error
}

// build appends container i of src to buf.B as BGZF blocks made by c and
// returns the BAM bytes they hold, and the container's content sum when
// src gives it. A BlockAppender may borrow workers nobody waits for to
// decompress the container beside the caller's goroutine. With rebuild,
// a BlockAppender may leave out the checks the caller's digest comparison
// covers (and the content sum).
func (m *Manager) build(ctx context.Context, src source.Source, i int, c *bgzf.Compressor, buf *cache.Buf, rebuild bool) (int64, source.Sum, error) {
	if ba, ok := src.(source.BlockAppender); ok {
		// Records go into blocks as they are encoded: no BAM buffer.
		var b source.Blocks
		var err error
		buf.B, b, err = ba.AppendContainerBlocks(ctx, i, c, buf.B, source.BlockOptions{Rebuild: rebuild, Helpers: idleWorkers{m.workers}})
		return b.Raw, b.Sum, err
	}
	raw, err := src.AppendContainer(ctx, i, m.getRaw())
	defer m.putRaw(raw)
	if err != nil {
		return 0, source.Sum{}, err
	}
	if buf.B, err = compressSegment(c, buf.B, raw); err != nil {
		return 0, source.Sum{}, fmt.Errorf("%s: container %d: compressing: %w", src.Name(), i, err)
	}
	return int64(len(raw)), source.Sum{}, nil
}

// buildSegment rebuilds segment i of src, with a worker for p, checks it
// against want and returns it with its digest. A segment whose digest is
// not known yet (want.NoDigest) is built with every check of its input,
// only its lengths are compared, and the content sum of the container
// read is returned for the caller to compare. The Buf it returns holds
// one reference, the caller's.
func (m *Manager) buildSegment(ctx context.Context, src source.Source, p *party, i int, want layout.Segment) (*cache.Buf, uint32, source.Sum, error) {
	if i == layout.HeaderSegment {
		buf, err := m.buildHeader(src, want)
		return buf, want.Digest, source.Sum{}, err
	}
	if err := m.acquire(ctx, p, i); err != nil {
		return nil, 0, source.Sum{}, err
	}
	defer m.release()
	if err := ctx.Err(); err != nil {
		return nil, 0, source.Sum{}, err
	}
	// The segment's storage counts against the cache's bound while it is
	// built, so that the cache budget covers the builds in flight too.
	size := int(min(want.CompLen, 64<<20))
	buf := m.cache.Alloc(size)
	// The layout gives the segment's size: its pages are backed at once
	// rather than faulted in record by record (cache.Prefault).
	cache.Prefault(buf.B, size)
	defer m.cache.Unreserve(int64(cap(buf.B)))
	c, err := m.getComp()
	if err != nil {
		buf.Release()
		return nil, 0, source.Sum{}, fmt.Errorf("%s: BGZF level %d: %w", src.Name(), m.opts.Level.Deflate(), err)
	}
	defer m.putComp(c)
	rebuild := !want.NoDigest
	rawLen, sum, err := m.build(ctx, src, i, c, buf, rebuild)
	if err != nil {
		buf.Release()
		return nil, 0, source.Sum{}, m.explainSize(err) // source.Source errors name the file and container
	}
	comp := buf.B
	crc, err := segmentDigest(comp)
	if err == nil && (int64(len(comp)) != want.CompLen || rawLen != want.RawLen || !want.NoDigest && crc != want.Digest) {
		err = fmt.Errorf("built %d bytes (%d raw, digest %08x), layout has %d (%d raw, %s)", len(comp), rawLen, crc, want.CompLen, want.RawLen, digestText(want))
		// The rebuild skipped checks the digest stands in for; building
		// with them names the cause when one of them fails (a different
		// reference than the layout was made with fails its MD5 check).
		if _, ok := src.(source.BlockAppender); ok && rebuild {
			buf.B = buf.B[:0]
			if _, _, cerr := m.build(ctx, src, i, c, buf, false); cerr != nil {
				buf.Release()
				m.log.Error("rebuilt segment differs from layout; refusing to serve it", "file", src.Name(), "container", i, "err", cerr)
				return nil, 0, source.Sum{}, fmt.Errorf("%w: %w", ErrMismatch, cerr)
			}
		}
	}
	if err != nil {
		buf.Release()
		err := fmt.Errorf("%w: %s: container %d at offset %d: %w", ErrMismatch, src.Name(), i, src.ContainerOffset(i), err)
		m.log.Error("rebuilt segment differs from layout; refusing to serve it", "file", src.Name(), "container", i, "err", err)
		return nil, 0, source.Sum{}, err
	}
	return buf, crc, sum, nil
}

// digestText describes the digest of s for messages.
func digestText(s layout.Segment) string {
	if s.NoDigest {
		return "digest not yet known"
	}
	return fmt.Sprintf("digest %08x", s.Digest)
}

// buildOrWait builds segment i of v (want, cached under key), or waits for
// the build already in flight, and returns it with a reference for the
// caller. The builds in flight are the Manager's: every VirtualBAM of the
// same file version shares them.
func (m *Manager) buildOrWait(ctx context.Context, v *VirtualBAM, key cache.Key, want layout.Segment, i int, skip func() bool) (*cache.Buf, error) {
	m.mu.Lock()
	if b, ok := m.building[key]; ok {
		b.waiters++
		m.mu.Unlock()
		return m.waitBuild(ctx, b)
	}
	// The segment may have been cached between the caller's lookup and
	// here; the in-flight entry is registered under the same lock that
	// finishing builds take after adding to the cache.
	if b, ok := m.cache.GetAgain(key); ok {
		m.mu.Unlock()
		return b, nil
	}
	if skip != nil && skip() {
		m.mu.Unlock()
		return nil, errSkipped
	}
	b := &building{done: make(chan struct{})}
	m.building[key] = b
	m.mu.Unlock()

	buf, err := m.buildChecked(ctx, v, want, i)
	if err == nil {
		m.cache.Add(key, buf)
	} else if errors.Is(err, ErrMismatch) {
		m.dropLayout(v)
	}
	m.finishBuild(key, b, buf, err)
	return buf, err
}

// buildChecked builds segment i of v (want, as the layout has it): checked
// against its digest when known (learned since the scan measured it), else
// checked in full and made from the bytes the scan measured (checkFirst),
// its digest then learned.
func (m *Manager) buildChecked(ctx context.Context, v *VirtualBAM, want layout.Segment, i int) (*cache.Buf, error) {
	if !want.NoDigest {
		buf, _, _, err := m.buildSegment(ctx, v.src, &v.party, i, want)
		return buf, err
	}
	ls, err := v.state(ctx)
	if err != nil {
		return nil, err
	}
	want = ls.want(i)
	buf, d, sum, err := m.buildSegment(ctx, v.src, &v.party, i, want)
	if err != nil || !want.NoDigest {
		return buf, err
	}
	if err := m.checkFirst(v, i, want, sum); err != nil {
		buf.Release()
		return nil, err
	}
	ls.learned(i, d)
	return buf, nil
}

// checkFirst checks that the first build of measured segment i of v,
// which only its lengths compared with the scan, was decoded from the
// bytes the scan measured, else they may be another version's: the
// container read has the content sum the scan recorded (want.Sum), so
// that a change of the file's metadata alone (chmod, a link added or
// removed, which move its ctime) changes nothing; without a sum, the file
// is still of the identity scanned (its ctime changes with every write).
// A sum that differs while the identity does not is the layout's fault
// (ErrMismatch: the caller drops it), else the file's (source.ErrChanged).
func (m *Manager) checkFirst(v *VirtualBAM, i int, want layout.Segment, got source.Sum) error {
	persisted := v.key != ""
	if want.HasSum && got.OK && got.CRC == want.Sum {
		return nil
	}
	if !want.HasSum || !got.OK {
		if !persisted {
			return nil // nothing to compare with: the scan kept no identity
		}
		id, _, err := m.identify(v.src)
		if err == nil && id != v.fid {
			err = fmt.Errorf("%w: not the version scanned (size %d, mtime %d, ctime %d then; %d, %d, %d now)",
				source.ErrChanged, v.fid.Size, v.fid.MTime, v.fid.CTime, id.Size, id.MTime, id.CTime)
		}
		if err != nil {
			return fmt.Errorf("%s: container %d: first build: %w", v.src.Name(), i, err)
		}
		return nil
	}
	kind := source.ErrChanged
	if persisted {
		if id, _, err := m.identify(v.src); err == nil && id == v.fid {
			kind = ErrMismatch
		}
	}
	err := fmt.Errorf("%w: %s: container %d at offset %d: first build: the container's bytes have content sum %08x, the scan measured %08x",
		kind, v.src.Name(), i, v.src.ContainerOffset(i), got.CRC, want.Sum)
	if kind == ErrMismatch {
		m.log.Error("rebuilt segment differs from layout; refusing to serve it", "file", v.src.Name(), "container", i, "err", err)
	}
	return err
}

// errLeaderCancelled is waitBuild's answer when the build it waited for
// ended with its leader's cancellation (an interrupted read, readahead at
// Close) while this caller's context had not: not a failure of the
// segment, which this caller then builds or waits for again.
var errLeaderCancelled = errors.New("the segment build waited for was cancelled by the caller leading it")

// waitBuild waits, as one of its waiters, for the build b led by another
// caller, and returns its result with a reference for this caller.
func (m *Manager) waitBuild(ctx context.Context, b *building) (*cache.Buf, error) {
	select {
	case <-b.done:
		if b.buf == nil && ctx.Err() == nil && (errors.Is(b.err, context.Canceled) || errors.Is(b.err, context.DeadlineExceeded)) {
			return nil, errLeaderCancelled
		}
		return b.buf, b.err
	case <-ctx.Done():
	}
	m.mu.Lock()
	select {
	case <-b.done:
		// Finished meanwhile: a reference was taken for us.
		m.mu.Unlock()
		if b.buf != nil {
			b.buf.Release()
		}
	default:
		b.waiters--
		m.mu.Unlock()
	}
	return nil, ctx.Err()
}

// finishBuild ends the build b of key with its result, taking a reference
// to buf for each waiter, and wakes them.
func (m *Manager) finishBuild(key cache.Key, b *building, buf *cache.Buf, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.building, key)
	b.buf, b.err = buf, err
	if buf != nil {
		for range b.waiters {
			buf.Retain()
		}
	}
	close(b.done)
}
