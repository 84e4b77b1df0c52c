// Package source is the contract between the engine and what it serves:
// a Source is one file of BAM records, container by container, with the
// identity under which its layout is persisted. The engine's one real
// Source is a CRAM file (package engine/cram); anything else that can give
// a BAM header and the BAM records of numbered containers can be served
// the same way, and persisted the same way if it can name its bytes
// (Identity).
package source

import (
	"context"
	"errors"

	"github.com/cramfs/cramfs/encode/bgzf"
)

// Source is one file seen as BAM: the BAM header, and one run of BAM
// records per data container. Implementations are safe for concurrent
// use.
type Source interface {
	// Name identifies the file in errors and logs (its path).
	Name() string
	// Header returns the uncompressed BAM header: magic, l_text, text,
	// n_ref and the references (SAMv1 §4.2). Its error (a file that
	// cannot be read again) names the file.
	Header() ([]byte, error)
	// NumContainers returns the number of data containers (for a CRAM the
	// header container and the EOF container are not counted).
	NumContainers() int
	// ContainerOffset returns the byte offset of data container i in the
	// file, for messages; -1 when it cannot be told.
	ContainerOffset(i int) int64
	// AppendContainer decodes data container i and appends its records,
	// BAM-encoded (each with its block_size prefix), to dst. Its errors
	// name the file and the container, so callers pass them on as they are.
	AppendContainer(ctx context.Context, i int, dst []byte) ([]byte, error)
	// Identity returns the identity of the bytes the Source reads, taken
	// from what it reads (for a file, its open descriptor, whatever its
	// name points to meanwhile). A Source without one returns an error
	// matching ErrNoIdentity: its layout is then made at every open and
	// kept in memory only.
	Identity() (Identity, error)
	// Variant names the decoding options the BAM bytes depend on besides
	// the Source's bytes (a CRAM's MD/NM tags on or off). It keys the
	// persisted layout with the Identity.
	Variant() string
}

// ErrNoIdentity is a Source's Identity error when it cannot name its
// bytes.
var ErrNoIdentity = errors.New("source has no identity")

// ErrChanged is returned (wrapped) when a Source's file changed under
// it: a build or a new read of its state found other bytes than the
// version opened. It is a property of the file, not of the cramfs
// process: the file opened again serves its new version.
var ErrChanged = errors.New("file changed since it was opened")

// TooLarge is the error (found with errors.As) of a Source that refused
// to decode a container needing more memory than it was allowed (a CRAM:
// decode.SizeError), so that the engine can say what would allow it.
type TooLarge interface {
	error
	// NeededMemory is the memory the container would take to decode.
	NeededMemory() int64
}

// BlockAppender is implemented by Sources that can write a container's
// records straight into BGZF blocks as they are encoded: the bytes
// bgzf.Compressor.AppendBlocks makes of AppendContainer's output, without
// holding that output whole (at level 0 the records are written into
// stored blocks in place; at other levels each block is compressed as it
// fills, while its bytes are in cache).
type BlockAppender interface {
	// AppendContainerBlocks appends container i as BGZF blocks made by c
	// to dst and returns the extended buffer and what the blocks hold.
	AppendContainerBlocks(ctx context.Context, i int, c *bgzf.Compressor, dst []byte, opt BlockOptions) ([]byte, Blocks, error)
}

// BlockOptions are the options of one BlockAppender call.
type BlockOptions struct {
	// Each, when not nil, is called with every record (its BAM bytes,
	// block_size included) and where the record starts and ends in the
	// container's BAM bytes; its error stops the container.
	Each func(rec []byte, start, end int64) error
	// Rebuild leaves out the checks of the input a digest of an earlier,
	// fully checked build covers (the layout's Segment.Digest), and the
	// content sum: a CRAM skips the slice reference MD5s, since a
	// different reference gives different bases and so another digest.
	Rebuild bool
	// Helpers, when not nil, lends the call idle workers to decompress
	// parts of a container (and read its reference bases) beside the
	// caller's goroutine.
	Helpers Helpers
}

// Helpers lends a BlockAppender call workers that nobody else wants, so
// that a build that a reader waits for uses the workers that would idle.
type Helpers interface {
	// TryAcquire takes an idle worker, without waiting, and reports
	// whether it got one; a worker another build or scan waits for is
	// never taken.
	TryAcquire() bool
	// Release gives back a worker TryAcquire took.
	Release()
}

// Blocks is what a BlockAppender call wrote.
type Blocks struct {
	Raw int64 // the BAM bytes the blocks hold
	Sum Sum   // the container's content sum, when the Source gives one
}

// Sum is the content sum of one container: the CRC-32C of the
// container's bytes in the file as they were read to decode it. A
// segment measured by a scan records it, and its first build must be
// decoded from bytes of the same sum, so that a change of the file's
// metadata alone (chmod, a link added or removed, which move its ctime)
// changes nothing.
type Sum struct {
	CRC uint32
	OK  bool // false: the Source gives none (or it was a Rebuild)
}

// LayoutScanner is implemented by Sources that can measure a container's
// BAM records without building them: the layout of a level-0 (stored)
// virtual BAM follows from the record lengths alone, and its index from
// what each record reports here.
type LayoutScanner interface {
	// ScanLayout calls each with every record of container i, in order,
	// and returns the container's BAM length (the sum of the records'
	// Len) and its content sum. Its errors name the file and the
	// container.
	ScanLayout(ctx context.Context, i int, each func(r RecordLayout) error) (int64, Sum, error)
}

// Estimator is implemented by Sources that can guess, from a container's
// header alone, how many BAM bytes its records take, so that a buffer can
// be given its size before the records are encoded.
type Estimator interface {
	// EstimateContainer returns a rough guess of the BAM bytes of
	// container i, 0 when there is none. It comes from untrusted header
	// fields: callers bound what they allocate from it.
	EstimateContainer(i int) int64
}

// Spanner is implemented by Sources that know, from a container's header
// alone, how many reference bases its alignments span: with the BGZF bytes
// of its segment, that gives how many bytes of the BAM a stretch of the
// reference takes there, which a region query's reader reads before it
// reaches its region.
type Spanner interface {
	// ContainerSpan returns the reference bases container i's alignments
	// span, with ok unset when that is unknown or the container's
	// records are not on one reference. It comes from untrusted header
	// fields: callers use it only as a hint.
	ContainerSpan(i int) (span int64, ok bool)
}

// RecordLayout is what the layout and the index need of one BAM record.
type RecordLayout struct {
	Len      int64 // BAM bytes of the record, its block_size included
	RefID    int32 // -1 for none
	Beg, End int64 // 0-based alignment start and end (exclusive), as bam.RecordInfo gives them
	Unmapped bool  // flag 0x4
}
