// Package hostile turns a valid CRAM file into a deterministic set of
// damaged copies for robustness tests: truncations, flipped bytes (behind
// and in front of the CRC32s of CRAMv3 §7 and §8), lying lengths, counts
// and landmarks, huge ITF-8 values, wrong slice reference MD5s (CRAMv3
// §8.5) and a missing reference.
//
// The package is a test helper: it is used by tests only and does not
// belong to the decoding path.
package hostile

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
)

// Kind classifies a Variant.
type Kind string

// Kinds of damage.
const (
	Truncate    Kind = "truncate"     // the file cut short
	Flip        Kind = "flip"         // bytes XORed, CRCs left as they were
	FlipFixed   Kind = "flip+crc"     // bytes XORed, CRCs recomputed
	Lie         Kind = "lie"          // a length, count, size or landmark changed, CRCs recomputed
	RefMD5      Kind = "ref-md5"      // a slice header's reference MD5 changed
	NoReference Kind = "no-reference" // the unchanged file, decoded without its reference
)

// Variant is one damaged copy of a CRAM file.
type Variant struct {
	Name string
	Kind Kind
	Data []byte
	// NoReference asks the consumer to decode without any reference.
	NoReference bool
	// Strict is set when the damage cannot go unnoticed: a correct decoder
	// either rejects the variant or produces exactly the original output.
	// Damage hidden behind recomputed CRCs (or in CRAM 2.x, which has no
	// CRCs) may decode to other valid records, so it is not strict.
	Strict bool
}

// Options bound the number of variants.
type Options struct {
	// PerKind caps the variants of each kind (0: 150). Candidates over
	// the cap are sampled with the seed.
	PerKind int
}

// huge values: an ITF-8 claiming gigabytes, and others past any bound.
var hugeInts = []int64{1 << 30, 0x7fffffff, -1, -0x80000000, 1 << 28}

// Variants returns the damaged copies of the CRAM file orig, the same for
// the same orig, seed and options. orig must be a well-formed CRAM 2.x or
// 3.x file.
func Variants(orig []byte, seed uint64, opt Options) ([]Variant, error) {
	l, err := parse(orig)
	if err != nil {
		return nil, err
	}
	if opt.PerKind <= 0 {
		opt.PerKind = 150
	}
	g := &gen{orig: orig, l: l, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), v3: l.major >= 3}
	g.truncations()
	g.flips(false)
	if g.v3 {
		g.flips(true)
	}
	g.lies()
	g.md5s()
	g.add(Variant{Name: "no reference", Kind: NoReference, NoReference: true, Strict: true}, func() []byte { return bytes.Clone(orig) })

	var out []Variant
	seen := map[string]bool{}
	for _, k := range []Kind{Truncate, Flip, FlipFixed, Lie, RefMD5, NoReference} {
		cs := g.byKind[k]
		if len(cs) > opt.PerKind {
			idx := g.rng.Perm(len(cs))[:opt.PerKind]
			slices.Sort(idx)
			picked := make([]candidate, 0, opt.PerKind)
			for _, i := range idx {
				picked = append(picked, cs[i])
			}
			cs = picked
		}
		for _, c := range cs {
			v := c.v
			v.Data = c.build()
			if !v.NoReference && bytes.Equal(v.Data, orig) {
				continue // the damage was a no-op
			}
			key := string(v.Kind) + "\x00" + string(v.Data)
			if seen[key] {
				continue
			}
			seen[key] = true
			out = append(out, v)
		}
	}
	return out, nil
}

type gen struct {
	orig   []byte
	l      *layout
	rng    *rand.Rand
	v3     bool
	byKind map[Kind][]candidate
}

// candidate is a variant whose bytes are only built once it is picked.
type candidate struct {
	v     Variant
	build func() []byte
}

func (g *gen) add(v Variant, build func() []byte) {
	if g.byKind == nil {
		g.byKind = map[Kind][]candidate{}
	}
	g.byKind[v.Kind] = append(g.byKind[v.Kind], candidate{v, build})
}

