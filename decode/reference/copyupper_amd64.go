package reference

import "golang.org/x/sys/cpu"

// useAVX2 is set when the CPU has AVX2, for copyUpperAVX2.
var useAVX2 = cpu.X86.HasAVX2

// copyUpper copies src to dst, of the same length, with ASCII letters
// uppercased (dst may be src: uppercasing twice gives the same bytes) (copyUpperGo), 32 bytes a step where the CPU has AVX2 and
// src has at least 32: a FASTA line of 60 bases is two steps.
func copyUpper(dst, src []byte) {
	n := len(src)
	if !useAVX2 || n < 32 {
		copyUpperGo(dst, src)
		return
	}
	_ = dst[n-1]
	copyUpperAVX2(&dst[0], &src[0], n)
}

// copyUpperAVX2 copies n bytes (n at least 32) of src to dst uppercased,
// 32 per step; a tail that is not a whole step is done by one more step
// ending at the n-th byte, overlapping the last, which computes the same
// bytes again from src.
//
//go:noescape
func copyUpperAVX2(dst, src *byte, n int)
