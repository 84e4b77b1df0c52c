package decode

import (
	"github.com/cramfs/cramfs/decode/codec/arith"
	"github.com/cramfs/cramfs/decode/codec/fqzcomp"
	"github.com/cramfs/cramfs/decode/codec/rans4x8"
	"github.com/cramfs/cramfs/decode/codec/ransnx16"
	"github.com/cramfs/cramfs/decode/codec/tok3"
)

// DefaultCodecs are the block codecs of this module, used when
// DecoderOptions.Codecs is nil.
var DefaultCodecs = Codecs{
	RANS4x8:  rans4x8.AppendDecode,
	RANSNx16: ransnx16.AppendDecode,
	Arith:    arith.AppendDecode,
	FQZComp:  fqzcomp.AppendDecode,
	Tok3:     tok3.AppendDecode,
}
