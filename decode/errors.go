// Package decode reads CRAM files (CRAMv3.tex; CRAM 2.x per CRAMv2.1.tex)
// and decodes their records into BAM-shaped Records.
//
// The package is pure: no goroutines, no logging. Errors wrap the sentinels
// below and say where in the file they happened.
package decode

import (
	"errors"
	"fmt"
)

var (
	// ErrCorrupt reports bytes that do not follow the CRAM format.
	ErrCorrupt = errors.New("decode: corrupt CRAM")
	// ErrTruncated reports a file that ends before its EOF container.
	ErrTruncated = errors.New("decode: truncated CRAM")
	// ErrChecksum reports a CRC32 mismatch on a container header or block.
	ErrChecksum = errors.New("decode: checksum mismatch")
	// ErrUnsupported reports a valid feature this decoder does not implement
	// (a CRAM major version, a codec or an encoding).
	ErrUnsupported = errors.New("decode: unsupported")
	// ErrReference reports a missing or mismatching reference sequence.
	ErrReference = errors.New("decode: reference")
)

// Error locates a decoding failure in a file.
type Error struct {
	File      string // path of the CRAM file, when known
	Offset    int64  // byte offset of the container (or -1)
	ContentID int    // block content ID, or -1
	Err       error
}

func (e *Error) Error() string {
	s := e.File
	if s == "" {
		s = "cram"
	}
	if e.Offset >= 0 {
		s += fmt.Sprintf(": container at byte %d", e.Offset)
	}
	if e.ContentID >= 0 {
		s += fmt.Sprintf(": block content id %d", e.ContentID)
	}
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}