// truncations cuts the file at every structure boundary ±k and inside
// headers and blocks.
func (g *gen) truncations() {
	n := len(g.orig)
	cuts := map[int]string{0: "empty", 1: "magic", 4: "after magic", 5: "in version", 6: "in file id", 25: "file definition-1", fileDefSize: "file definition only"}
	for ci, c := range g.l.containers {
		for _, k := range []int{-3, -2, -1, 0, 1, 2, 3, 4, 5} {
			cuts[c.off+k] = fmt.Sprintf("container %d start%+d", ci, k)
		}
		for _, f := range append([]field{c.refID, c.nrec, c.counter, c.nblocks, c.lmCount}, c.landmarks...) {
			cuts[f.off] = fmt.Sprintf("container %d header field at byte %d", ci, f.off)
			if f.len > 1 {
				cuts[f.off+1] = fmt.Sprintf("container %d header inside field at byte %d", ci, f.off)
			}
		}
		if c.crcOff >= 0 {
			cuts[c.crcOff+2] = fmt.Sprintf("container %d header CRC", ci)
		}
		cuts[c.end-1] = fmt.Sprintf("container %d end-1", ci)
		for bi, blk := range c.blocks {
			for _, o := range []int{blk.off + 1, blk.off + 2, blk.size.off, blk.raw.off, blk.dataOff, blk.dataOff + len(blk.data)/2, blk.end - 1} {
				if _, ok := cuts[o]; !ok {
					cuts[o] = fmt.Sprintf("container %d block %d (content type %d) at +%d", ci, bi, blk.ctype, o-blk.off)
				}
			}
		}
	}
	for range 10 {
		o := g.rng.IntN(n)
		if _, ok := cuts[o]; !ok {
			cuts[o] = "random"
		}
	}
	offs := make([]int, 0, len(cuts))
	for o := range cuts {
		if o >= 0 && o < n {
			offs = append(offs, o)
		}
	}
	slices.Sort(offs)
	for _, o := range offs {
		g.add(Variant{Name: fmt.Sprintf("truncate at %d (%s)", o, cuts[o]), Kind: Truncate, Strict: true}, func() []byte { return bytes.Clone(g.orig[:o]) })
	}
}

// region is a byte range of one structure, to damage.
type region struct {
	name     string
	off, end int
	// covered: a CRC32 protects the range (CRAM 3), so a flip must be
	// noticed unless the CRC is recomputed.
	covered bool
}

func (g *gen) regions() []region {
	rs := []region{
		{name: "magic", off: 0, end: 4, covered: true},
		{name: "version", off: 4, end: 6},
		{name: "file id", off: 6, end: fileDefSize, covered: true}, // unused: flips change nothing
	}
	for ci, c := range g.l.containers {
		hdr := func(what string, f field) {
			rs = append(rs, region{name: fmt.Sprintf("container %d %s", ci, what), off: f.off, end: f.off + f.len, covered: g.v3})
		}
		rs = append(rs, region{name: fmt.Sprintf("container %d length", ci), off: c.off, end: c.off + 4, covered: g.v3})
		hdr("ref id", c.refID)
		hdr("ref start", c.refStart)
		hdr("span", c.span)
		hdr("records", c.nrec)
		hdr("counter", c.counter)
		hdr("bases", c.bases)
		hdr("blocks", c.nblocks)
		hdr("landmark count", c.lmCount)
		for i, f := range c.landmarks {
			hdr(fmt.Sprintf("landmark %d", i), f)
		}
		if c.crcOff >= 0 {
			rs = append(rs, region{name: fmt.Sprintf("container %d header CRC", ci), off: c.crcOff, end: c.crcOff + 4, covered: true})
		}
		for bi, blk := range c.blocks {
			what := fmt.Sprintf("container %d block %d (%s)", ci, bi, contentName(blk.ctype, blk.cid.val))
			rs = append(rs,
				region{name: what + " method", off: blk.off, end: blk.off + 1, covered: g.v3},
				region{name: what + " content type", off: blk.off + 1, end: blk.off + 2, covered: g.v3},
				region{name: what + " content id", off: blk.cid.off, end: blk.cid.off + blk.cid.len, covered: g.v3},
				region{name: what + " size", off: blk.size.off, end: blk.size.off + blk.size.len, covered: g.v3},
				region{name: what + " raw size", off: blk.raw.off, end: blk.raw.off + blk.raw.len, covered: g.v3},
			)
			if len(blk.data) > 0 {
				rs = append(rs, region{name: what + " data", off: blk.dataOff, end: blk.dataOff + len(blk.data), covered: g.v3})
			}
			if blk.crcOff >= 0 {
				rs = append(rs, region{name: what + " CRC", off: blk.crcOff, end: blk.crcOff + 4, covered: true})
			}
		}
		if pad := c.blocksEnd(); pad < c.end {
			rs = append(rs, region{name: fmt.Sprintf("container %d padding", ci), off: pad, end: c.end})
		}
	}
	return rs
}

