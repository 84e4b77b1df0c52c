package fqzcomp

// asmChunk is the most values one call of decodeAsm decodes: assembly is
// not preempted, so a long record is decoded in parts.
const asmChunk = 1 << 16

// decode decodes out's values from j on as run does, with the assembly
// loop.
func (s *store[M]) decode(pm *param, out []byte, j int, l *loop) int {
	var m M
	return decodeAsm(&s.models[0][0], len(s.models), 4*len(m), pm, out, j, min(len(out), j+asmChunk), l)
}

// decodeAsm is run in assembly (direct_amd64.s) for a store of nmodels
// models of stride bytes at models, decoding out[j:end]; it returns the
// index of the value it stopped at.
//
//go:noescape
func decodeAsm(models *uint32, nmodels, stride int, pm *param, out []byte, j, end int, l *loop) int
