package tok3

import (
	"github.com/cramfs/cramfs/decode/codec/arith"
	"github.com/cramfs/cramfs/decode/codec/ransnx16"
)

// entropyDecode decompresses one token byte stream with the arithmetic
// coder or rANS Nx16, as the header's use_arith byte selects
// (CRAMcodecs "Name tokenisation codec", DecodeTokenByteStreams).
func entropyDecode(useArith bool, cdata []byte, size int) ([]byte, error) {
	if useArith {
		return arith.Decode(cdata, size)
	}
	return ransnx16.Decode(cdata, size)
}
