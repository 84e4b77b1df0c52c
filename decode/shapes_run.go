package decode

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
)

// The feature classes of fastRun (runClass): the codes a long read has
// most of. Every other code is runLeave, left to the general path.
const (
	runLeave   = iota
	runSubst   // 'X': one substituted base
	runInsBase // 'i': one inserted base
	runDel     // 'D': a deletion of DL bases
	runIns     // 'I': an insertion of IN's bases
)

// runClass is the class of each feature code.
var runClass = [256]uint8{'X': runSubst, 'i': runInsBase, 'D': runDel, 'I': runIns}

// runRule is what a feature of one class does, as masks rather than
// branches, so that fastRun's loop does not branch on the feature's code
// (a long read's codes follow no pattern the CPU can predict): the CIGAR
// operation it extends, whether its length moves it along the read (seq)
// and the reference (ref), whether it ends MD's count of matches with an
// item (mdItem: a mismatch or a deletion), and whether that item spells
// out its length's bases (mdBases: a deletion's). A mask is -1 for yes, 0
// for no.
type runRule struct {
	op                        uint32
	seq, ref, mdItem, mdBases int64
}

// runRules is the rule of each class (a power of two long, so that an
// index masked to it needs no bounds check).
var runRules = [8]runRule{
	runSubst:   {op: cigM, seq: -1, ref: -1, mdItem: -1},
	runInsBase: {op: cigI, seq: -1},
	runDel:     {op: cigD, ref: -1, mdItem: -1, mdBases: -1},
	runIns:     {op: cigI, seq: -1},
}

const (
	// runNoOp stands for "no operation yet" in fastRun's CIGAR count: it
	// differs from every operation, so the first one counts as a change.
	runNoOp = 15
	// runMaxLen bounds the read, and the CIGAR operation open, that
	// fastRun takes, and runMaxFeatures the features of one call, so
	// that no operation it counts reaches BAM's 28 bits (2^26 + 2^26 +
	// 127 * 2^19 < 2^28): an operation's length then never needs the
	// cut emit makes, and the sums follow from the positions.
	runMaxLen      = 1 << 26
	runMaxFeatures = 1 << 19
)

// fastRun walks up to n features while each is one of those a long read
// has most of, with its values at hand: a code (FC) and position (FP) of
// one byte each in decoded EXTERNAL blocks, a match before it that lies
// in the view with no 'N' known in it, and then a substitution, an
// inserted base, a deletion (its length one EXTERNAL byte) or an
// insertion (its bases BYTE_ARRAY_STOP in a decoded block), of at least
// one base, that reads no other series and stays within the reference,
// the view and the read. It returns how many features it took; a feature
// it does not take it leaves unread, for advance and feature, whose rules
// (and errors) it only shortcuts. A marks view only: its bases are never
// copied.
//
// Its loop branches only on what is rare (a feature it leaves, an
// insertion's search for its stop byte): a feature's effects come from its
// class's runRule, and the CIGAR is counted by its changes of operation.
// The bases the counted operations cover on the reference and in the read
// (refSum, querySum) are not added up per operation: within the bounds of
// runMaxLen they are the walk's moves along the reference and the read,
// less what the open operation holds (pending), added once at the end.
// MD's text and NM are counted whether the record generates them or not
// (unused when it does not).
func (w *leanWalker) fastRun(n int) int {
	fc, fp, v := w.fx.fc, w.fx.fp, w.view
	if fc == nil || fp == nil || !v.marks || !w.hasRef || !w.placed || !w.fx.skipBS || !w.fx.skipBA {
		return 0
	}
	// Reads of no bases, a past MD (dist -1), a position before the view
	// or outside the 'N' scan known are the general path's.
	if w.n <= 0 || w.n >= runMaxLen || w.cigLen >= runMaxLen || w.md.dist < 0 || w.refPos < v.start {
		return 0
	}
	nHi := int64(math.MaxInt64) // a match may reach this far
	if w.md.active() {
		if !v.nScanned || w.refPos < v.nFrom || w.refPos > v.nNext {
			return 0
		}
		nHi = v.nNext
	}
	dlx, inx, inStop := runBlocks(w.ds, w.st)
	if !distinct(fc, fp, dlx, inx) {
		return 0 // series sharing a block interleave their values there
	}
	fcs, fps := rest(fc), rest(fp)
	m := min(len(fcs), len(fps), n, runMaxFeatures)
	dls, ins := restOf(dlx), restOf(inx)
	hi := min(v.start+v.size, v.limit, w.refLen) // the view answers for bases below
	seqMax := w.n
	refPos, seqPos, prevPos := w.refPos, w.seqPos, w.prevPos
	cur, open := w.cigOp, w.cigLen
	ops := w.ops
	if open == 0 {
		cur, ops = runNoOp, ops-1
	}
	dist, text, edits := w.md.dist, w.md.text, w.md.edits
	dlPos, inPos := 0, 0
	k := 0
	for ; k < m; k++ {
		c := runClass[fcs[k]]
		d := fps[k]
		r := &runRules[c&7]
		pos := int64(d) + prevPos
		gap := pos - seqPos // the matches before the feature
		at := refPos + gap
		// The feature's length: one base, DL's byte, or IN's bases.
		var dv int64
		if dlPos < len(dls) {
			dv = int64(dls[dlPos])
		}
		dv &^= -(dv >> 7) // an ITF-8 value of more than one byte: 0, left
		isDel := b2i(c == runDel)
		fl := 1 ^ (1^dv)&-isDel
		if c == runIns {
			fl = int64(untilStop(ins[inPos:], inStop))
		}
		// A feature before the read's position (overlapping the last
		// one) is left, so that the position follows from the feature's
		// alone; pos >= seqPos > 0 then, and pos <= n+1 follows from the
		// read's end, whether the feature moves along the read or not.
		if d >= 0x80 || c == runLeave || gap < 0 || fl <= 0 ||
			at+fl&r.ref > hi || pos-1+fl&r.seq > seqMax || at > nHi {
			break
		}
		// Taken: the match up to the feature, then the feature.
		dlPos += int(isDel)
		if c == runIns {
			inPos += int(fl) + 1
		}
		prevPos = pos
		// The CIGAR: an operation ends where the next one differs.
		grew := b2i(gap > 0)
		ended := grew & b2i(cur != cigM)
		if gap > 0 {
			cur = cigM
		}
		open = open&^-ended + gap
		changed := b2i(cur != r.op)
		cur = r.op
		open = open&^-changed + fl
		ops += int(ended + changed)
		// MD's text: the matches counted, then the item.
		dist += gap
		dd := int64(smallDigits[min(uint64(dist), 255)])
		if dist > 255 {
			dd = digits(dist)
		}
		text += (dd+1)&r.mdItem + fl&r.mdBases
		dist &^= r.mdItem
		edits += fl
		seqPos = pos + fl&r.seq
		refPos = at + fl&r.ref
	}
	if k == 0 {
		return 0
	}
	fc.pos += k
	fp.pos += k
	if dlPos > 0 {
		dlx.pos += dlPos
	}
	if inPos > 0 {
		inx.pos += inPos
	}
	w.refSum += pending(cigRefOps, w.cigOp, w.cigLen) + refPos - w.refPos - pending(cigRefOps, cur, open)
	w.querySum += pending(cigQueryOps, w.cigOp, w.cigLen) + seqPos - w.seqPos - pending(cigQueryOps, cur, open)
	w.refPos, w.seqPos, w.prevPos = refPos, seqPos, prevPos
	w.cigOp, w.cigLen, w.ops = cur, open, ops
	w.md.dist, w.md.text, w.md.edits = dist, text, edits
	return k
}

