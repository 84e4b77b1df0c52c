//go:build !race

package gzip

const raceEnabled = false
