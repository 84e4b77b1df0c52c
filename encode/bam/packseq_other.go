//go:build !amd64

package bam

// packSeqVector packs nothing where there is no vector path.
func packSeqVector(out, seq []byte) int { return 0 }
