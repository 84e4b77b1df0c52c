package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine"
	"github.com/cramfs/cramfs/fs"
)

// referenceRemedy tells the user how to give cramfs a reference.
const referenceRemedy = "give the reference FASTA with -T FASTA (repeatable), or M5-named sequence files with REF_PATH/REF_CACHE, as for samtools"

// referenceProblem returns the user-facing sentence for an error caused by
// a missing or mismatching reference, and false for any other error.
func referenceProblem(err error) (string, bool) {
	var me *reference.MissingError
	if errors.As(err, &me) {
		return me.Error() + "; " + referenceRemedy, true
	}
	if !errors.Is(err, decode.ErrReference) {
		return "", false
	}
	// A slice MD5 that the sequence found does not match, or a reference
	// file that changed: the decoder's own text names the contig and M5.
	msg := err.Error()
	if i := strings.LastIndex(msg, decode.ErrReference.Error()+": "); i >= 0 {
		msg = msg[i+len(decode.ErrReference.Error())+2:]
	}
	return "reference problem: " + msg + "; " + referenceRemedy, true
}

// refNotices reports, once per CRAM file version, on standard error, that
// its BAM cannot be served for want of its reference. The FUSE layer still
// answers every failing request with EIO and logs it; this says why in a
// sentence that names the file, the contig, its M5 and what to do.
type refNotices struct {
	// dependency
	w io.Writer

	mu   sync.Mutex // guards seen and the writes to w
	seen map[fileKey]bool
}

func newRefNotices(w io.Writer) *refNotices {
	return &refNotices{w: w, seen: map[fileKey]bool{}}
}

// report prints the notice for k when err is a reference problem not yet
// reported for k, and returns whether err is a reference problem.
func (n *refNotices) report(k fileKey, err error) bool {
	msg, ok := referenceProblem(err)
	if !ok || n == nil {
		return ok
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen[k] {
		return true
	}
	n.seen[k] = true
	bam := strings.TrimSuffix(filepath.Base(k.path), ".cram") + ".bam"
	fmt.Fprintf(n.w, "cramfs mount: %s: cannot serve %s, its reads fail with EIO: %s\n", k.path, bam, msg)
	return true
}

// noticedBAM is a file's virtual BAM whose read errors are reported
// through refNotices: a file whose layout was persisted by an earlier
// mount opens without its reference, and fails only on its first read.
type noticedBAM struct {
	*engine.VirtualBAM
	key     fileKey
	notices *refNotices
}

var _ fs.Viewer = (*noticedBAM)(nil)

func (b *noticedBAM) ReadAt(p []byte, off int64) (int, error) {
	n, err := b.VirtualBAM.ReadAt(p, off)
	if err != nil && err != io.EOF {
		b.notices.report(b.key, err)
	}
	return n, err
}

func (b *noticedBAM) View(ctx context.Context, off int64, n int) ([][]byte, func(), error) {
	parts, release, err := b.VirtualBAM.View(ctx, off, n)
	if err != nil {
		b.notices.report(b.key, err)
	}
	return parts, release, err
}

// referenceError is an error caused by a missing or mismatching
// reference, with what to do about it.
type referenceError struct{ err error }

func (e *referenceError) Error() string { return e.err.Error() + "; " + referenceRemedy }
func (e *referenceError) Unwrap() error { return e.err }

// withReferenceHelp returns err, or for a reference problem err with the
// remedy appended. The message keeps its file and container offset.
func withReferenceHelp(err error) error {
	if _, ok := referenceProblem(err); ok {
		return &referenceError{err: err}
	}
	return err
}
