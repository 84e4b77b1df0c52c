// Package fqzcomp decodes the fqzcomp_qual quality codec, CRAM block
// compression method 7 (CRAMcodecs.tex, "FQZComp quality codec"). It uses
// the range decoder and adaptive models of package arith.
package fqzcomp

import (
	"errors"
	"fmt"

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
	qmap     [256]byte
	qtab     [256]uint32
	ptab     [1024]uint32
	dtab     [256]uint32
}

// params is the decoded parameter header (FQZDecodeParams).
type params struct {
	gflags byte
	maxSel int
	maxSym int
	stab   [256]uint32
	p      []param
}

// Decode decodes one fqzcomp_qual stream (FQZDecode, CRAMcodecs.tex
// "FQZComp Data Stream"). rawSize is the expected decoded length (the CRAM
// block header's raw size), or -1 when unknown. The result holds the quality
// values as the CRAM QS data series stores them (Phred values, not +33).
func Decode(src []byte, rawSize int) ([]byte, error) {
	if rawSize > MaxSize {
		return nil, fmt.Errorf("%w: raw size %d exceeds limit %d", ErrCorrupt, rawSize, MaxSize)
	}
	v, pos, err := readUint7(src, 0)
	if err != nil {
		return nil, fmt.Errorf("total length: %w", err)
	}
	if v > MaxSize {
		return nil, fmt.Errorf("%w: total length %d exceeds limit %d", ErrCorrupt, v, MaxSize)
	}
	n := int(v)
	if rawSize >= 0 && n != rawSize {
		return nil, fmt.Errorf("%w: stream length %d, expected %d", ErrCorrupt, n, rawSize)
	}
	gp := new(params)
	k, err := gp.read(src[pos:])
	if err != nil {
		return nil, err
	}
	pos += k
	d := decoder{gp: gp, n: n}
	if n == 0 {
		return []byte{}, nil
	}
	if err := d.rc.Init(src[pos:]); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return d.run(len(src))
}

// decoder holds the models and state of one FQZDecode run.
type decoder struct {
	gp    *params
	n     int
	rc    arith.RangeDecoder
	qtab  []uint32 // per-context offset into qbuf, 0 = not yet created
	qbuf  []uint32 // quality models, created on first use
	nsym  int      // symbols per quality model
	lenM  [4]arith.Model
	revM  arith.Model
	dupM  arith.Model
	selM  arith.Model
	out   []byte
	revs  []bool
	lens  []int
	doRev bool
}

// run executes the main FQZDecode loop and the final ReverseQualities.
func (d *decoder) run(srcLen int) ([]byte, error) {
	gp := d.gp
	d.nsym = gp.maxSym + 1
	for i := range d.lenM {
		d.lenM[i] = arith.NewModel(256)
	}
	d.revM = arith.NewModel(2)
	d.dupM = arith.NewModel(2)
	if gp.maxSel > 0 {
		d.selM = arith.NewModel(gp.maxSel + 1)
	}
	stride := arith.ModelLen(d.nsym)
	d.qtab = make([]uint32, ctxSize)
	d.qbuf = make([]uint32, 1, 256*stride)
	d.out = make([]byte, min(d.n, max(minChunk, 64*srcLen)))
	d.doRev = gp.gflags&gflagDoRev != 0

	rc := &d.rc
	n := d.n
	pm := &gp.p[0]
	firstLen := true
	lastLen := 0
	var sel uint32
	for i := 0; i < n; {
		if err := rc.Err(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
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
			return nil, fmt.Errorf("%w: parameter selector %d for %d parameter blocks at output %d", ErrCorrupt, x, len(gp.p), i)
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
			return nil, fmt.Errorf("%w: record length %d with %d of %d bytes left", ErrCorrupt, recLen, n-i, n)
		}
		if d.doRev {
			d.revs = append(d.revs, rc.Decode(d.revM) != 0)
			d.lens = append(d.lens, recLen)
		}
		d.reserve(i + recLen)
		out := d.out[i : i+recLen]
		if pm.doDedup && rc.Decode(d.dupM) != 0 {
			if recLen > i {
				return nil, fmt.Errorf("%w: duplicate record of length %d at output %d", ErrCorrupt, recLen, i)
			}
			copy(out, d.out[i-recLen:i])
			i += recLen
			continue
		}
		d.record(pm, out, sel)
		i += recLen
	}
	if err := rc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	out := d.out[:n]
	if d.doRev {
		i := 0
		for r, rev := range d.revs {
			l := d.lens[r]
			if rev {
				q := out[i : i+l]
				for a, b := 0, l-1; a < b; a, b = a+1, b-1 {
					q[a], q[b] = q[b], q[a]
				}
			}
			i += l
		}
	}
	return out, nil
}

// reserve grows the output so that it holds at least end bytes.
func (d *decoder) reserve(end int) {
	if end <= len(d.out) {
		return
	}
	c := min(d.n, max(end, 2*len(d.out)))
	d.out = append(d.out, make([]byte, c-len(d.out))...)
}

// record decodes one record's qualities into out, updating the context after
// each value (FQZUpdateContext, CRAMcodecs.tex "FQZComp Models").
func (d *decoder) record(pm *param, out []byte, sel uint32) {
	rc := &d.rc
	stride := arith.ModelLen(d.nsym)
	qtab := d.qtab[:ctxSize]
	selCtx := sel << pm.sloc
	ctx := pm.context
	var qctx, delta uint32
	prevq := byte(0)
	p := len(out)
	for j := range out {
		off := qtab[ctx&(ctxSize-1)]
		if off == 0 {
			off = d.newQualModel(ctx&(ctxSize-1), stride)
		}
		q := rc.Decode(arith.Model(d.qbuf[off : off+uint32(stride)]))
		out[j] = pm.qmap[q]

		qctx = qctx<<pm.qshift + pm.qtab[q]
		c := (qctx & pm.qmask) << pm.qloc
		c += pm.ptab[min(1023, p)]
		c += pm.dtab[min(255, delta)]
		c += selCtx
		if prevq != q {
			delta++
		}
		prevq = q
		p--
		ctx = c
	}
}

// newQualModel creates the quality model for context ctx on first use.
func (d *decoder) newQualModel(ctx uint32, stride int) uint32 {
	off := len(d.qbuf)
	d.qbuf = append(d.qbuf, make([]uint32, stride)...)
	arith.InitModel(d.qbuf[off:], d.nsym)
	d.qtab[ctx] = uint32(off)
	return uint32(off)
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
	gp.p = make([]param, nparam)
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
