package fqzcomp

// asmChunk is the most values one call of the assembly loop decodes:
// assembly is not preempted, so a long record is decoded in parts.
const asmChunk = 1 << 16

// decode decodes out's values from j on as run does, with the assembly
// loop for the store's model size.
func (s *store[M]) decode(pm *param, out []byte, j int, l *loop) int {
	var m M
	models, end := &s.models[0][0], min(len(out), j+asmChunk)
	switch len(m) {
	case 8:
		return decodeAsm5(models, len(s.models), pm, out, j, end, l)
	case 16:
		return decodeAsm6(models, len(s.models), pm, out, j, end, l)
	case 32:
		return decodeAsm7(models, len(s.models), pm, out, j, end, l)
	}
	return decodeAsm8(models, len(s.models), pm, out, j, end, l)
}

// decodeAsm5-8 are run in assembly (direct_amd64.s) for the nmodels
// models at models of 2^5-2^8 bytes, decoding out[j:end]; they return
// the index of the value they stopped at.
//
//go:noescape
func decodeAsm5(models *uint32, nmodels int, pm *param, out []byte, j, end int, l *loop) int

//go:noescape
func decodeAsm6(models *uint32, nmodels int, pm *param, out []byte, j, end int, l *loop) int

//go:noescape
func decodeAsm7(models *uint32, nmodels int, pm *param, out []byte, j, end int, l *loop) int

//go:noescape
func decodeAsm8(models *uint32, nmodels int, pm *param, out []byte, j, end int, l *loop) int
