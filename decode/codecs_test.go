package decode

import "testing"

// TestDefaultCodecsIsACopy: DefaultCodecs hands out copies, so a caller
// changing one changes neither the next copy nor the codecs of a Decoder
// given none.
func TestDefaultCodecsIsACopy(t *testing.T) {
	c := DefaultCodecs()
	for name, f := range map[string]AppendDecoder{"RANS4x8": c.RANS4x8, "RANSNx16": c.RANSNx16, "Arith": c.Arith, "FQZComp": c.FQZComp, "Tok3": c.Tok3} {
		if f == nil {
			t.Errorf("DefaultCodecs().%s is nil", name)
		}
	}
	c.RANS4x8 = nil
	if c.RANS4x8 != nil || DefaultCodecs().RANS4x8 == nil || defaultCodecs.RANS4x8 == nil {
		t.Fatal("clearing a copy of DefaultCodecs cleared the defaults")
	}
	var f File
	if d := f.NewDecoder(DecoderOptions{}); d.opt.Codecs == nil || d.opt.Codecs.Tok3 == nil {
		t.Fatal("a Decoder given no Codecs has no default codecs")
	}
}
