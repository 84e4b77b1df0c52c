package decode

import "fmt"

// XRLE (52), a CRAM 4.0 transform that htslib 1.16 reads and no writer
// emits: run-length coding of bytes. Parameters: the number of repeated
// symbols and the symbols (uint7 each; htslib keeps the first 256 and
// ignores those above 255), then the run lengths' sub-encoding and the
// literals' sub-encoding. htslib does not check that the parameters end
// there.
//
// As htslib 1.16 decodes it, for byte series only (integers fail): once
// per slice, the whole block of the lengths' sub-encoding holds the output
// size (a uint7), then one uint7 per literal of a repeated symbol, the
// extra copies of it that follow; the literals are the whole block of
// their sub-encoding. The expanded bytes are then read in order.

func (e *Encoding) parseXRLE(params []byte, p *int, vt valueType, depth int, a *encodings, r varints) error {
	if vt == typeByteBlock {
		return corruptf("XRLE for a read name or tag")
	}
	n, err := r.u32(params, p)
	if err != nil {
		return err
	}
	e.Table = new([256]byte)
	for i := int32(0); i < n && i < 256; i++ {
		v, err := r.u32(params, p)
		if err != nil {
			return err
		}
		if v >= 0 && v < 256 {
			e.Table[v] = 1
		}
	}
	if e.Len, err = parseEncoding(params, p, typeInt, depth+1, a, r); err != nil {
		return err
	}
	if e.Val, err = parseEncoding(params, p, vt, depth+1, a, r); err != nil {
		return err
	}
	if e.Len == nil || e.Val == nil {
		return corruptf("XRLE with a NULL sub-encoding")
	}
	return nil
}

// unRLE expands the slice's runs (htslib's hts_rle_decode): a literal
// beyond the declared size is an error, as there (htslib then goes on
// with whatever its buffer held; that is refused here), a literal whose
// run length is missing stands alone, and fewer bytes than declared are
// what there is.
func (e *Encoding) unRLE(s *streams) ([]byte, error) {
	lens, err := e.Len.wholeBlock(s)
	if err != nil {
		return nil, err
	}
	lits, err := e.Val.wholeBlock(s)
	if err != nil {
		return nil, err
	}
	pos := 0
	size, err := readUint7(lens, &pos, 10)
	if err != nil {
		return nil, fmt.Errorf("XRLE output size: %w", err)
	}
	if size > MaxBlockSize {
		return nil, corruptf("XRLE output of %d bytes, more than %d", size, MaxBlockSize)
	}
	out := make([]byte, 0, min(size, 1<<20))
	for _, b := range lits {
		if uint64(len(out)) >= size {
			return nil, corruptf("XRLE: more than the %d bytes declared", size)
		}
		run := uint64(0)
		if e.Table[b] != 0 && pos < len(lens) {
			if run, err = readUint7(lens, &pos, 5); err != nil {
				return nil, fmt.Errorf("XRLE run length: %w", err)
			}
			run = uint64(uint32(run))
		}
		if run > 0 && uint64(len(out))+run >= size {
			return nil, corruptf("XRLE: run of %d past the %d bytes declared", run+1, size)
		}
		for range run + 1 {
			out = append(out, b)
		}
	}
	return out, nil
}
