// Package fqzcomp decodes the fqzcomp_qual quality codec, CRAM block
// compression method 7 (CRAMcodecs.tex, "FQZComp quality codec"). It uses
// the range decoder and adaptive models of package arith.
package fqzcomp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"github.com/cramfs/cramfs/decode/codec/arith"
)

// ErrCorrupt is returned (wrapped with context) for any malformed stream.
var ErrCorrupt = errors.New("fqzcomp: corrupt stream")

// MaxSize is the largest decoded length accepted.
const MaxSize = 1 << 30

// version is the only fqzcomp_qual format version (FQZDecodeParams).
const version = 5

// Global and per-parameter flags (CRAMcodecs.tex, "FQZComp Data Stream").
const (
	gflagMultiParam = 1
	gflagHaveStab   = 2
	gflagDoRev      = 4

	pflagDoDedup  = 2
	pflagDoLen    = 4
	pflagDoSel    = 8
	pflagHaveQmap = 16
	pflagHavePtab = 32
	pflagHaveDtab = 64
	pflagHaveQtab = 128
)

// ctxSize is the number of quality contexts (a 16-bit context).
const ctxSize = 1 << 16

// minChunk is the smallest initial output allocation; larger outputs grow
// as records are decoded.
const minChunk = 1 << 20

// param is one parameter block (FQZDecodeSingleParam). ptab and dtab hold
// values already shifted to their context location.
type param struct {
	context  uint32
	fixedLen bool
	doDedup  bool
	doSel    bool
	maxSym   int
	qshift   uint
	qloc     uint
	sloc     uint
	qmask    uint32
	selCtx   uint32 // the current record's selector shifted to sloc
	qmap     [256]byte
	qtab     [256]uint32
	ptab     [1024]uint32
	dtab     [256]uint32
	// The direct layout's loop keeps the quality history shifted to
	// qloc (see derive): hq[q] is qtab[q]<<qloc, hmask qmask<<qloc and
	// qmul 1<<qshift; hqIdentity reports hq[q] == q for every q.
	// useDelta reports that dtab is not all zero, so that the delta
	// needs counting; wraps that contexts can exceed 16 bits (set by
	// params.read).
	hq         [256]uint32
	hmask      uint32
	qmul       uint32
	hqIdentity bool
	useDelta   bool
	wraps      bool
}

// derive sets the fields of pm that the direct layout's loop uses from
// the others. That loop keeps qctx<<qloc (modulo 2^32) as its history,
// h' = h<<qshift + qtab[q]<<qloc, and its quality part (qctx&qmask)<<qloc
// is then h&hmask: shifts modulo 2^32 commute with the sum and the mask.
func (pm *param) derive() {
	pm.hqIdentity = true
	for i, v := range pm.qtab {
		pm.hq[i] = v << (pm.qloc & 31)
		pm.hqIdentity = pm.hqIdentity && pm.hq[i] == uint32(i)
	}
	pm.hmask = pm.qmask << (pm.qloc & 31)
	pm.qmul = 1 << (pm.qshift & 31)
	pm.useDelta = slices.Max(pm.dtab[:]) != 0
}

// params is the decoded parameter header (FQZDecodeParams).
type params struct {
	gflags byte
	maxSel int
	maxSym int
	stab   [256]uint32
	p      []param
}

// AppendDecode decodes one fqzcomp_qual stream (FQZDecode, CRAMcodecs.tex
// "FQZComp Data Stream") and appends the quality values to dst, returning
// the extended slice; it allocates only when dst lacks the capacity.
// rawSize is the expected decoded length (the CRAM block header's raw
// size), or -1 when unknown. The quality values are those the CRAM QS data
// series stores (Phred values, not +33). The result never aliases src. On
// error the returned slice is unspecified.
func AppendDecode(dst, src []byte, rawSize int) ([]byte, error) {
	return appendDecode(dst, src, rawSize, maxDirectModels)
}

