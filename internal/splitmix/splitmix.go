// Package splitmix is splitmix64, a tiny fixed-seed pseudo-random
// generator for test data and fixture generators: its sequence is fixed
// by its definition, so generated data cannot change with the Go version.
package splitmix

// Rand is a splitmix64 state; its value is the seed.
type Rand uint64

// Next returns the next 64 random bits.
func (r *Rand) Next() uint64 {
	*r += 0x9e3779b97f4a7c15
	z := uint64(*r)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// Intn returns a number in [0, n), n > 0 (modulo bias is accepted).
func (r *Rand) Intn(n int) int { return int(r.Next() % uint64(n)) }
