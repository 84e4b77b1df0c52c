//go:build race

package bgzf

// raceEnabled reports a -race build, where the race runtime adds
// allocations that allocation counts must not be held to.
const raceEnabled = true