func contentName(ct byte, id int64) string {
	switch ct {
	case 0:
		return "SAM header"
	case 1:
		return "compression header"
	case 2:
		return "slice header"
	case 4:
		return fmt.Sprintf("external %d", id)
	case 5:
		return "core"
	}
	return fmt.Sprintf("content type %d", ct)
}

// flips XORs bytes of every structure: its first, last and a random byte
// with a few masks. With fixCRC the CRC32s are recomputed afterwards so
// the damage reaches the parsers behind them.
func (g *gen) flips(fixCRC bool) {
	kind := Flip
	if fixCRC {
		kind = FlipFixed
	}
	for _, r := range g.regions() {
		if fixCRC && (r.name == "magic" || r.off < fileDefSize || bytes.HasSuffix([]byte(r.name), []byte("CRC"))) {
			continue // nothing behind a CRC to reach
		}
		pos := []int{r.off, r.end - 1, r.off + g.rng.IntN(r.end-r.off)}
		for i, p := range pos {
			if i > 0 && p == pos[0] {
				continue
			}
			for _, mask := range []byte{0xff, 0x01, 0x80, byte(1 + g.rng.IntN(255))} {
				strict := !fixCRC && r.covered
				g.add(Variant{Name: fmt.Sprintf("%s: %s byte %d ^= %#02x", kind, r.name, p, mask), Kind: kind, Strict: strict}, func() []byte {
					b := bytes.Clone(g.orig)
					b[p] ^= mask
					if fixCRC {
						g.l.fixCRCs(b)
					}
					return b
				})
			}
		}
	}
}

// blocksEnd is the file offset past the container's last parsed block.
func (c *container) blocksEnd() int {
	if len(c.blocks) == 0 {
		return c.dataOff
	}
	return c.blocks[len(c.blocks)-1].end
}

// lies changes one declared length, count, size or landmark at a time,
// keeping the rest of the file consistent (CRCs and, unless the lie is
// about them, lengths and landmarks recomputed).
func (g *gen) lies() {
	add := func(name string, ci int, edit func(h *headerSpec, bs []blockSpec)) {
		g.add(Variant{Name: "lie: " + name, Kind: Lie}, func() []byte { return g.l.rebuild(g.orig, ci, edit) })
	}
	deltas := func(v int64) []int64 {
		out := []int64{v + 1, v - 1, 0}
		return append(out, hugeInts...)
	}
	for ci, c := range g.l.containers {
		pre := fmt.Sprintf("container %d ", ci)
		for _, v := range append([]int64{int64(len(c.blocksBytes(g.orig))) + 1000}, deltas(c.length.val)...) {
			add(fmt.Sprintf("%slength %d", pre, v), ci, func(h *headerSpec, _ []blockSpec) { h.length = v })
		}
		for _, v := range deltas(c.nrec.val) {
			add(fmt.Sprintf("%srecords %d", pre, v), ci, func(h *headerSpec, _ []blockSpec) { h.nrec = v })
		}
		for _, v := range deltas(c.nblocks.val) {
			add(fmt.Sprintf("%sblocks %d", pre, v), ci, func(h *headerSpec, _ []blockSpec) { h.nblocks = v })
		}
		for _, v := range []int64{1 << 30, -1, 0x7fffffff} {
			add(fmt.Sprintf("%sref start %d", pre, v), ci, func(h *headerSpec, _ []blockSpec) { h.refStart = v })
			add(fmt.Sprintf("%sspan %d", pre, v), ci, func(h *headerSpec, _ []blockSpec) { h.span = v })
			add(fmt.Sprintf("%sref id %d", pre, v), ci, func(h *headerSpec, _ []blockSpec) { h.refID = v })
		}
		add(pre+"bases 2^40", ci, func(h *headerSpec, _ []blockSpec) { h.bases = 1 << 40 })
		add(pre+"counter 2^40", ci, func(h *headerSpec, _ []blockSpec) { h.counter = 1 << 40 })
		for _, v := range []int64{1 << 28, 1 << 30, 0x7fffffff, -1} {
			add(fmt.Sprintf("%slandmark count %d", pre, v), ci, func(h *headerSpec, _ []blockSpec) { h.lmCount = v })
		}
		for li, lm := range c.landmarks {
			for _, v := range []int64{lm.val + 1, lm.val - 1, 0, 1 << 30, -1, int64(c.length.val)} {
				add(fmt.Sprintf("%slandmark %d = %d", pre, li, v), ci, func(h *headerSpec, _ []blockSpec) {
					h.landmarks = make([]int64, len(c.landmarks))
					for i, f := range c.landmarks {
						h.landmarks[i] = f.val
					}
					h.landmarks[li] = v
				})
			}
		}
		for bi := range c.blocks {
			g.blockLies(add, ci, bi)
		}
	}
}

