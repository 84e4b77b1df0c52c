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
	if c.level == 0 {
		return c.stored.Begin(dst)
	}
	c.run, c.raw = dst, 0
	return c.stage[:0]
}

// Cut emits every full block of the data appended to buf and returns the
// buffer to append more data to. It is called after appending, as often
// as convenient; a block is only cut once more than MaxBlockData bytes
// are pending.
func (c *Compressor) Cut(buf []byte) ([]byte, error) {
	if c.level == 0 {
		return c.stored.Cut(buf), nil
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
// dst with the run's blocks and the number of data bytes they hold.
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
