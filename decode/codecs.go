package decode

import (
	"github.com/cramfs/cramfs/decode/codec/arith"
	"github.com/cramfs/cramfs/decode/codec/fqzcomp"
	"github.com/cramfs/cramfs/decode/codec/rans4x8"
	"github.com/cramfs/cramfs/decode/codec/ransnx16"
	"github.com/cramfs/cramfs/decode/codec/tok3"
)

// DefaultCodecs returns the block codecs of this module, those a Decoder
// uses when DecoderOptions.Codecs is nil.
func DefaultCodecs() Codecs {
	return Codecs{
		RANS4x8:  rans4x8.AppendDecode,
		RANSNx16: ransnx16.AppendDecode,
		Arith:    arith.AppendDecode,
		FQZComp:  fqzcomp.AppendDecode,
		Tok3:     tok3.AppendDecode,

		Tok3Lengths: tok3.AppendLengths,
	}
}

// defaultCodecs is what a Decoder given no Codecs points at; nothing writes
// it (callers only see DefaultCodecs' copies).
var defaultCodecs = DefaultCodecs()
