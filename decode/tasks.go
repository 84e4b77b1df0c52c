package decode

// BlockTask is the decompression of one block of a slice into a buffer
// of its own, or the reading of the slice's reference bases: the tasks of
// a slice share no state, so a BlockRunner may run them on any goroutines
// at once.
type BlockTask struct {
	blk    Block
	codecs *Codecs
	buf    []byte // lent by the Decoder's blockBufs, this task's alone
	raw    []byte // the block's raw bytes, once decompressed
	err    error
	// ref, when set, makes the task the reading of the slice's reference
	// bases instead (the other fields unused).
	ref *refFetch
}

// Decompress decodes the block into the task's buffer, or reads the
// reference bases; its error is also kept for the Decoder, which reports
// it as the unsplit decode would.
func (t *BlockTask) Decompress() error {
	if t.ref != nil {
		return t.ref.fetch()
	}
	t.raw, t.err = t.blk.decompress(t.codecs, t.buf)
	return t.err
}

// Size is the block's compressed bytes, a measure of the work of the
// task for a runner that shares the tasks out; for the reference, a
// quarter of its bases (copying a base costs less than decoding a byte).
func (t *BlockTask) Size() int {
	if t.ref != nil {
		return int(t.ref.end-t.ref.from) / 4
	}
	return len(t.blk.Data)
}

// Reference reports whether the task reads the slice's reference bases,
// which the records need first: a runner that has a worker to spare
// starts it there at once.
func (t *BlockTask) Reference() bool { return t.ref != nil }

// refFetch is the reading of the reference bases of a single-reference
// slice that sliceRef would make, done ahead as a task beside the slice's
// blocks.
type refFetch struct {
	src       ReferenceSource
	id        int
	from, end int64 // 0-based, end exclusive, as sliceRef asks
	buf       []byte
	err       error
	planned   bool
}

func (f *refFetch) fetch() error {
	f.buf, f.err = f.src.Bases(f.buf, f.id, f.from, f.end)
	return f.err
}

// planRef adds to d.tasks the reading of the reference bases that
// sliceRef will want for the slice sh, when it will read them from the
// reference: a single-reference slice without an embedded reference.
func (d *Decoder) planRef(ch *CompressionHeader, sh *SliceHeader) {
	d.pre = refFetch{}
	id := sh.RefSeqID
	if id < 0 || int(id) >= len(d.f.Refs) || sh.EmbeddedRefID >= 0 || !ch.ReferenceRequired || d.opt.Reference == nil {
		return
	}
	from, end, known := d.refSpan(sh)
	buf := d.refBuf[:0]
	if known {
		buf = roomFor(d.refBuf, int(max(end, from)-from))
	}
	d.pre = refFetch{src: d.opt.Reference, id: int(id), from: from, end: max(end, from), buf: buf, planned: true}
	d.tasks = append(d.tasks, BlockTask{ref: &d.pre})
}

// prefetched returns the bases and error of the reading of [from, end)
// of reference id that planRef had made ahead, if it did.
func (d *Decoder) prefetched(id int, from, end int64) ([]byte, bool, error) {
	p := &d.pre
	if !p.planned || p.id != id || p.from != from || p.end != end {
		return nil, false, nil
	}
	buf, err := p.buf, p.err
	*p = refFetch{}
	return buf, true, err
}

// BlockRunner runs the block decompressions of a slice.
type BlockRunner interface {
	// RunBlocks calls Decompress of every task exactly once, on any
	// goroutines and in any order, and returns once all have returned,
	// but for tasks[late] (late -1: none), which may still run then
	// while the Decoder goes on with the records: Wait waits for it.
	RunBlocks(tasks []BlockTask, late int)
	// Wait returns once every task of the last RunBlocks has returned.
	Wait()
}

