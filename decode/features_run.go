package decode

// fastRun walks up to n features while each is one a long read has most
// of (a substitution, an inserted base, a deletion or an insertion: the
// classes of runClass) with its values at hand: a code (FC) and position
// (FP) of one byte each, a substitution code (BS) or inserted base (BA)
// of one byte in a decoded EXTERNAL block, a deletion's length (DL) of
// one EXTERNAL byte, an insertion's bases (IN) BYTE_ARRAY_STOP in a
// decoded block; the match before it, and the feature, within the
// reference, the slice, the bases the view holds and the read, with no
// 'N' in the match when MD or NM is generated. It returns how many
// features it took. A feature it does not take it leaves unread for
// feature, whose rules it follows and whose errors it never meets: every
// check that could fail, or send feature to another branch, sends the
// feature there instead.
//
// What it saves over feature is per feature: the dispatch through
// feature's switch and each code's method, the series read through their
// encodings, and the error paths.
func (r *featureWalker[S]) fastRun(n int) int {
	fc, fp, v := r.fx.fc, r.fx.fp, r.view
	if fc == nil || fp == nil || v.marks || !r.hasRef || !r.placed || r.n <= 0 || int64(len(r.seq)) != r.n || r.md.dist < 0 {
		return 0
	}
	dlx, inx, inStop := runBlocks(r.ds, r.st)
	if !distinct(fc, fp, r.fx.bs, r.fx.ba, dlx, inx) {
		return 0 // series sharing a block interleave their values there
	}
	fcs, fps := rest(fc), rest(fp)
	m := min(len(fcs), len(fps), n)
	bss, bas, dls, ins := restOf(r.fx.bs), restOf(r.fx.ba), restOf(dlx), restOf(inx)
	// The bases below hi are the view's, in the slice and the reference.
	hi := min(v.start+int64(len(v.buf)), v.limit, r.refLen)
	md := r.md.active()
	bsPos, baPos, dlPos, inPos := 0, 0, 0, 0
	k := 0
	for ; k < m; k++ {
		c, d := runClass[fcs[k]], fps[k]
		pos := int64(d) + r.prevPos
		gap := pos - r.seqPos
		at := r.refPos + gap
		if d >= 0x80 || c == runLeave || gap < 0 || r.refPos < v.start || at > hi || md && gap > 0 && v.hasN(r.refPos, at) {
			break
		}
		var ok bool
		var insLen int64 // an insertion's bases
		switch c {
		case runSubst:
			ok = bsPos < len(bss) && bss[bsPos] <= 3 && at < hi && pos <= r.n
		case runInsBase:
			ok = baPos < len(bas) && pos <= r.n
		case runDel:
			ok = dlPos < len(dls) && dls[dlPos] > 0 && dls[dlPos] < 0x80 && at+int64(dls[dlPos]) <= hi && pos <= r.n+1
		case runIns:
			insLen = int64(untilStop(ins[inPos:], inStop))
			ok = insLen > 0 && pos-1+insLen <= r.n
		}
		if !ok {
			break
		}
		// Taken: the match up to the feature, then the feature.
		r.prevPos = pos
		if gap > 0 {
			copy(r.seq[r.seqPos-1:pos-1], v.buf[r.refPos-v.start:at-v.start])
			if md {
				r.md.dist += gap
			}
			r.extend(cigM, gap)
			r.refPos, r.seqPos = at, pos
		}
		switch c {
		case runSubst:
			refCall := v.buf[at-v.start]
			r.seq[pos-1] = r.sm[l1[refCall]][bss[bsPos]]
			bsPos++
			r.md.mismatch(refCall)
			r.md.edits++
			r.extend(cigM, 1)
			r.seqPos++
			r.refPos++
		case runInsBase:
			r.seq[pos-1] = bas[baPos]
			baPos++
			r.extend(cigI, 1)
			r.seqPos++
			r.md.edits++
		case runDel:
			dl := int64(dls[dlPos])
			dlPos++
			if md {
				r.md.flushDist()
				if r.md.md {
					r.md.char('^')
					r.md.ref(v.buf[at-v.start:at-v.start+dl], dl)
					r.md.dist = 0
				}
				r.md.edits += dl
			}
			r.extend(cigD, dl)
			r.refPos += dl
		case runIns:
			copy(r.seq[pos-1:], ins[inPos:inPos+int(insLen)])
			inPos += int(insLen) + 1
			r.extend(cigI, insLen)
			r.seqPos += insLen
			r.md.edits += insLen
		}
	}
	fc.pos += k
	fp.pos += k
	if bsPos > 0 {
		r.fx.bs.pos += bsPos
	}
	if baPos > 0 {
		r.fx.ba.pos += baPos
	}
	if dlPos > 0 {
		dlx.pos += dlPos
	}
	if inPos > 0 {
		inx.pos += inPos
	}
	return k
}

// runBlocks are the decoded blocks both fast runs read a deletion's
// length (DL, one EXTERNAL byte) and an insertion's bases (IN,
// BYTE_ARRAY_STOP) from, with IN's stop byte; nil where the series has
// another encoding or its block is not at hand in this slice.
func runBlocks(ds *[numDataSeries]*Encoding, st *streams) (dl, in *extStream, inStop byte) {
	if e := ds[DSDL]; e != nil && e.ID == EncodingExternal && e.x != nil && e.xGen == st.gen && !e.x.pending {
		dl = e.x
	}
	if e := ds[DSIN]; e != nil && e.ID == EncodingByteArrayStop && e.x != nil && e.xGen == st.gen && !e.x.pending && !e.x.measured {
		in, inStop = e.x, e.Stop
	}
	return dl, in, inStop
}

// restOf is rest of x, nil for no stream.
func restOf(x *extStream) []byte {
	if x == nil {
		return nil
	}
	return rest(x)
}

// distinct reports whether the streams that are not nil are different
// blocks.
func distinct(xs ...*extStream) bool {
	for i, x := range xs {
		for _, y := range xs[i+1:] {
			if x != nil && x == y {
				return false
			}
		}
	}
	return true
}
