// Package engine schedules CRAM containers: it decodes them in parallel,
// encodes their records to BAM and BGZF, and serves the virtual BAM.
package engine

import (
	"context"

	"github.com/cramfs/cramfs/encode/bgzf"
)

// Source is one CRAM file seen as BAM: the BAM header, and one run of BAM
// records per data container. Implementations are safe for concurrent use.
type Source interface {
	// Name identifies the file in errors and logs (its path).
	Name() string
	// Header returns the uncompressed BAM header: magic, l_text, text,
	// n_ref and the references (SAMv1 §4.2).
	Header() []byte
	// NumContainers returns the number of data containers (the header
	// container and the EOF container are not counted).
	NumContainers() int
	// ContainerOffset returns the byte offset of data container i in the
	// CRAM file, for messages.
	ContainerOffset(i int) int64
	// AppendContainer decodes data container i and appends its records,
	// BAM-encoded (each with its block_size prefix), to dst. Its errors
	// name the file and the container, so callers pass them on as they are.
	AppendContainer(ctx context.Context, i int, dst []byte) ([]byte, error)
}

// BlockAppender is implemented by Sources that can write a container's
// records straight into BGZF blocks as they are encoded: the bytes
// bgzf.Compressor.AppendBlocks makes of AppendContainer's output, without
// holding that output whole (at level 0 the records are written into
// stored blocks in place; at other levels each block is compressed as it
// fills, while its bytes are in cache).
type BlockAppender interface {
	// AppendContainerBlocks appends container i as BGZF blocks made by c
	// to dst and returns the extended buffer and the BAM bytes the blocks
	// hold. When each is not nil it is called with every record (its BAM
	// bytes, block_size included) and where the record starts and ends in
	// the container's BAM bytes; its error stops the container.
	AppendContainerBlocks(ctx context.Context, i int, c *bgzf.Compressor, dst []byte, each func(rec []byte, start, end int64) error) ([]byte, int64, error)
}

// Rebuilder is implemented by BlockAppenders that can build a container
// again with fewer checks of their input, for a caller that checks the
// result against the digest of an earlier, fully checked build (the
// layout's Segment.Digest). A CRAM skips the slice reference MD5s: a
// different reference gives different bases and so a different digest.
type Rebuilder interface {
	// RebuildContainerBlocks is AppendContainerBlocks without per-record
	// callback and with the checks the digest covers left out.
	RebuildContainerBlocks(ctx context.Context, i int, c *bgzf.Compressor, dst []byte) ([]byte, int64, error)
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

// fileSource is implemented by Sources that read one open file (CRAM).
// Only their layouts are persisted.
type fileSource interface {
	// fileIdentity returns the identity of the file read, taken from its
	// open descriptor (fstat and pread), so that it describes the bytes
	// decoded whatever the path names meanwhile; withDev keeps the device
	// number in it.
	fileIdentity(withDev bool) (identity, error)
	// variant names the decoding options the BAM bytes depend on besides
	// the file (see dependsOn).
	variant() string
}

// LayoutScanner is implemented by Sources that can measure a container's
// BAM records without building them: the layout of a level-0 (stored)
// virtual BAM follows from the record lengths alone, and its index from
// what each record reports here.
type LayoutScanner interface {
	// ScanLayout calls each with every record of container i, in order,
	// and returns the container's BAM length (the sum of the records'
	// Len). Its errors name the file and the container.
	ScanLayout(ctx context.Context, i int, each func(r RecordLayout) error) (int64, error)
}

// ContentSummer is implemented by LayoutScanners that read one file and
// can give, with each container they measure or build, its content sum:
// the CRC-32C of the container's bytes in the file as they were read to
// decode it. A measured segment's first build is then checked against the
// content the scan measured, rather than against the file's identity,
// which metadata changes (chmod, a link added or removed) move.
type ContentSummer interface {
	// ScanLayoutSum is LayoutScanner.ScanLayout that also returns the
	// content sum of container i.
	ScanLayoutSum(ctx context.Context, i int, each func(r RecordLayout) error) (int64, uint32, error)
	// AppendContainerBlocksSum is BlockAppender.AppendContainerBlocks
	// (with its every check, without per-record callback) that also
	// returns the content sum of container i.
	AppendContainerBlocksSum(ctx context.Context, i int, c *bgzf.Compressor, dst []byte) ([]byte, int64, uint32, error)
}

// RecordLayout is what the layout and the index need of one BAM record.
type RecordLayout struct {
	Len      int64 // BAM bytes of the record, its block_size included
	RefID    int32 // -1 for none
	Beg, End int64 // 0-based alignment start and end (exclusive), as bam.RecordInfo gives them
	Unmapped bool  // flag 0x4
}
