package decode

// BlockTask is the decompression of one block of a slice into a buffer
// of its own: the tasks of a slice share no state, so a BlockRunner may
// run them on any goroutines at once.
type BlockTask struct {
	blk    Block
	codecs *Codecs
	buf    []byte // lent by the Decoder's blockBufs, this task's alone
	raw    []byte // the block's raw bytes, once decompressed
	err    error
}

// Decompress decodes the block into the task's buffer; its error is also
// kept for the Decoder, which reports it as the unsplit decode would.
func (t *BlockTask) Decompress() error {
	t.raw, t.err = t.blk.decompress(t.codecs, t.buf)
	return t.err
}

// Size is the block's compressed bytes, a measure of the work of the
// task for a runner that shares the tasks out.
func (t *BlockTask) Size() int { return len(t.blk.Data) }

// BlockRunner runs the block decompressions of a slice.
type BlockRunner interface {
	// RunBlocks calls Decompress of every task exactly once, on any
	// goroutines and in any order, and returns once all have returned.
	RunBlocks(tasks []BlockTask)
}

// splitBlocks parses the n blocks of a slice from data at *pos, hands
// their decompression to d.runner as tasks, and adds the decompressed
// blocks to the slice's streams. Its errors are those of the unsplit
// decode (sliceBlocks): the first block in order that fails to parse or
// to decompress.
func (d *Decoder) splitBlocks(data []byte, pos *int, n int32) ([]byte, bool, error) {
	major := d.f.Def.Major
	d.tasks = d.tasks[:0]
	var parseErr error
	for b := int32(0); b < n; b++ {
		blk, err := parseBlock(data, pos, major)
		if err != nil {
			parseErr = blockAt(b, err)
			break
		}
		d.tasks = append(d.tasks, BlockTask{blk: blk, codecs: d.opt.Codecs, buf: d.blockBufs.take(blk.ContentType, blk.ContentID)})
	}
	d.runner.RunBlocks(d.tasks)
	var core []byte
	haveCore := false
	for b := range d.tasks {
		t := &d.tasks[b]
		if t.err != nil {
			return nil, false, blockAt(int32(b), t.err)
		}
		d.addBlock(&t.blk, t.buf, t.raw)
		if t.blk.ContentType == ContentCore {
			core, haveCore = t.raw, true
		}
		t.buf, t.raw = nil, nil // the buffers stay with blockBufs only
	}
	if parseErr != nil {
		return nil, false, parseErr
	}
	return core, haveCore, nil
}
