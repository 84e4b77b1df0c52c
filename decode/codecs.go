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
	Arith:    appendVia(arith.Decode),
	FQZComp:  appendVia(fqzcomp.Decode),
	Tok3:     appendVia(tok3.Decode),
}

func appendVia(f func([]byte, int) ([]byte, error)) AppendDecoder {
	return func(dst, src []byte, raw int) ([]byte, error) {
		out, err := f(src, raw)
		if err != nil || len(dst) != 0 {
			return append(dst, out...), err
		}
		return out, nil
	}
}
