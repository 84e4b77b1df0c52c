package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/decode/reference"
	"github.com/cramfs/cramfs/engine"
	"github.com/cramfs/cramfs/fs"
)

// referenceRemedy tells the user how to give cramfs a reference, and that
// (as in htslib) a -T contig of the @SQ name is used, whatever its bases,
// before any M5-named file: for a contig -T has with other bases, M5-named
// files do not help.
const referenceRemedy = "give the reference FASTA with -T FASTA (repeatable), or M5-named sequence files with REF_PATH/REF_CACHE, as for samtools; a -T contig of the @SQ name is used before any M5-named file"

// referenceProblem returns the user-facing sentence for an error caused by
// a missing or mismatching reference, and false for any other error.
func referenceProblem(err error) (string, bool) {
	var me *reference.MissingError
	if errors.As(err, &me) {
		return me.Error() + "; " + remedyFor(err), true
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
	return "reference problem: " + msg + "; " + remedyFor(err), true
}

// remedyFor says what to do about err, a reference problem: for bases
// that do not match, about the file they came from, which the user may
// have given already; else how to give a reference.
func remedyFor(err error) string {
	var md5 *decode.RefMD5Error
	if errors.As(err, &md5) {
		if o, ok := md5.Origin.(reference.Origin); ok {
			return wrongBasesRemedy(md5, o)
		}
	}
	var me *reference.MissingError
	if errors.As(err, &me) && me.WrongM5File.Path != "" {
		return fmt.Sprintf("replace or remove %s: a file named by an M5 must hold the sequence of that M5; or %s", me.WrongM5File, referenceRemedy)
	}
	if errors.Is(err, reference.ErrChanged) {
		return "a reference file changed while cramfs read it: once it is whole again, run again (a mount: mount again)"
	}
	if errors.Is(err, reference.ErrCorrupt) {
		return "the reference file is damaged or its index stale: check it, or make its index again with samtools faidx"
	}
	return referenceRemedy
}

// wrongBasesRemedy is remedyFor a slice whose reference bases, read from
// o, do not match.
func wrongBasesRemedy(e *decode.RefMD5Error, o reference.Origin) string {
	switch o.Via {
	case reference.ViaRefCache, reference.ViaRefPath:
		return fmt.Sprintf("%s holds the sequence of the @SQ M5 %s, but the slices were written against other bases: the @SQ M5 does not name the CRAM's reference; give the FASTA it was written with, with -T", o, e.M5)
	case reference.ViaUR:
		return fmt.Sprintf("%s has other bases for %s than the CRAM was written with: give the FASTA it was written with, with -T (used before the UR: file)", o, e.Ref)
	}
	return fmt.Sprintf("%s has other bases for %s than the CRAM was written with: give with -T the FASTA it was written with; as in samtools, a -T contig of the @SQ name is used before any M5-named file, so REF_PATH/REF_CACHE cannot stand in for it", o, e.Ref)
}

// fileReports follows each CRAM file the mount was asked for: the state
// of its newest version, for `cramfs status`, and, once per version, in
// the log (a warning), that its BAM cannot be served for want of its
// reference. The FUSE layer still answers every failing request with EIO
// and logs it; the notice says why in a sentence that names the file, the
// contig, its M5 and what to do.
type fileReports struct {
	// dependencies
	log *slog.Logger
	src string // the mount's source directory, which file keys are relative to

	mu    sync.Mutex                          // guards files
	files *simplelru.LRU[string, *fileReport] // by path; at most maxEntries, the least recently used forgotten
}

// fileReport is what the mount knows of one CRAM file version.
type fileReport struct {
	// constant
	key fileKey

	// guarded by fileReports.mu
	size     int64  // BAM bytes, once opened
	indexExt string // ".bai", ".csi" or "" (none), once opened
	segments int
	fail     failure // the failure that still holds, the zero failure for none
	noticed  bool    // a reference problem was reported

	// failing is whether fail is set, read without the lock by every
	// successful read (see served).
	failing          atomic.Bool
	reads, bytesRead atomic.Int64 // read requests served and their bytes
}

// failure is a failure of a file version that still holds: what it was,
// when, and the BAM offset of the first byte a read could not deliver, or
// openFailed. A failure holds until what failed succeeds: the open, or a
// read of the bytes at off. A read of other bytes does not clear it (a
// broken container fails only the reads that touch it); a reader's own
// cancellation is not the file's failure and is never recorded.
type failure struct {
	msg string
	at  time.Time
	off int64
}

// openFailed is failure.off for a failure to open the file version.
const openFailed = -1

// cancelled reports whether err is the end of a request's context (an
// interrupted read, a reader killed mid-read), not a failure of the file.
func cancelled(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// name is the path of k's file as the user gave the source.
func (n *fileReports) name(k fileKey) string {
	return filepath.Join(n.src, filepath.FromSlash(k.rel))
}

func newFileReports(log *slog.Logger, src string) *fileReports {
	files, _ := simplelru.NewLRU[string, *fileReport](maxEntries, nil) // fails only for a size <= 0
	return &fileReports{log: log, src: src, files: files}
}

// state returns the state of k, a new one when k is another version of
// its path than the one known. The caller holds n.mu.
func (n *fileReports) state(k fileKey) *fileReport {
	st, _ := n.files.Get(k.rel)
	if st == nil || st.key != k {
		st = &fileReport{key: k}
		n.files.Add(k.rel, st)
	}
	return st
}

// opened records that k's BAM was opened, and returns it wrapped so that
// its reads are counted and their failures reported. A failure to open it
// no longer holds; a failed read still does.
func (n *fileReports) opened(k fileKey, v *engine.VirtualBAM, segments int) *noticedBAM {
	size, ext := v.Size(), v.IndexExt()
	n.mu.Lock()
	st := n.state(k)
	st.size, st.indexExt, st.segments = size, ext, segments
	if st.fail.off == openFailed {
		st.setFailure(failure{})
	}
	n.mu.Unlock()
	return &noticedBAM{VirtualBAM: v, reports: n, st: st}
}

// failed records err, a failure to open k, and prints the notice when err
// is a reference problem not yet reported for k. It returns whether err is
// a reference problem. A cancellation is not recorded.
func (n *fileReports) failed(k fileKey, err error) bool {
	msg, ok := referenceProblem(err)
	if n == nil || cancelled(err) {
		return ok
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.report(n.state(k), err, openFailed, msg, ok, failsAtOpen)
	return ok
}

// What fails, as the notice says it: a file whose layout is unknown fails
// at its lookup, since its BAM's size cannot be known without the
// reference; one whose layout was persisted opens, and fails at its reads.
const (
	failsAtOpen = "its BAM's size is unknown without the right reference: stat and open fail with EIO (ls -l shows ?), the name stays listed"
	failsAtRead = "its reads fail with EIO"
)

// mountRemedy is what a running mount does about a reference given later.
const mountRemedy = "this mount finds M5-named files added under REF_PATH/REF_CACHE later, for contigs the -T FASTA lacks (a failed open is tried again after 30 s); another -T or UR: FASTA needs a new mount"

// report records err, at BAM offset off (or openFailed), as the failure
// of st and prints msg once when isRef, saying what fails. The caller
// holds n.mu.
func (n *fileReports) report(st *fileReport, err error, off int64, msg string, isRef bool, fails string) {
	f := failure{msg: err.Error(), at: time.Now(), off: off}
	if isRef {
		f.msg = msg
	}
	st.setFailure(f)
	if !isRef || st.noticed {
		return
	}
	st.noticed = true
	bam := strings.TrimSuffix(path.Base(st.key.rel), ".cram") + ".bam"
	n.log.Warn(fmt.Sprintf("cannot serve %s, %s: %s; %s", bam, fails, msg, mountRemedy), "file", n.name(st.key))
}

// setFailure makes f the failure of st (the zero failure: none). The
// caller holds fileReports.mu.
func (st *fileReport) setFailure(f failure) {
	st.fail = f
	st.failing.Store(f.msg != "")
}

// readOK clears the failure of st when the read of n bytes at off, which
// succeeded, delivered the byte a failed read could not. The caller holds
// fileReports.mu.
func (st *fileReport) readOK(off int64, n int) {
	if st.fail.off >= off && st.fail.off < off+int64(n) {
		st.setFailure(failure{})
	}
}

// noticedBAM is a file's virtual BAM whose reads are counted and whose
// read errors are reported through fileReports: a file whose layout was
// persisted by an earlier mount opens without its reference, and fails
// only on its first read.
type noticedBAM struct {
	*engine.VirtualBAM
	reports *fileReports
	st      *fileReport
}

var _ fs.Viewer = (*noticedBAM)(nil)

func (b *noticedBAM) ReadAt(p []byte, off int64) (int, error) {
	n, err := b.VirtualBAM.ReadAt(p, off)
	b.served(off, n, off+int64(n), err)
	return n, err
}

// ReadAtContext is ReadAt ended with ctx (the HTTP front end's reads).
func (b *noticedBAM) ReadAtContext(ctx context.Context, p []byte, off int64) (int, error) {
	n, err := b.VirtualBAM.ReadAtContext(ctx, p, off)
	b.served(off, n, off+int64(n), err)
	return n, err
}

func (b *noticedBAM) View(ctx context.Context, off int64, n int) ([][]byte, func(), error) {
	parts, release, err := b.VirtualBAM.View(ctx, off, n)
	got := 0
	for _, p := range parts {
		got += len(p)
	}
	b.served(off, got, off, err)
	return parts, release, err
}

// served counts a read of n bytes at off and records its outcome: a
// failure at failedAt (the first byte not delivered, or the read's start
// when that is not known), or a success that may clear the failure that
// held. A read cancelled by its reader is neither counted nor recorded.
func (b *noticedBAM) served(off int64, n int, failedAt int64, err error) {
	if cancelled(err) {
		return
	}
	b.st.reads.Add(1)
	b.st.bytesRead.Add(int64(n))
	if err == nil || err == io.EOF {
		if b.st.failing.Load() {
			b.reports.mu.Lock()
			b.st.readOK(off, n)
			b.reports.mu.Unlock()
		}
		return
	}
	msg, ok := referenceProblem(err)
	b.reports.mu.Lock()
	b.reports.report(b.st, err, failedAt, msg, ok, failsAtRead)
	b.reports.mu.Unlock()
}

// referenceError is an error caused by a missing or mismatching
// reference, with what to do about it.
type referenceError struct{ err error }

func (e *referenceError) Error() string { return e.err.Error() + "; " + remedyFor(e.err) }
func (e *referenceError) Unwrap() error { return e.err }

// WithReferenceHelp returns err, or for a reference problem err with the
// remedy appended. The message keeps its file and container offset.
func WithReferenceHelp(err error) error {
	if _, ok := referenceProblem(err); ok {
		return &referenceError{err: err}
	}
	return err
}