// appendDecode is AppendDecode with the limit on directly indexed model
// storage as a parameter, so that tests can force the other layout.
func appendDecode(dst, src []byte, rawSize, directLimit int) ([]byte, error) {
	if rawSize > MaxSize {
		return dst, fmt.Errorf("%w: raw size %d exceeds limit %d", ErrCorrupt, rawSize, MaxSize)
	}
	v, pos, err := readUint7(src, 0)
	if err != nil {
		return dst, fmt.Errorf("total length: %w", err)
	}
	if v > MaxSize {
		return dst, fmt.Errorf("%w: total length %d exceeds limit %d", ErrCorrupt, v, MaxSize)
	}
	n := int(v)
	if rawSize >= 0 && n != rawSize {
		return dst, fmt.Errorf("%w: stream length %d, expected %d", ErrCorrupt, n, rawSize)
	}
	d := decoderPool.Get().(*decoder)
	defer d.release()
	k, err := d.gp.read(src[pos:])
	if err != nil {
		return dst, err
	}
	pos += k
	if n == 0 {
		return dst, nil
	}
	if err := d.rc.Init(src[pos:]); err != nil {
		return dst, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return d.run(dst, n, len(src), directLimit)
}

// decoder holds the models and state of one FQZDecode run. decoders are
// recycled through decoderPool; run initialises everything it reads.
type decoder struct {
	gp   params
	rc   arith.RangeDecoder
	nsym int // symbols per quality model
	// Quality models, created on first use. With the direct layout
	// (direct.go), store holds one model per context up to the largest
	// the parameters can form. Otherwise (too many symbols and contexts
	// for that) qbuf holds arith.Models of stride words in order of
	// creation and qtab maps a context to its model's offset, 0 for none.
	// touched lists the contexts created, so that release can clear them
	// again.
	direct  bool
	store   modelStore
	qtab    []uint32
	qbuf    []uint32
	stride  uint32
	touched []uint32
	nt      int
	// Models of the per-record values; lenBuf and so on are their storage.
	lenM    [4]arith.Model
	revM    arith.Model
	dupM    arith.Model
	selM    arith.Model
	lenBuf  [4 * 257]uint32
	flagBuf [2 * 3]uint32
	selBuf  [257]uint32
	out     []byte // the output being decoded: dst[start:start+n]
	revs    []bool
	lens    []int
}

// decoderPool recycles decoders with their model storage.
var decoderPool = sync.Pool{New: func() any { return new(decoder) }}

// maxDirectModels is the largest directly indexed model storage, in words
// (16 MiB), a decoder uses and keeps in the pool: 65,536 contexts of up to
// 61 symbols. Streams that would need more use the indirect layout.
const maxDirectModels = 4 << 20

// smallModels is the size, in words (4 MiB), up to which the direct layout
// is used whatever the stream's length.
const smallModels = 1 << 20

// release clears the models the run created, leaving d.store's models
// not created and d.qtab all zero, drops d's references to the caller's
// data, and returns d to the pool.
func (d *decoder) release() {
	if d.direct {
		d.store.clear(d.touched[:d.nt])
	} else {
		for _, c := range d.touched[:d.nt] {
			d.qtab[c] = 0
		}
	}
	d.nt = 0
	d.out = nil
	d.rc = arith.RangeDecoder{}
	if cap(d.qbuf) > maxDirectModels {
		d.qbuf = nil
	}
	decoderPool.Put(d)
}

// anyDedup reports whether a parameter block of gp has duplicate records.
func (gp *params) anyDedup() bool {
	for i := range gp.p {
		if gp.p[i].doDedup {
			return true
		}
	}
	return false
}

// maxContext returns the largest quality context any record of gp can
// form: the largest initial context, or the sum of the largest context
// parts, or ctxSize-1 when that sum can exceed 16 bits (contexts are taken
// modulo 2^16).
func (gp *params) maxContext() uint32 {
	var top uint32
	for i := range gp.p {
		pm := &gp.p[i]
		top = max(top, pm.context&(ctxSize-1), min(pm.partSum(gp.maxSel), ctxSize-1))
	}
	return top
}

// partSum returns the sum of the largest context parts pm can form with
// selectors up to maxSel; contexts wrap modulo 2^16 only when it exceeds
// ctxSize-1. Each part is below 2^26, so the sum does not overflow.
func (pm *param) partSum(maxSel int) uint32 {
	return pm.qmask<<pm.qloc + slices.Max(pm.ptab[:]) + slices.Max(pm.dtab[:]) + uint32(maxSel)<<pm.sloc
}

// prepareModels chooses the quality models' layout for a stream of n
// values and makes room for them, all not yet created. With the direct
// layout, every context gets its own model in one slice, indexed directly
// by the context; contexts beyond the largest the parameters can form
// need no room.
func (d *decoder) prepareModels(n, directLimit int) {
	gp := &d.gp
	d.stride = uint32(arith.ModelLen(d.nsym))
	nctx := int(gp.maxContext()) + 1
	// The direct layout costs its whole size in memory the first time
	// (pages touched, or zeroed); short streams of many contexts, which
	// touch few of them, do better with the indirect one unless a pooled
	// decoder already has the room. Its models' reciprocals need totals
	// of at least 2, so at least two symbols.
	d.direct = false
	if d.nsym >= 2 && d.nsym <= maxDirectSymbols {
		stride := directStride(d.nsym)
		need := nctx * stride
		pooled := d.store != nil && d.store.stride() == stride && d.store.capacity() >= nctx
		d.direct = need <= directLimit && (need <= smallModels || need <= 16*n || pooled)
		if d.direct {
			if d.store == nil || d.store.stride() != stride {
				d.store = newStore(stride)
			}
			d.store.prepare(nctx)
		}
	}
	if !d.direct {
		if d.qtab == nil {
			d.qtab = make([]uint32, ctxSize)
		}
		// Offset 0 means no model.
		d.qbuf = append(d.qbuf[:0], 0)
	}
	if cap(d.touched) < nctx {
		d.touched = make([]uint32, nctx)
	}
	d.touched = d.touched[:nctx]
	d.nt = 0
}

// run executes the main FQZDecode loop and the final ReverseQualities,
// appending the n decoded values to dst.
func (d *decoder) run(dst []byte, n, srcLen, directLimit int) ([]byte, error) {
	gp := &d.gp
	d.nsym = gp.maxSym + 1
	for i := range d.lenM {
		d.lenM[i] = arith.InitModel(d.lenBuf[i*257:], 256)
	}
	d.revM = arith.InitModel(d.flagBuf[0:], 2)
	d.dupM = arith.InitModel(d.flagBuf[3:], 2)
	d.selM = nil
	if gp.maxSel > 0 {
		d.selM = arith.InitModel(d.selBuf[:], gp.maxSel+1)
	}
	d.prepareModels(n, directLimit)
	d.revs, d.lens = d.revs[:0], d.lens[:0]
	doRev := gp.gflags&gflagDoRev != 0
	// ReverseQualities turns records around after all are decoded. A
	// record is turned around as soon as it is decoded instead, while
	// its values are in cache, unless a duplicate record may copy values
	// of earlier ones as they were decoded: then at the end.
	lateRev := doRev && gp.anyDedup()

	// Decode straight into dst's spare capacity when it holds the whole
	// output; otherwise start with what a generous compression ratio of
	// the input allows, and grow as records are decoded.
	start := len(dst)
	c := n
	if cap(dst)-start < n {
		c = min(n, max(minChunk, 64*srcLen))
	}
	dst = slices.Grow(dst, c)
	d.out = dst[start : start+c]

	rc := &d.rc
	pm := &gp.p[0]
	firstLen := true
	lastLen := 0
	var sel uint32
	for i := 0; i < n; {
		if err := rc.Err(); err != nil {
			return dst, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		// FQZNewRecord: selector, parameter block, length, flags.
		sel = 0
		if pm.doSel {
			sel = uint32(rc.Decode(d.selM))
		}
		x := sel
		if gp.gflags&gflagHaveStab != 0 {
			x = gp.stab[sel]
		}
		if int(x) >= len(gp.p) {
			return dst, fmt.Errorf("%w: parameter selector %d for %d parameter blocks at output %d", ErrCorrupt, x, len(gp.p), i)
		}
		pm = &gp.p[x]
		recLen := lastLen
		if !pm.fixedLen || firstLen {
			recLen = int(rc.Decode(d.lenM[0])) |
				int(rc.Decode(d.lenM[1]))<<8 |
				int(rc.Decode(d.lenM[2]))<<16 |
				int(rc.Decode(d.lenM[3]))<<24
			firstLen = false
			lastLen = recLen
		}
		if recLen <= 0 || recLen > n-i {
			return dst, fmt.Errorf("%w: record length %d with %d of %d bytes left", ErrCorrupt, recLen, n-i, n)
		}
		rev := false
		if doRev {
			rev = rc.Decode(d.revM) != 0
			if lateRev {
				d.revs = append(d.revs, rev)
				d.lens = append(d.lens, recLen)
			}
		}
		if i+recLen > len(d.out) {
			// Grow the output region: double it, up to n.
			c := min(n, max(i+recLen, 2*len(d.out)))
			dst = slices.Grow(dst[:start+len(d.out)], c-len(d.out))
			d.out = dst[start : start+c]
		}
		if pm.doDedup && rc.Decode(d.dupM) != 0 {
			if recLen > i {
				return dst, fmt.Errorf("%w: duplicate record of length %d at output %d", ErrCorrupt, recLen, i)
			}
			copy(d.out[i:i+recLen], d.out[i-recLen:i])
			i += recLen
			continue
		}
		pm.selCtx = sel << (pm.sloc & 31)
		if d.direct {
			d.store.record(d, pm, d.out[i:i+recLen])
		} else {
			d.recordIndirect(pm, i, i+recLen)
		}
		if rev && !lateRev {
			reverse(d.out[i : i+recLen])
		}
		i += recLen
	}
	if err := rc.Err(); err != nil {
		return dst, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	out := d.out[:n]
	if lateRev {
		i := 0
		for r, rev := range d.revs {
			l := d.lens[r]
			if rev {
				reverse(out[i : i+l])
			}
			i += l
		}
	}
	return dst[:start+n], nil
}

// reverse reverses q in place, eight bytes from each end at a time.
func reverse(q []byte) {
	a, b := 0, len(q)
	for ; b-a >= 16; a, b = a+8, b-8 {
		x := binary.LittleEndian.Uint64(q[a:])
		y := binary.LittleEndian.Uint64(q[b-8:])
		binary.LittleEndian.PutUint64(q[a:], bits.ReverseBytes64(y))
		binary.LittleEndian.PutUint64(q[b-8:], bits.ReverseBytes64(x))
	}
	for b--; a < b; a, b = a+1, b-1 {
		q[a], q[b] = q[b], q[a]
	}
}

// recordIndirect is record for the indirect model layout: models are found
// through qtab, created on demand in qbuf, and decoded with
// arith.RangeDecoder.Decode. It serves streams of many symbols and
// contexts, which encoders rarely produce.
func (d *decoder) recordIndirect(pm *param, start, end int) {
	ctx := pm.context
	var qctx, st uint32
	for j := start; j < end; j++ {
		c := ctx & (ctxSize - 1)
		off := d.qtab[c]
		if off == 0 {
			off = uint32(len(d.qbuf))
			d.qbuf = slices.Grow(d.qbuf, int(d.stride))[:off+d.stride]
			arith.InitModel(d.qbuf[off:], d.nsym)
			d.qtab[c] = off
			d.touched[d.nt] = c
			d.nt++
		}
		q := uint32(d.rc.Decode(arith.Model(d.qbuf[off : off+d.stride])))
		d.out[j] = pm.qmap[q]

		qctx = qctx<<(pm.qshift&31) + pm.qtab[q]
		ctx = (qctx&pm.qmask)<<(pm.qloc&31) + pm.ptab[min(1023, uint(end-j))] + pm.dtab[(st>>8)&255] + pm.selCtx
		t := (st ^ q) & 0xFF
		st = st&^0xFF | q + ((t|-t)>>31)&((st-255<<8)>>31)<<8
	}
}

// read parses the parameter header (FQZDecodeParams) and returns its
// length in bytes.
func (gp *params) read(src []byte) (int, error) {
	if len(src) < 10 {
		return 0, fmt.Errorf("%w: parameter header needs at least 10 bytes, have %d", ErrCorrupt, len(src))
	}
	if src[0] != version {
		return 0, fmt.Errorf("%w: format version %d, want %d", ErrCorrupt, src[0], version)
	}
	gp.gflags = src[1]
	gp.maxSel, gp.maxSym = 0, 0
	pos := 2
	nparam := 1
	if gp.gflags&gflagMultiParam != 0 {
		nparam = int(src[pos])
		pos++
		if nparam == 0 {
			return 0, fmt.Errorf("%w: zero parameter blocks", ErrCorrupt)
		}
	}
	if nparam > 1 {
		gp.maxSel = nparam
	}
	if gp.gflags&gflagHaveStab != 0 {
		if pos >= len(src) {
			return 0, fmt.Errorf("%w: selector table truncated at offset %d", ErrCorrupt, pos)
		}
		gp.maxSel = int(src[pos])
		pos++
		k, err := readArray(src[pos:], gp.stab[:])
		if err != nil {
			return 0, fmt.Errorf("selector table: %w", err)
		}
		pos += k
	}
	if cap(gp.p) < nparam {
		gp.p = make([]param, nparam)
	}
	gp.p = gp.p[:nparam]
	for i := range gp.p {
		pm := &gp.p[i]
		k, err := pm.read(src[pos:])
		if err != nil {
			return 0, fmt.Errorf("parameter block %d at offset %d: %w", i, pos, err)
		}
		if pm.doSel && gp.maxSel == 0 {
			return 0, fmt.Errorf("%w: parameter block %d uses a selector but none is defined", ErrCorrupt, i)
		}
		pos += k
		gp.maxSym = max(gp.maxSym, pm.maxSym)
	}
	for i := range gp.p {
		gp.p[i].wraps = gp.p[i].partSum(gp.maxSel) > ctxSize-1
	}
	return pos, nil
}

// read parses one parameter block (FQZDecodeSingleParam) and returns its
// length in bytes. As in htscodecs, qtab is only stored when qbits > 0.
func (pm *param) read(src []byte) (int, error) {
	if len(src) < 7 {
		return 0, fmt.Errorf("%w: parameter block needs 7 bytes, have %d", ErrCorrupt, len(src))
	}
	pm.context = uint32(src[0]) | uint32(src[1])<<8
	pflags := src[2]
	pm.fixedLen = pflags&pflagDoLen != 0
	pm.doDedup = pflags&pflagDoDedup != 0
	pm.doSel = pflags&pflagDoSel != 0
	pm.maxSym = int(src[3])
	qbits := uint(src[4] >> 4)
	pm.qshift = uint(src[4] & 15)
	pm.qloc = uint(src[5] >> 4)
	pm.sloc = uint(src[5] & 15)
	ploc := uint(src[6] >> 4)
	dloc := uint(src[6] & 15)
	pm.qmask = 1<<qbits - 1
	pos := 7

	if pflags&pflagHaveQmap != 0 {
		if len(src)-pos < pm.maxSym {
			return 0, fmt.Errorf("%w: quality map of %d bytes truncated", ErrCorrupt, pm.maxSym)
		}
		// Symbols beyond the map decode to 255, as in htscodecs.
		for i := range pm.qmap {
			pm.qmap[i] = 0xFF
		}
		copy(pm.qmap[:], src[pos:pos+pm.maxSym])
		pos += pm.maxSym
	} else {
		for i := range pm.qmap {
			pm.qmap[i] = byte(i)
		}
	}
	// A decoder is reused: tables the block does not store are cleared.
	pm.qtab, pm.ptab, pm.dtab = [256]uint32{}, [1024]uint32{}, [256]uint32{}
	if qbits > 0 {
		if pflags&pflagHaveQtab != 0 {
			k, err := readArray(src[pos:], pm.qtab[:])
			if err != nil {
				return 0, fmt.Errorf("qtab: %w", err)
			}
			pos += k
		} else {
			for i := range pm.qtab {
				pm.qtab[i] = uint32(i)
			}
		}
	}
	if pflags&pflagHavePtab != 0 {
		k, err := readArray(src[pos:], pm.ptab[:])
		if err != nil {
			return 0, fmt.Errorf("ptab: %w", err)
		}
		pos += k
		for i := range pm.ptab {
			pm.ptab[i] <<= ploc
		}
	}
	if pflags&pflagHaveDtab != 0 {
		k, err := readArray(src[pos:], pm.dtab[:])
		if err != nil {
			return 0, fmt.Errorf("dtab: %w", err)
		}
		pos += k
		for i := range pm.dtab {
			pm.dtab[i] <<= dloc
		}
	}
	pm.derive()
	return pos, nil
}

// readArray decodes a two-level run-length encoded monotonic table into a
// (ReadArray, CRAMcodecs.tex "FQZComp Data Stream"), following htscodecs'
// bounds: at most 1024 first-level run lengths. It returns the bytes read.
func readArray(src []byte, a []uint32) (int, error) {
	size := min(len(a), 1024)
	var runs [1024]int
	nr, z, last, i := 0, 0, -1, 0
	for ; z < size && i < len(src); i++ {
		run := int(src[i])
		runs[nr] = run
		nr++
		z += run
		if run == last {
			if i+1 >= len(src) {
				return 0, fmt.Errorf("%w: table copy count truncated at offset %d", ErrCorrupt, i+1)
			}
			i++
			cp := int(src[i])
			z += run * cp
			for ; cp > 0 && z <= size && nr < len(runs); cp-- {
				runs[nr] = run
				nr++
			}
		}
		if nr >= len(runs) {
			return 0, fmt.Errorf("%w: table has too many run lengths", ErrCorrupt)
		}
		last = run
	}
	r := 0
	for j, v := 0, uint32(0); j < size; v++ {
		if r >= nr {
			return 0, fmt.Errorf("%w: table runs cover %d of %d entries", ErrCorrupt, j, size)
		}
		runLen, part := 0, 0
		for {
			part = runs[r]
			r++
			runLen += part
			if part != 255 || r >= nr {
				break
			}
		}
		if part == 255 {
			return 0, fmt.Errorf("%w: table run unterminated", ErrCorrupt)
		}
		for ; runLen > 0 && j < size; runLen-- {
			a[j] = v
			j++
		}
	}
	return i, nil
}

// readUint7 reads a big-endian base-128 integer of at most 5 bytes
// (ReadUint7, CRAMcodecs.tex "Other basic functions") at src[pos] and
// returns it with the position after it.
func readUint7(src []byte, pos int) (uint32, int, error) {
	var v uint32
	for i := pos; i < pos+5; i++ {
		if i >= len(src) {
			return 0, 0, fmt.Errorf("%w: uint7 truncated at offset %d", ErrCorrupt, i)
		}
		if v >= 1<<25 {
			return 0, 0, fmt.Errorf("%w: uint7 at offset %d overflows 32 bits", ErrCorrupt, pos)
		}
		c := src[i]
		v = v<<7 | uint32(c&0x7F)
		if c&0x80 == 0 {
			return v, i + 1, nil
		}
	}
	return 0, 0, fmt.Errorf("%w: uint7 at offset %d longer than 5 bytes", ErrCorrupt, pos)
}
