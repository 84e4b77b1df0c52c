//go:build !amd64

package fqzcomp

// decode decodes out's values from j on as run does.
func (s *store[M]) decode(pm *param, out []byte, j int, l *loop) int {
	return s.run(pm, out, j, l)
}