// blocksBytes is the container's data.
func (c *container) blocksBytes(b []byte) []byte { return b[c.dataOff:c.end] }

func (g *gen) blockLies(add func(string, int, func(*headerSpec, []blockSpec)), ci, bi int) {
	c := &g.l.containers[ci]
	blk := &c.blocks[bi]
	pre := fmt.Sprintf("container %d block %d (%s) ", ci, bi, contentName(blk.ctype, blk.cid.val))
	// Every block of the small structures; a sample of the external ones.
	if blk.ctype == 4 && g.rng.IntN(4) != 0 {
		return
	}
	sizes := []int64{blk.size.val + 1, blk.size.val - 1, 0, 1 << 30, 0x7fffffff, -1}
	for _, v := range sizes {
		add(fmt.Sprintf("%ssize %d", pre, v), ci, func(_ *headerSpec, bs []blockSpec) { bs[bi].size = v })
	}
	for _, v := range []int64{blk.raw.val + 1, blk.raw.val - 1, 0, 1 << 30, 1<<30 + 1, 0x7fffffff, -1} {
		add(fmt.Sprintf("%sraw size %d", pre, v), ci, func(_ *headerSpec, bs []blockSpec) { bs[bi].raw = v })
	}
	for _, m := range []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 255} {
		if m != blk.method {
			add(fmt.Sprintf("%smethod %d", pre, m), ci, func(_ *headerSpec, bs []blockSpec) { bs[bi].method = m })
		}
	}
	for _, t := range []byte{0, 1, 2, 3, 4, 5, 200} {
		if t != blk.ctype {
			add(fmt.Sprintf("%scontent type %d", pre, t), ci, func(_ *headerSpec, bs []blockSpec) { bs[bi].ctype = t })
		}
	}
	for _, id := range []int32{int32(blk.cid.val) + 1, -1, 1 << 30} {
		add(fmt.Sprintf("%scontent id %d", pre, id), ci, func(_ *headerSpec, bs []blockSpec) { bs[bi].cid = id })
	}
	add(pre+"CRC wrong", ci, func(_ *headerSpec, bs []blockSpec) { bs[bi].badCRC = true })
	if blk.method != 0 {
		return
	}
	// Raw payloads whose structure we know: lie inside them too.
	switch blk.ctype {
	case 2:
		g.sliceHeaderLies(add, pre, ci, bi, blk)
	case 1:
		g.compressionHeaderLies(add, pre, ci, bi, blk)
	}
}

// sliceHeaderFields parses a raw slice header (CRAMv3 §8.5).
func sliceHeaderFields(d []byte, v3 bool) (fs map[string]field, ids []field, md5Off int, ok bool) {
	fs = map[string]field{}
	p := 0
	for _, k := range []string{"ref id", "ref start", "span", "records", "counter", "blocks", "content id count"} {
		var f field
		var err error
		if k == "counter" && v3 {
			f, err = getLTF8(d, p)
		} else {
			f, err = getITF8(d, p)
		}
		if err != nil {
			return nil, nil, 0, false
		}
		fs[k] = f
		p += f.len
	}
	for range fs["content id count"].val {
		f, err := getITF8(d, p)
		if err != nil {
			return nil, nil, 0, false
		}
		ids = append(ids, f)
		p += f.len
	}
	f, err := getITF8(d, p)
	if err != nil || p+f.len+16 > len(d) {
		return nil, nil, 0, false
	}
	fs["embedded ref id"] = f
	return fs, ids, p + f.len, true
}

