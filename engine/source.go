// Package engine schedules CRAM containers: it decodes them in parallel,
// encodes their records to BAM and BGZF, and serves the virtual BAM.
package engine

import "context"

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

// StoredAppender is implemented by Sources that can write a container's
// records straight into level-0 BGZF blocks, the bytes
// bgzf.Compressor.AppendBlocks makes at level 0 from AppendContainer's
// output, without that intermediate copy.
type StoredAppender interface {
	// AppendContainerStored appends container i as stored BGZF blocks to
	// dst and returns the extended buffer and the BAM bytes the blocks
	// hold. When each is not nil it is called with every record (its BAM
	// bytes, block_size included) and where the record starts and ends in
	// the container's BAM bytes; its error stops the container.
	AppendContainerStored(ctx context.Context, i int, dst []byte, each func(rec []byte, start, end int64) error) ([]byte, int64, error)
}
