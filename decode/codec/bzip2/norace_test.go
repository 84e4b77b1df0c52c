//go:build !race

package bzip2

const raceEnabled = false
