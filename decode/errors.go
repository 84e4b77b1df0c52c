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

// Error locates a decoding failure in a file. A decoding function returns
// exactly one *Error for a failure, the outermost error of the chain, so
// errors.As finds its location.
type Error struct {
	File   string // path of the CRAM file, when known
	Offset int64  // byte offset of the container (or -1)
	// ContentID is the content ID of the block that failed (Err names
	// it), or -1.
	ContentID int
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
	return s + ": " + e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// blockError is the failure of one block (CRAMv3 §8): its message names
// the content ID, and the *Error around it takes its ContentID from it.
type blockError struct {
	id  int32
	err error
}

func (e *blockError) Error() string { return fmt.Sprintf("block content id %d: %v", e.id, e.err) }

func (e *blockError) Unwrap() error { return e.err }

// containerError is the one *Error of a failure in the container at off:
// the content ID comes from the failed block, if the failure was one.
func containerError(file string, off int64, err error) *Error {
	de := &Error{File: file, Offset: off, ContentID: -1, Err: err}
	var be *blockError
	if errors.As(err, &be) {
		de.ContentID = int(be.id)
	}
	return de
}

func corruptf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
}
