//go:build race

package gzip

// raceEnabled reports a -race build, where sync.Pool drops items at
// random, so allocation counts must not be held to.
const raceEnabled = true
