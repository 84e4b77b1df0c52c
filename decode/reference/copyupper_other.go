//go:build !amd64

package reference

// copyUpper copies src to dst, of the same length, with ASCII letters
// uppercased.
func copyUpper(dst, src []byte) { copyUpperGo(dst, src) }