// lateBlock is the block of a slice that a BlockRunner may still be
// decompressing while the records are decoded: the QS block of a
// container whose qualities are viewed in place (Decoder.viewQuals),
// whose bytes the records only measure, by its raw size, until they are
// handed over. Its stream stays pending meanwhile: a read of its bytes
// waits for it (streams.external).
type lateBlock struct {
	run  BlockRunner
	task *BlockTask
	x    *extStream // its stream, pending until finish
	at   int32      // its index among the slice's blocks
	done bool
}

// finish waits for the block's decompression and, done, gives its bytes
// to its stream; it returns the block's error, named as the unsplit
// decode names it.
func (l *lateBlock) finish() error {
	if !l.done {
		l.run.Wait()
		l.done = true
		if l.task.err == nil {
			l.x.data, l.x.pending = l.task.raw, false
		}
	}
	if l.task.err != nil {
		return blockAt(l.at, l.task.err)
	}
	return nil
}

// splitBlocks parses the blocks of the slice sh from data at *pos, hands
// their decompression to d.runner as tasks, the block of content ID
// lateID (-1: none) as a late one (lateBlock), with the reading of the
// slice's reference bases (planRef), and adds the blocks to the slice's
// streams. Its errors are those of the unsplit decode
// (sliceBlocks): the first block in order that fails to parse or to
// decompress.
func (d *Decoder) splitBlocks(ch *CompressionHeader, sh *SliceHeader, data []byte, pos *int, lateID int32) ([]byte, bool, error) {
	n := sh.NumBlocks
	major := d.f.Def.Major
	d.tasks = d.tasks[:0]
	var parseErr error
	late := -1
	for b := int32(0); b < n; b++ {
		blk, err := parseBlock(data, pos, major)
		if err != nil {
			parseErr = blockAt(b, err)
			break
		}
		if late < 0 && blk.ContentType == ContentExternal && blk.ContentID == lateID && blk.Method != MethodRaw && blk.RawSize > 0 {
			late = int(b)
		}
		d.tasks = append(d.tasks, BlockTask{blk: blk, codecs: d.opt.Codecs, buf: d.blockBufs.take(blk.ContentType, blk.ContentID)})
	}
	if parseErr != nil {
		late = -1
	} else {
		d.planRef(ch, sh)
	}
	d.runner.RunBlocks(d.tasks, late)
	if late >= 0 && !d.earlyDone(late) {
		// The unsplit decode names the first block that fails, which
		// may be the late one.
		d.runner.Wait()
		late = -1
	}
	var core []byte
	haveCore := false
	lateAt := -1
	for b := range d.tasks {
		t := &d.tasks[b]
		if t.ref != nil {
			continue // its error is sliceRef's
		}
		if b == late {
			lateAt = len(d.st.pool)
			d.st.addPending(t.blk)
			continue
		}
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
	if late >= 0 {
		// The pool no longer moves: its streams may be pointed at.
		d.late = lateBlock{run: d.runner, task: &d.tasks[late], x: &d.st.pool[lateAt], at: int32(late)}
		d.st.late = &d.late
	}
	return core, haveCore, nil
}

// earlyDone reports whether every task but tasks[late] succeeded.
func (d *Decoder) earlyDone(late int) bool {
	for b := range d.tasks {
		if b != late && d.tasks[b].ref == nil && d.tasks[b].err != nil {
			return false
		}
	}
	return true
}

// finishLate waits for the slice's late block, if it has one, and keeps
// its buffer; the records' qualities viewed in it are then readable. Its
// error, if any, is the one to report for the slice: the unsplit decode
// fails on it before decoding any record.
func (d *Decoder) finishLate() error {
	l := &d.late
	if l.task == nil {
		return nil
	}
	err := l.finish()
	if err == nil {
		d.keepBuf(&l.task.blk, l.task.buf, l.task.raw)
		if d.viewQuals && d.qsData == nil {
			d.qsData = l.x.data
		}
	}
	l.task.buf, l.task.raw = nil, nil
	*l = lateBlock{}
	d.st.late = nil
	return err
}