// replaceField re-encodes one ITF-8 (or LTF-8) field of d with value v.
func replaceField(d []byte, f field, v int64, ltf bool) []byte {
	out := append([]byte(nil), d[:f.off]...)
	if ltf {
		out = putLTF8(out, v)
	} else {
		out = putITF8(out, int32(v))
	}
	return append(out, d[f.off+f.len:]...)
}

func (g *gen) sliceHeaderLies(add func(string, int, func(*headerSpec, []blockSpec)), pre string, ci, bi int, blk *block) {
	fs, ids, _, ok := sliceHeaderFields(blk.data, g.v3)
	if !ok {
		return
	}
	edit := func(name string, f field, v int64, ltf bool) {
		data := replaceField(blk.data, f, v, ltf)
		add(fmt.Sprintf("%s%s %d", pre, name, v), ci, func(_ *headerSpec, bs []blockSpec) { bs[bi].data, bs[bi].raw = data, int64(len(data)) })
	}
	for _, k := range []string{"ref id", "ref start", "span", "records", "blocks", "content id count", "embedded ref id"} {
		f := fs[k]
		for _, v := range []int64{f.val + 1, f.val - 1, 1 << 30, -1} {
			edit(k, f, v, false)
		}
	}
	edit("counter", fs["counter"], 1<<40, g.v3)
	for i, f := range ids {
		if i == 0 || g.rng.IntN(3) == 0 {
			edit(fmt.Sprintf("content id %d", i), f, f.val+1000, false)
		}
	}
}

func (g *gen) compressionHeaderLies(add func(string, int, func(*headerSpec, []blockSpec)), pre string, ci, bi int, blk *block) {
	d := blk.data
	// Three maps (CRAMv3 §8.4): each a byte size, then an entry count.
	p := 0
	for _, name := range []string{"preservation map", "data series map", "tag map"} {
		size, err := getITF8(d, p)
		if err != nil {
			return
		}
		count, err := getITF8(d, p+size.len)
		if err != nil {
			return
		}
		for _, v := range []int64{size.val + 1, size.val - 1, 1 << 30, -1} {
			data := replaceField(d, size, v, false)
			add(fmt.Sprintf("%s%s size %d", pre, name, v), ci, func(_ *headerSpec, bs []blockSpec) { bs[bi].data, bs[bi].raw = data, int64(len(data)) })
		}
		for _, v := range []int64{count.val + 1, count.val - 1, 1 << 30, 0x7fffffff, -1} {
			data := replaceField(d, count, v, false)
			add(fmt.Sprintf("%s%s count %d", pre, name, v), ci, func(_ *headerSpec, bs []blockSpec) { bs[bi].data, bs[bi].raw = data, int64(len(data)) })
		}
		p += size.len + int(size.val)
		if size.val < 0 || p > len(d) {
			return
		}
	}
}

// md5s changes the reference MD5 of slice headers (CRAMv3 §8.5).
func (g *gen) md5s() {
	for ci, c := range g.l.containers {
		for bi := range c.blocks {
			blk := &c.blocks[bi]
			if blk.ctype != 2 || blk.method != 0 {
				continue
			}
			_, _, md5Off, ok := sliceHeaderFields(blk.data, g.v3)
			if !ok {
				continue
			}
			for _, i := range []int{0, 15, g.rng.IntN(16)} {
				g.add(Variant{Name: fmt.Sprintf("%s: container %d block %d slice reference MD5 byte %d", RefMD5, ci, bi, i), Kind: RefMD5, Strict: true}, func() []byte {
					data := bytes.Clone(blk.data)
					data[md5Off+i] ^= 0x5a
					return g.l.rebuild(g.orig, ci, func(_ *headerSpec, bs []blockSpec) { bs[bi].data = data })
				})
			}
		}
	}
}

// FlipAt returns a copy of the CRAM file orig with the byte at off XORed
// with mask; with fixCRC the container header and block CRC32s (CRAM 3)
// are recomputed so the damage reaches the parsers behind them. It
// reproduces a single variant, e.g. for a regression test.
func FlipAt(orig []byte, off int, mask byte, fixCRC bool) ([]byte, error) {
	l, err := parse(orig)
	if err != nil {
		return nil, err
	}
	if off < 0 || off >= len(orig) {
		return nil, fmt.Errorf("hostile: offset %d outside the %d-byte file", off, len(orig))
	}
	b := bytes.Clone(orig)
	b[off] ^= mask
	if fixCRC {
		l.fixCRCs(b)
	}
	return b, nil
}
