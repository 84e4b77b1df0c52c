package bgzf

// maxStage is the largest staging buffer a Compressor keeps between runs;
// a run with a longer record leaves a larger one to the collector.
const maxStage = 4 << 20

// Begin starts a run of BGZF blocks (SAMv1 §4.1) appended to dst and
// returns the buffer the run's data is to be appended to. Blocks are cut
// as they fill, by Cut, so the data never has to be held whole: at level
// 0 the data buffer is dst itself and blocks are closed in place (see
// Stored); at higher levels data is staged in a buffer of the
// Compressor's and each full block is compressed onto dst while its bytes
// are still in cache. The blocks are those AppendBlocks makes of the same
// data.
//
//	buf := c.Begin(dst)
//	for ... { buf = append(buf, ...); buf, err = c.Cut(buf) }
//	dst, n, err = c.End(buf)
func (c *Compressor) Begin(dst []byte) []byte {
	c.start = len(dst)
	if c.level == 0 {
		return c.stored.Begin(dst)
	}
	c.run, c.raw = dst, 0
	return c.stage[:0]
}

// A Sink takes the blocks of a run as they are cut, so that the run's
// buffer need not hold them all: a writer that can write them now.
type Sink interface {
	// Take is offered the run's blocks cut and not yet taken, whole
	// blocks in order. It takes the first n bytes (0 to none, and it may
	// end within a block: the bytes are the output's) and returns n; the
	// rest stays in the run's buffer, offered again with the blocks cut
	// after it. An error stops the run.
	Take(blocks []byte) (n int, err error)
}

// SetSink makes the runs that follow offer their blocks to s, once at
// least min bytes of them wait (nil: no sink, every block stays in the
// buffer End returns). What End returns is then the run's blocks that s
// did not take; a Stored used alone knows no sink.
func (c *Compressor) SetSink(s Sink, min int) {
	c.sink, c.sinkMin = s, max(min, 1)
}

// offer gives the sink the run's blocks cut and not yet taken, which
// are buf[c.start:end], when there are enough of them, and moves what it
// leaves, with the bytes after end, to c.start. It returns buf shortened
// by the bytes taken and their number.
func (c *Compressor) offer(buf []byte, end int) ([]byte, int, error) {
	if c.sink == nil || end-c.start < c.sinkMin {
		return buf, 0, nil
	}
	n, err := c.sink.Take(buf[c.start:end])
	if err != nil || n <= 0 {
		return buf, 0, err
	}
	n = min(n, end-c.start)
	k := copy(buf[c.start:], buf[c.start+n:])
	return buf[:c.start+k], n, nil
}

// Cut emits every full block of the data appended to buf, offers the
// blocks to the Sink if there is one, and returns the buffer to append
// more data to. It is called after appending, as often as convenient; a
// block is only cut once more than MaxBlockData bytes are pending.
func (c *Compressor) Cut(buf []byte) ([]byte, error) {
	if c.level == 0 {
		buf = c.stored.Cut(buf)
		buf, n, err := c.offer(buf, c.stored.hdr)
		c.stored.hdr -= n
		return buf, err
	}
	off := 0
	for len(buf)-off > MaxBlockData {
		var err error
		if c.run, err = c.appendBlock(c.run, buf[off:off+MaxBlockData]); err != nil {
			return buf, err
		}
		off += MaxBlockData
		c.raw += MaxBlockData
	}
	if off == 0 {
		return buf, nil
	}
	var err error
	if c.run, _, err = c.offer(c.run, len(c.run)); err != nil {
		return buf, err
	}
	return buf[:copy(buf, buf[off:])], nil
}

// Pos returns the offset in the run's data of the end of buf, the buffer
// as returned by Begin or Cut with data appended since.
func (c *Compressor) Pos(buf []byte) int64 {
	if c.level == 0 {
		return c.stored.Pos(buf)
	}
	return c.raw + int64(len(buf))
}

// End closes the last block of the run, if it holds any data, and returns
// dst with the run's blocks (those a Sink did not take) and the number of
// data bytes the run's blocks hold.
func (c *Compressor) End(buf []byte) ([]byte, int64, error) {
	if c.level == 0 {
		dst := c.stored.End(buf)
		return dst, c.stored.Raw(), nil
	}
	buf, err := c.Cut(buf)
	if err != nil {
		return c.run, c.raw, err
	}
	if len(buf) > 0 {
		if c.run, err = c.appendBlock(c.run, buf); err != nil {
			return c.run, c.raw, err
		}
		c.raw += int64(len(buf))
	}
	if cap(buf) <= maxStage {
		c.stage = buf[:0]
	}
	dst, raw := c.run, c.raw
	c.run = nil
	return dst, raw, nil
}
