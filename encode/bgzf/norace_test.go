//go:build !race

package bgzf

const raceEnabled = false
