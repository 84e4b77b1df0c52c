// Package codectest holds what the tests of the CRAM block codecs share.
package codectest

// AppendDecoder is the signature of every codec's AppendDecode.
type AppendDecoder func(dst, src []byte, rawSize int) ([]byte, error)

// Decode decodes src with decode into a new slice. An empty output is a
// non-nil empty slice, so that a test can tell it from a failed decode.
func Decode(decode AppendDecoder, src []byte, rawSize int) ([]byte, error) {
	out, err := decode(nil, src, rawSize)
	if err != nil {
		return nil, err
	}
	if out == nil {
		out = []byte{}
	}
	return out, nil
}
