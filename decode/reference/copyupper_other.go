//go:build !amd64

package reference

// copyUpper copies src to dst, of the same length, with ASCII letters
// uppercased (dst may be src: uppercasing twice gives the same bytes).
func copyUpper(dst, src []byte) { copyUpperGo(dst, src) }
