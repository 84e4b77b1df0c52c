package engine

import "fmt"

// Level is the BGZF compression of the blocks the engine builds, for a
// mount (Options.Level) and for Convert (ConvertOptions.Level) alike:
// Stored, or a deflate level from 1 (fastest) to 9 (smallest), written as
// itself (Level(6) is deflate level 6). The zero value, DefaultLevel, is
// deflate level 1. Command lines, where 0 means stored, go through
// LevelOf.
type Level int8

const (
	// DefaultLevel is the zero value: deflate level 1.
	DefaultLevel Level = 0
	// Stored builds uncompressed deflate blocks (deflate level 0): the
	// fastest to serve and to read.
	Stored Level = -1
)

// LevelOf returns the Level of deflate level n, 0 (Stored) to 9.
func LevelOf(n int) (Level, error) {
	switch {
	case n == 0:
		return Stored, nil
	case n >= 1 && n <= 9:
		return Level(n), nil
	}
	return DefaultLevel, fmt.Errorf("compression level %d: want 0 (stored) to 9", n)
}

// Deflate returns the deflate level of l: 0 for Stored, 1 for
// DefaultLevel, l itself otherwise (a level outside 1-9 is returned as is,
// for bgzf.NewCompressor to refuse).
func (l Level) Deflate() int {
	switch l {
	case Stored:
		return 0
	case DefaultLevel:
		return 1
	}
	return int(l)
}

// valid reports whether l is DefaultLevel, Stored or a level from 1 to 9.
func (l Level) valid() bool { return l >= Stored && l <= 9 }
