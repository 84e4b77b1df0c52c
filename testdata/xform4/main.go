// Command xform4 rewrites a CRAM 4.0 file written by samtools so that it
// uses the CRAM 4.0 transforms htslib 1.16 reads but no writer emits:
// XRLE for QS, XPACK for BA (bytes, unpacked from a block) and MQ
// (integers, from core bits), XDELTA for RL (integers) and for the values
// of fixed-length tags (16-bit words). The records are unchanged, so
// samtools must decode the result as it decodes the input. testdata/make.sh
// runs it for the xform4 fixtures:
//
//	go run ./testdata/xform4 IN.cram OUT.cram
//
// Every block is written uncompressed. A transform is applied to a
// container only where its conditions hold (see each); it prints the
// transforms applied and fails if there were none.
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sort"

	"github.com/cramfs/cramfs/decode"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: xform4 IN.cram OUT.cram")
		os.Exit(2)
	}
	in, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail(err)
	}
	out, applied, err := rewrite(in)
	if err != nil {
		fail(err)
	}
	if len(applied) == 0 {
		fail(errors.New("no transform applies"))
	}
	if err := os.WriteFile(os.Args[2], out, 0o644); err != nil {
		fail(err)
	}
	names := make([]string, 0, len(applied))
	for k := range applied {
		names = append(names, k)
	}
	sort.Strings(names)
	fmt.Println(names)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "xform4:", err)
	os.Exit(1)
}

// Encoding ids (htslib's cram_structs.h).
const (
	encExternal = 1
	encBAL      = 4
	encVarintU  = 41
	encConstInt = 44
	encXPack    = 51
	encXRLE     = 52
	encXDelta   = 53
)

// Content ids of the blocks the transforms add.
const (
	idRuns  = 9001 // XRLE's run lengths of QS
	idRL    = 9002 // XDELTA's RL deltas
	idTags0 = 9100 // XDELTA's tag words, one per tag
)

// reader reads uint7 and sint7 values.
type reader struct {
	b   []byte
	pos int
	err error
}

func (r *reader) u() uint64 {
	var v uint64
	for i := 0; i < 10; i++ {
		if r.pos >= len(r.b) {
			r.err = errors.New("uint7 past the end")
			return 0
		}
		c := r.b[r.pos]
		r.pos++
		v = v<<7 | uint64(c&0x7f)
		if c&0x80 == 0 {
			return v
		}
	}
	r.err = errors.New("uint7 too long")
	return 0
}

func (r *reader) s() int64 { v := r.u(); return int64(v>>1) ^ -int64(v&1) }

func (r *reader) bytes(n int) []byte {
	if n < 0 || r.pos+n > len(r.b) {
		r.err = errors.New("bytes past the end")
		return nil
	}
	b := r.b[r.pos : r.pos+n]
	r.pos += n
	return b
}

func u7(b []byte, v uint64) []byte {
	n := 1
	for x := v >> 7; x != 0; x >>= 7 {
		n++
	}
	for i := n - 1; i >= 0; i-- {
		c := byte(v >> (7 * uint(i)) & 0x7f)
		if i > 0 {
			c |= 0x80
		}
		b = append(b, c)
	}
	return b
}

func s7(b []byte, v int64) []byte { return u7(b, uint64(v<<1)^uint64(v>>63)) }

func enc(id int, params []byte) []byte {
	return append(u7(u7(nil, uint64(id)), uint64(len(params))), params...)
}

// block is one block, its data decompressed.
type block struct {
	ctype byte
	id    int32
	data  []byte
}

func parseBlock(b []byte, pos *int) (block, error) {
	r := &reader{b: b, pos: *pos + 2}
	if *pos+2 > len(b) {
		return block{}, errors.New("block past the end")
	}
	method, ctype := b[*pos], b[*pos+1]
	id := int32(r.u())
	size := int(r.u())
	raw := int32(r.u())
	data := r.bytes(size)
	r.bytes(4) // CRC32
	if r.err != nil {
		return block{}, r.err
	}
	*pos = r.pos
	blk := decode.Block{Method: decode.BlockMethod(method), ContentType: decode.ContentType(ctype), ContentID: id, RawSize: raw, Data: data}
	c := decode.DefaultCodecs()
	out, err := blk.Decompress(&c, nil)
	if err != nil {
		return block{}, err
	}
	return block{ctype: ctype, id: id, data: bytes.Clone(out)}, nil
}

