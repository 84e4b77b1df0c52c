package tok3

import (
	"github.com/cramfs/cramfs/decode/codec/arith"
	"github.com/cramfs/cramfs/decode/codec/ransnx16"
)

// appendEntropy decompresses one token byte stream of size bytes with the
// arithmetic coder or rANS Nx16, as the header's use_arith byte selects
// (CRAMcodecs "Name tokenisation codec", DecodeTokenByteStreams), and
// appends it to dst.
func appendEntropy(dst []byte, useArith bool, cdata []byte, size int) ([]byte, error) {
	if useArith {
		return arith.AppendDecode(dst, cdata, size)
	}
	return ransnx16.AppendDecode(dst, cdata, size)
}