// The CIGAR operations that cover bases of the reference and of the read
// (BAM's reference and query lengths), as bit masks by operation.
const (
	cigRefOps   = 1<<cigM | 1<<cigD | 1<<cigN
	cigQueryOps = 1<<cigM | 1<<cigI | 1<<cigS
)

// pending is what an open CIGAR operation op of length k adds to the
// sum of the operations in mask.
func pending(mask uint32, op uint32, k int64) int64 {
	return k * int64(mask>>op&1)
}

// rest is what is left to read of x's decoded bytes.
func rest(x *extStream) []byte {
	if x.pos >= len(x.data) {
		return nil
	}
	return x.data[x.pos:]
}

// b2i is 1 for true, 0 for false (a flag set without a branch).
func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// pow10s holds the powers of ten below 2^32 (digits' thresholds), padded
// to a power of two.
var pow10s = [16]uint32{1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9}

// digits is uintLen without a loop: the decimal digits of uint32(v). The
// bit length times log10(2) (1233/4096) is the digits of the power of two
// below, less one; one more where v reaches the next power of ten. v|1
// has as many digits as v, and at least one bit.
func digits(v int64) int64 {
	u := uint32(v) | 1
	t := uint(bits.Len32(u)) * 1233 >> 12
	return int64(t) + b2i(u >= pow10s[t&15])
}

// smallDigits holds digits(v) for v below 256.
var smallDigits = func() (t [256]uint8) {
	for i := range t {
		t[i] = uint8(digits(int64(i)))
	}
	return
}()

// untilStop is bytes.IndexByte(b, stop) for the short insertions of a long
// read: the first eight bytes are searched at once, in a word.
func untilStop(b []byte, stop byte) int {
	if len(b) < 8 {
		return bytes.IndexByte(b, stop)
	}
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	x := binary.LittleEndian.Uint64(b) ^ ones*uint64(stop)
	// The lowest byte flagged is the first zero byte of x (a borrow
	// only flags bytes above a zero one).
	if t := (x - ones) &^ x & highs; t != 0 {
		return bits.TrailingZeros64(t) >> 3
	}
	if j := bytes.IndexByte(b[8:], stop); j >= 0 {
		return 8 + j
	}
	return -1
}