func (k block) bytes() []byte {
	b := []byte{0, k.ctype}
	b = u7(b, uint64(uint32(k.id)))
	b = u7(b, uint64(len(k.data)))
	b = u7(b, uint64(len(k.data)))
	b = append(b, k.data...)
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// sliceHdr is a CRAM 4.0 slice header.
type sliceHdr struct {
	ref                        int64
	start, span, nrec, counter uint64
	ids                        []uint64
	embed                      uint64
	rest                       []byte // MD5 and optional tags
}

func parseSliceHdr(b []byte) (sliceHdr, error) {
	r := &reader{b: b}
	var h sliceHdr
	h.ref = r.s()
	h.start, h.span, h.nrec, h.counter = r.u(), r.u(), r.u(), r.u()
	r.u() // number of blocks: recomputed
	n := r.u()
	for i := uint64(0); i < n && r.err == nil; i++ {
		h.ids = append(h.ids, r.u())
	}
	h.embed = r.u()
	h.rest = b[min(r.pos, len(b)):]
	return h, r.err
}

func (h sliceHdr) bytes(nblocks int) []byte {
	b := s7(nil, h.ref)
	for _, v := range []uint64{h.start, h.span, h.nrec, h.counter, uint64(nblocks), uint64(len(h.ids))} {
		b = u7(b, v)
	}
	for _, id := range h.ids {
		b = u7(b, id)
	}
	b = u7(b, h.embed)
	return append(b, h.rest...)
}

// slice is a slice's header and data blocks.
type slice struct {
	hdr    sliceHdr
	blocks []block // the core block first, as written
}

func (s *slice) find(id int32) *block {
	for i := range s.blocks {
		if s.blocks[i].ctype == 4 && s.blocks[i].id == id {
			return &s.blocks[i]
		}
	}
	return nil
}

func (s *slice) core() *block {
	for i := range s.blocks {
		if s.blocks[i].ctype == 5 {
			return &s.blocks[i]
		}
	}
	return nil
}

func (s *slice) add(id int32, data []byte) {
	s.blocks = append(s.blocks, block{ctype: 4, id: id, data: data})
	s.hdr.ids = append(s.hdr.ids, uint64(id))
}

// entry is one encoding of the data series or tag map: its key and its
// encoding's bytes (id, size, parameters).
type entry struct {
	key []byte // 2 bytes, or a tag's uint7 key
	enc []byte
}

// header is a compression header: the preservation map as it was, and
// the two encoding maps.
type header struct {
	pmap     []byte
	ds, tags []entry
}

func parseEntries(r *reader, tags bool) []entry {
	size := int(r.u())
	end := r.pos + size
	n := r.u()
	var out []entry
	for i := uint64(0); i < n && r.err == nil; i++ {
		var e entry
		at := r.pos
		if tags {
			r.u()
		} else {
			r.bytes(2)
		}
		e.key = r.b[at:r.pos]
		at = r.pos
		r.u()
		r.bytes(int(r.u()))
		e.enc = r.b[at:r.pos]
		out = append(out, e)
	}
	if r.err == nil && r.pos != end {
		r.err = fmt.Errorf("encoding map of %d bytes, %d read", size, r.pos-(end-size))
	}
	return out
}

func parseHeader(b []byte) (header, error) {
	r := &reader{b: b}
	var h header
	r.bytes(int(r.u()))
	h.pmap = b[:r.pos]
	h.ds = parseEntries(r, false)
	h.tags = parseEntries(r, true)
	return h, r.err
}

func entriesBytes(es []entry) []byte {
	body := u7(nil, uint64(len(es)))
	for _, e := range es {
		body = append(body, e.key...)
		body = append(body, e.enc...)
	}
	return append(u7(nil, uint64(len(body))), body...)
}

func (h header) bytes() []byte {
	b := append([]byte{}, h.pmap...)
	b = append(b, entriesBytes(h.ds)...)
	return append(b, entriesBytes(h.tags)...)
}

func (h header) series(key string) *entry {
	for i := range h.ds {
		if string(h.ds[i].key) == key {
			return &h.ds[i]
		}
	}
	return nil
}

// encoding parses an encoding's bytes: id and parameters.
func encoding(b []byte) (int, []byte) {
	r := &reader{b: b}
	id := int(r.u())
	return id, r.bytes(int(r.u()))
}

// varintParams returns the block and base of a VARINT_UNSIGNED encoding.
func varintParams(b []byte) (int32, int64, bool) {
	id, p := encoding(b)
	if id != encVarintU {
		return 0, 0, false
	}
	r := &reader{b: p}
	cid, base := int32(r.u()), r.s()
	return cid, base, r.err == nil && r.pos == len(p)
}

// externalID returns the block of an EXTERNAL encoding.
func externalID(b []byte) (int32, bool) {
	id, p := encoding(b)
	if id != encExternal {
		return 0, false
	}
	r := &reader{b: p}
	cid := int32(r.u())
	return cid, r.err == nil && r.pos == len(p)
}

func rewrite(in []byte) ([]byte, map[string]bool, error) {
	if len(in) < 26 || string(in[:4]) != "CRAM" || in[4] != 4 {
		return nil, nil, errors.New("not a CRAM 4 file")
	}
	applied := map[string]bool{}
	out := append([]byte{}, in[:26]...)
	pos := 26
	for first := true; pos < len(in); first = false {
		r := &reader{b: in, pos: pos}
		length := int(r.u())
		ref := r.s()
		start, span, nrec, counter, bases := r.u(), r.u(), r.u(), r.u(), r.u()
		r.u() // number of blocks: recomputed
		nl := r.u()
		var landmarks []uint64
		for i := uint64(0); i < nl && r.err == nil; i++ {
			landmarks = append(landmarks, r.u())
		}
		r.bytes(4)
		if r.err != nil {
			return nil, nil, fmt.Errorf("container at %d: %w", pos, r.err)
		}
		data := in[r.pos : r.pos+length]
		next := r.pos + length
		if first || nrec == 0 || len(landmarks) == 0 {
			out = append(out, in[pos:next]...) // the SAM header, the EOF
			pos = next
			continue
		}
		body, nb, lms, err := container(data, landmarks, applied)
		if err != nil {
			return nil, nil, fmt.Errorf("container at %d: %w", pos, err)
		}
		h := u7(nil, uint64(len(body)))
		h = s7(h, ref)
		for _, v := range []uint64{start, span, nrec, counter, bases, uint64(nb), uint64(len(lms))} {
			h = u7(h, v)
		}
		for _, l := range lms {
			h = u7(h, l)
		}
		h = binary.LittleEndian.AppendUint32(h, crc32.ChecksumIEEE(h))
		out = append(append(out, h...), body...)
		pos = next
	}
	return out, applied, nil
}

// container rewrites one data container's blocks; it returns them, their
// number and the new landmarks.
func container(data []byte, landmarks []uint64, applied map[string]bool) ([]byte, int, []uint64, error) {
	pos := 0
	chb, err := parseBlock(data, &pos)
	if err != nil {
		return nil, 0, nil, err
	}
	ch, err := parseHeader(chb.data)
	if err != nil {
		return nil, 0, nil, fmt.Errorf("compression header: %w", err)
	}
	var slices []slice
	for i, lm := range landmarks {
		end := len(data)
		if i+1 < len(landmarks) {
			end = int(landmarks[i+1])
		}
		p := int(lm)
		hb, err := parseBlock(data[:end], &p)
		if err != nil {
			return nil, 0, nil, err
		}
		sh, err := parseSliceHdr(hb.data)
		if err != nil {
			return nil, 0, nil, err
		}
		s := slice{hdr: sh}
		for p < end {
			b, err := parseBlock(data[:end], &p)
			if err != nil {
				return nil, 0, nil, err
			}
			s.blocks = append(s.blocks, b)
		}
		slices = append(slices, s)
	}
	for _, t := range []struct {
		name string
		f    func(*header, []slice, map[string]bool)
	}{{"XRLE QS", xrleQS}, {"XPACK BA", xpackBA}, {"XDELTA RL", xdeltaRL}, {"XPACK MQ", xpackMQ}, {"XDELTA tags", xdeltaTags}} {
		if only := os.Getenv("XFORM4_ONLY"); only == "" || only == t.name {
			t.f(&ch, slices, applied)
		}
	}

	chb.data = ch.bytes()
	body := chb.bytes()
	nb := 1
	var lms []uint64
	for _, s := range slices {
		lms = append(lms, uint64(len(body)))
		body = append(body, block{ctype: 2, data: s.hdr.bytes(len(s.blocks))}.bytes()...)
		for _, b := range s.blocks {
			body = append(body, b.bytes()...)
		}
		nb += 1 + len(s.blocks)
	}
	return body, nb, lms, nil
}

// xrleQS turns QS's EXTERNAL encoding into XRLE over the same block,
// every byte value a repeated symbol, the runs in a new block; when every
// slice has the QS block.
func xrleQS(ch *header, slices []slice, applied map[string]bool) {
	e := ch.series("QS")
	if e == nil {
		return
	}
	q, ok := externalID(e.enc)
	if !ok {
		return
	}
	for i := range slices {
		if slices[i].find(q) == nil {
			return
		}
	}
	for i := range slices {
		b := slices[i].find(q)
		var lits []byte
		runs := u7(nil, uint64(len(b.data)))
		for j := 0; j < len(b.data); {
			k := j
			for k < len(b.data) && b.data[k] == b.data[j] && k-j < 1000 {
				k++
			}
			lits = append(lits, b.data[j])
			runs = u7(runs, uint64(k-j-1))
			j = k
		}
		b.data = lits
		slices[i].add(idRuns, runs)
	}
	p := u7(nil, 256)
	for v := 0; v < 256; v++ {
		p = u7(p, uint64(v))
	}
	p = append(p, enc(encVarintU, s7(u7(nil, idRuns), 0))...)
	p = append(p, enc(encExternal, u7(nil, uint64(q)))...)
	e.enc = enc(encXRLE, p)
	applied["XRLE QS"] = true
}

// xpackBA packs BA's bytes 2 or 4 to a byte, when they take at most 16
// values and every slice has the BA block.
func xpackBA(ch *header, slices []slice, applied map[string]bool) {
	e := ch.series("BA")
	if e == nil {
		return
	}
	id, ok := externalID(e.enc)
	if !ok {
		return
	}
	seen := map[byte]bool{}
	for i := range slices {
		b := slices[i].find(id)
		if b == nil {
			return
		}
		for _, c := range b.data {
			seen[c] = true
		}
	}
	if len(seen) > 16 || len(seen) < 2 {
		return
	}
	var vals []byte
	for c := range seen {
		vals = append(vals, c)
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	nbits := 4
	if len(vals) <= 4 {
		nbits = 2
	}
	per := 8 / nbits
	for i := range slices {
		b := slices[i].find(id)
		packed := make([]byte, (len(b.data)+per-1)/per)
		for j, c := range b.data {
			k := bytes.IndexByte(vals, c)
			packed[j/per] |= byte(k) << (uint(j%per) * uint(nbits))
		}
		b.data = packed
	}
	p := u7(u7(nil, uint64(nbits)), uint64(len(vals)))
	for _, c := range vals {
		p = u7(p, uint64(c))
	}
	p = append(p, enc(encExternal, u7(nil, uint64(id)))...)
	e.enc = enc(encXPack, p)
	applied["XPACK BA"] = true
}

// values decodes the integers of a VARINT_UNSIGNED series from a slice
// (the series has its block to itself, as htslib writes it).
func values(s *slice, id int32, base int64) ([]int32, bool) {
	b := s.find(id)
	if b == nil {
		return nil, true
	}
	r := &reader{b: b.data}
	var out []int32
	for r.pos < len(b.data) {
		out = append(out, int32(uint32(r.u())+uint32(base)))
	}
	return out, r.err == nil
}

// xdeltaRL stores RL as XDELTA over VARINT_UNSIGNED, the deltas running
// through the container's slices, when RL is a VARINT_UNSIGNED series.
func xdeltaRL(ch *header, slices []slice, applied map[string]bool) {
	e := ch.series("RL")
	if e == nil {
		return
	}
	id, base, ok := varintParams(e.enc)
	if !ok {
		return
	}
	last := uint32(0)
	all := make([][]int32, len(slices))
	for i := range slices {
		if all[i], ok = values(&slices[i], id, base); !ok {
			return
		}
	}
	for i := range slices {
		var d []byte
		for _, v := range all[i] {
			delta := int32(uint32(v) - last)
			d = u7(d, uint64(uint32(delta<<1)^uint32(delta>>31)))
			last = uint32(v)
		}
		slices[i].add(idRL, d)
	}
	p := u7(nil, 4)
	p = append(p, enc(encVarintU, s7(u7(nil, idRL), 0))...)
	e.enc = enc(encXDelta, p)
	applied["XDELTA RL"] = true
}

// xpackMQ stores MQ as XPACK in bits of the core block, when MQ is a
// VARINT_UNSIGNED series of at most 128 values and nothing else uses the
// core block.
func xpackMQ(ch *header, slices []slice, applied map[string]bool) {
	e := ch.series("MQ")
	if e == nil {
		return
	}
	id, base, ok := varintParams(e.enc)
	if !ok {
		return
	}
	all := make([][]int32, len(slices))
	seen := map[int32]bool{}
	for i := range slices {
		if c := slices[i].core(); c == nil || len(c.data) != 0 {
			return
		}
		if all[i], ok = values(&slices[i], id, base); !ok {
			return
		}
		for _, v := range all[i] {
			if v < 0 || v > 255 {
				return
			}
			seen[v] = true
		}
	}
	if len(seen) < 2 || len(seen) > 128 {
		return
	}
	var vals []int32
	for v := range seen {
		vals = append(vals, v)
	}
	sort.Slice(vals, func(i, j int) bool { return vals[i] < vals[j] })
	nbits := 1
	for 1<<nbits < len(vals) {
		nbits++
	}
	for i := range slices {
		var bits []byte
		n := 0
		for _, v := range all[i] {
			k := sort.Search(len(vals), func(j int) bool { return vals[j] >= v })
			for b := nbits - 1; b >= 0; b-- {
				if n%8 == 0 {
					bits = append(bits, 0)
				}
				if k>>uint(b)&1 != 0 {
					bits[n/8] |= 0x80 >> uint(n%8)
				}
				n++
			}
		}
		slices[i].core().data = bits
	}
	p := u7(u7(nil, uint64(nbits)), uint64(len(vals)))
	for _, v := range vals {
		p = u7(p, uint64(v))
	}
	p = append(p, enc(encVarintU, s7(u7(nil, uint64(id)), base))...)
	e.enc = enc(encXPack, p)
	applied["XPACK MQ"] = true
}

// xdeltaTags stores the values of the tags whose length is constant
// (BYTE_ARRAY_LEN of CONST_INT and EXTERNAL) as XDELTA of 16-bit words,
// in a new block per tag.
func xdeltaTags(ch *header, slices []slice, applied map[string]bool) {
	for t := range ch.tags {
		id, p := encoding(ch.tags[t].enc)
		if id != encBAL {
			continue
		}
		lenID, lp := encoding(p)
		r := &reader{b: lp}
		n := r.s()
		if lenID != encConstInt || r.err != nil || n < 1 {
			continue
		}
		lenEnc := enc(lenID, lp)
		val, ok := externalID(p[len(lenEnc):])
		if !ok {
			continue
		}
		newID := int32(idTags0 + t)
		for i := range slices {
			b := slices[i].find(val)
			if b == nil {
				continue
			}
			var words []byte
			for j := 0; j+int(n) <= len(b.data); j += int(n) {
				words = append(words, xdeltaWords(b.data[j:j+int(n)])...)
			}
			slices[i].add(newID, words)
		}
		sub := u7(nil, 2)
		sub = append(sub, enc(encExternal, u7(nil, uint64(newID)))...)
		ch.tags[t].enc = enc(encBAL, append(lenEnc, enc(encXDelta, sub)...))
		applied["XDELTA tags"] = true
	}
}

// xdeltaWords codes one array as htslib's XDELTA reads it: 16-bit little
// endian words (the first one only its low byte for an odd length), each
// the zig-zag difference from the previous word, from 0.
func xdeltaWords(a []byte) []byte {
	var words []uint16
	if len(a)%2 == 1 {
		words = append(words, uint16(a[0]))
		a = a[1:]
	}
	for i := 0; i+1 < len(a); i += 2 {
		words = append(words, uint16(a[i])|uint16(a[i+1])<<8)
	}
	var out []byte
	last := uint16(0)
	for _, w := range words {
		d := int16(w - last)
		out = u7(out, uint64(uint16(d<<1)^uint16(d>>15)))
		last = w
	}
	return out
}
