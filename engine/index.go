package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cramfs/cramfs/encode/bgzf"
)

// identity pins one version of a CRAM file as read through its open
// descriptor: what fstat reports (device, inode, size, mtime and ctime;
// the kernel sets ctime on every change and no user can set it back, so
// an in-place rewrite with a restored mtime is still a new version) and
// SHA-256 digests of its first and last 64 KiB.
type identity struct {
	Dev   uint64 // 0 in a shared cache (see Options.SharedCache)
	Ino   uint64
	Size  int64
	MTime int64 // nanoseconds since the Unix epoch
	CTime int64 // nanoseconds since the Unix epoch
	Head  [32]byte
	Tail  [32]byte
}

// identityWindow is how much of each end of the file is hashed.
const identityWindow = 64 << 10

// identityBufs is a free list of the buffers descriptorIdentity reads
// the ends of a file into, one per worker or so: the first build of every
// segment checks the file's identity, and a fresh buffer each time was as
// much garbage as the decoding of a container.
var identityBufs = make(chan *[identityWindow]byte, 4)

func getIdentityBuf() *[identityWindow]byte {
	select {
	case b := <-identityBufs:
		return b
	default:
		return new([identityWindow]byte)
	}
}

func putIdentityBuf(b *[identityWindow]byte) {
	select {
	case identityBufs <- b:
	default:
	}
}

// descriptorIdentity reads the identity of the open file f with fstat and
// pread, never through its path. withDev keeps the device number, which
// NFS clients number differently.
func descriptorIdentity(f *os.File, withDev bool) (identity, error) {
	st, err := fstat(f)
	if err != nil {
		return identity{}, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return identity{}, fmt.Errorf("%s: not a regular file (mode %o)", f.Name(), st.Mode)
	}
	id := identity{Ino: uint64(st.Ino), Size: st.Size, MTime: st.Mtim.Nano(), CTime: st.Ctim.Nano()}
	if withDev {
		id.Dev = uint64(st.Dev)
	}
	win := getIdentityBuf()
	defer putIdentityBuf(win)
	buf := win[:min(identityWindow, id.Size)]
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return identity{}, err
	}
	id.Head = sha256.Sum256(buf)
	if _, err := f.ReadAt(buf, id.Size-int64(len(buf))); err != nil && !errors.Is(err, io.EOF) {
		return identity{}, err
	}
	id.Tail = sha256.Sum256(buf)
	return id, nil
}

// fstat returns what fstat(2) reports of the open file f.
func fstat(f *os.File) (*unix.Stat_t, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	var st unix.Stat_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstat(int(fd), &st) }); err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	if serr != nil {
		return nil, &fs.PathError{Op: "fstat", Path: f.Name(), Err: serr}
	}
	return &st, nil
}

// indexFormat is the version of the layout index file format. Format 6
// adds to each segment the content sum of the container the scan measured
// (Segment.Sum); format 5 marks each segment's digest as built by the
// scan, not yet known (a segment measured by a level-0 scan) or learned at
// its first build; format 4 adds the device, inode and ctime to the
// identity; format 3 stored segmentDigest where format 2 stored a CRC-32C
// of all the bytes. Files of formats 5 and 4 are still read
// (legacyIndexFormats).
const indexFormat = 6

// legacyIndexFormats are the older formats still read, newest first: in
// format 5 no segment has a content sum (its measured segments' first
// builds are checked against the file's identity), in format 4 every
// segment's digest was built by the scan.
var legacyIndexFormats = [...]int{5, 4}

// dependsOn describes everything the bytes of a virtual BAM depend on
// besides the CRAM itself: the format, the BGZF level, block cutting and
// encoder generation, and the Source's decoding variant (MD/NM tags on or
// off). It is stored in and keys each index file. The reference is not
// part of it: a layout built by the scan is only made from slices whose
// reference MD5s match, and a segment rebuilt with other bases fails its
// digest, which drops the layout (see Manager.dropLayout); a measured
// segment's first build checks the MD5s itself, and its lengths, which
// other bases can change (MD/NM), drop the layout when they differ.
func dependsOn(level int, variant string) string {
	return dependsOnFormat(indexFormat, level, variant)
}

// dependsOnFormat is dependsOn for the index format given.
func dependsOnFormat(format, level int, variant string) string {
	return fmt.Sprintf("cramfs-layout format=%d level=%d cut=%d encoder=%d %s", format, level, bgzf.MaxBlockData, EncoderVersion, variant)
}

// indexKey names the index file of a CRAM with identity id whose bytes
// depend on depends.
func indexKey(id identity, depends string) string {
	h := sha256.New()
	h.Write([]byte(depends))
	var b [40]byte
	binary.LittleEndian.PutUint64(b[:], id.Dev)
	binary.LittleEndian.PutUint64(b[8:], id.Ino)
	binary.LittleEndian.PutUint64(b[16:], uint64(id.Size))
	binary.LittleEndian.PutUint64(b[24:], uint64(id.MTime))
	binary.LittleEndian.PutUint64(b[32:], uint64(id.CTime))
	h.Write(b[:])
	h.Write(id.Head[:])
	h.Write(id.Tail[:])
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// indexFile is the content of a persisted layout index.
type indexFile struct {
	Depends string
	ID      identity
	Layout  Layout
	HasBAI  bool   // an index was built (BAI, or CSI when CSI is set)
	BAI     []byte // the index bytes
	CSI     bool   // the index is a CSI (a reference longer than 2^29)
	// Learned holds, by segment, the digests of measured segments
	// (Segment.NoDigest) learned at their first build.
	Learned map[int]uint32
}

// The kinds of a segment's digest in an index file of format 5 or 6.
const (
	digestBuilt   = 0 // computed by the scan
	digestUnknown = 1 // the scan measured the segment; not yet known
	digestLearned = 2 // the scan measured the segment; learned at its first build
)

// The kinds of a segment's content sum in an index file of format 6.
const (
	sumNone   = 0 // none: a segment built by the scan, or measured from a Source without sums
	sumCRC32C = 1 // the CRC-32C of the container's data (ContentSummer)
)

const (
	indexMagic     = "CRAMFSLX"
	maxDependsLen  = 1 << 10
	segRecordLen   = 8 + 8 + 4 + 1 + 1 + 4 // format 6; format 5 has no sum, format 4 no kind either
	maxSegmentLen  = 1 << 40
	maxIndexFile   = 1 << 30
	indexFixedHead = 8 + 4 + 4 // magic, format, depends length
)

// segRecordLenOf is the length of a segment record in an index file of
// the format given.
func segRecordLenOf(format uint32) int {
	switch format {
	case 4:
		return segRecordLen - 6
	case 5:
		return segRecordLen - 5
	}
	return segRecordLen
}

// marshalIndex encodes f; see readIndex for the format.
func marshalIndex(f *indexFile) []byte {
	b := make([]byte, 0, 128+len(f.Depends)+segRecordLen*len(f.Layout.Segments)+len(f.BAI))
	b = append(b, indexMagic...)
	b = binary.LittleEndian.AppendUint32(b, indexFormat)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(f.Depends)))
	b = append(b, f.Depends...)
	b = binary.LittleEndian.AppendUint64(b, f.ID.Dev)
	b = binary.LittleEndian.AppendUint64(b, f.ID.Ino)
	b = binary.LittleEndian.AppendUint64(b, uint64(f.ID.Size))
	b = binary.LittleEndian.AppendUint64(b, uint64(f.ID.MTime))
	b = binary.LittleEndian.AppendUint64(b, uint64(f.ID.CTime))
	b = append(b, f.ID.Head[:]...)
	b = append(b, f.ID.Tail[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(f.Layout.Level)))
	putSeg := func(s Segment, i int) {
		kind, d := byte(digestBuilt), s.Digest
		if s.NoDigest {
			kind, d = digestUnknown, 0
			if l, ok := f.Learned[i]; ok {
				kind, d = digestLearned, l
			}
		}
		sumKind := byte(sumNone)
		if s.HasSum {
			sumKind = sumCRC32C
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(s.CompLen))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.RawLen))
		b = binary.LittleEndian.AppendUint32(b, d)
		b = append(b, kind, sumKind)
		b = binary.LittleEndian.AppendUint32(b, s.Sum)
	}
	putSeg(f.Layout.Header, headerSegment)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(f.Layout.Segments)))
	for i, s := range f.Layout.Segments {
		putSeg(s, i)
	}
	switch {
	case f.HasBAI && f.CSI:
		b = append(b, 2)
	case f.HasBAI:
		b = append(b, 1)
	default:
		b = append(b, 0)
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(len(f.BAI)))
	b = append(b, f.BAI...)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// indexReader consumes an index file, recording the first error.
type indexReader struct {
	b      []byte
	off    int
	err    error
	format uint32 // of the file: whether segments have a kind byte and a sum
}

func (r *indexReader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.err = fmt.Errorf("%w: index truncated reading %s at offset %d: need %d bytes, have %d", ErrInvalid, what, r.off, n, len(r.b)-r.off)
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *indexReader) u64(what string) uint64 {
	if p := r.take(8, what); p != nil {
		return binary.LittleEndian.Uint64(p)
	}
	return 0
}

func (r *indexReader) u32(what string) uint32 {
	if p := r.take(4, what); p != nil {
		return binary.LittleEndian.Uint32(p)
	}
	return 0
}

// seg reads a segment and the kind of its digest.
func (r *indexReader) seg(what string) (Segment, byte) {
	at := r.off
	c, u, crc := r.u64(what), r.u64(what), r.u32(what)
	kind, sumKind, sum := byte(digestBuilt), byte(sumNone), uint32(0)
	if r.format >= 5 {
		if p := r.take(1, what); p != nil {
			kind = p[0]
		}
	}
	if r.format >= 6 {
		if p := r.take(1, what); p != nil {
			sumKind = p[0]
		}
		sum = r.u32(what)
	}
	switch {
	case r.err != nil:
	case c > maxSegmentLen || u > maxSegmentLen || (c == 0) != (u == 0):
		r.err = fmt.Errorf("%w: index %s has implausible lengths %d/%d at offset %d", ErrInvalid, what, c, u, at)
	case kind > digestLearned || kind == digestUnknown && crc != 0:
		r.err = fmt.Errorf("%w: index %s has digest kind %d (digest %08x) at offset %d", ErrInvalid, what, kind, crc, at)
	case sumKind > sumCRC32C || sumKind == sumNone && sum != 0 || sumKind != sumNone && kind == digestBuilt:
		r.err = fmt.Errorf("%w: index %s has content sum kind %d (sum %08x) with digest kind %d at offset %d", ErrInvalid, what, sumKind, sum, kind, at)
	}
	// A learned digest is left in Digest for the caller to take.
	return Segment{CompLen: int64(c), RawLen: int64(u), Digest: crc, NoDigest: kind != digestBuilt, Sum: sum, HasSum: sumKind != sumNone}, kind
}

// readIndex parses a persisted layout index (untrusted bytes). The format,
// little-endian: magic "CRAMFSLX"; u32 format version; u32 length and the
// dependency string; the CRAM identity (u64 device, u64 inode, i64 size,
// i64 mtime and i64 ctime in ns, SHA-256 of the first and of the last
// 64 KiB); i32 level; the header segment and
// u64 count of container segments, each segment as u64 compressed length,
// u64 raw length, u32 segmentDigest, u8 kind of the digest (digestBuilt,
// digestUnknown with a zero digest, digestLearned; format 4 has no kind:
// built), u8 kind of the content sum (sumNone with a zero sum, sumCRC32C
// for a measured segment only) and u32 content sum (format 5 and 4 have
// neither: none); u8 has-index flag, u64 length and the .bai (SAMv1
// §5.2); a trailing u32 CRC-32C of all preceding bytes. Offsets are
// derived, so every parsed Layout is self-consistent.
func readIndex(b []byte) (*indexFile, error) {
	if len(b) < indexFixedHead+4 {
		return nil, fmt.Errorf("%w: index of %d bytes is too short", ErrInvalid, len(b))
	}
	body := b[:len(b)-4]
	if want, got := binary.LittleEndian.Uint32(b[len(b)-4:]), crc32.Checksum(body, castagnoli); want != got {
		return nil, fmt.Errorf("%w: index checksum %08x, stored %08x", ErrInvalid, got, want)
	}
	r := &indexReader{b: body}
	if string(r.take(8, "magic")) != indexMagic {
		return nil, fmt.Errorf("%w: index magic not %q", ErrInvalid, indexMagic)
	}
	if r.format = r.u32("format"); r.format != indexFormat && !slices.Contains(legacyIndexFormats[:], int(r.format)) {
		return nil, fmt.Errorf("%w: index format %d, want %d or one of %v", ErrInvalid, r.format, indexFormat, legacyIndexFormats)
	}
	f := &indexFile{}
	dl := r.u32("dependency length")
	if dl > maxDependsLen {
		return nil, fmt.Errorf("%w: index dependency string of %d bytes", ErrInvalid, dl)
	}
	f.Depends = string(r.take(int(dl), "dependency string"))
	f.ID.Dev = r.u64("device")
	f.ID.Ino = r.u64("inode")
	f.ID.Size = int64(r.u64("size"))
	f.ID.MTime = int64(r.u64("mtime"))
	f.ID.CTime = int64(r.u64("ctime"))
	copy(f.ID.Head[:], r.take(32, "head hash"))
	copy(f.ID.Tail[:], r.take(32, "tail hash"))
	f.Layout.Level = int(int32(r.u32("level")))
	var kind byte
	f.Layout.Header, kind = r.seg("header segment")
	n := r.u64("segment count")
	if r.err != nil {
		return nil, r.err
	}
	if f.Layout.Header.CompLen == 0 {
		return nil, fmt.Errorf("%w: index has an empty header segment", ErrInvalid)
	}
	if kind != digestBuilt {
		return nil, fmt.Errorf("%w: index header segment without its digest", ErrInvalid)
	}
	recLen := uint64(segRecordLenOf(r.format))
	if n > uint64(len(body)-r.off)/recLen {
		return nil, fmt.Errorf("%w: index claims %d segments, only %d bytes left", ErrInvalid, n, len(body)-r.off)
	}
	f.Layout.Segments = make([]Segment, 0, n)
	off := f.Layout.Header.CompLen
	for i := uint64(0); i < n && r.err == nil; i++ {
		s, kind := r.seg("segment")
		if kind == digestLearned {
			if f.Learned == nil {
				f.Learned = make(map[int]uint32)
			}
			f.Learned[int(i)] = s.Digest
		}
		if s.NoDigest {
			s.Digest = 0
		}
		s.Offset = off
		off += s.CompLen
		if off > 1<<48 {
			return nil, fmt.Errorf("%w: index segments exceed 2^48 bytes", ErrInvalid)
		}
		f.Layout.Segments = append(f.Layout.Segments, s)
	}
	f.Layout.Size = off + int64(len(bgzf.EOF))
	flag := r.take(1, "index flag")
	bl := r.u64("bai length")
	if r.err != nil {
		return nil, r.err
	}
	if flag[0] > 2 {
		return nil, fmt.Errorf("%w: index flag %d", ErrInvalid, flag[0])
	}
	f.HasBAI, f.CSI = flag[0] >= 1, flag[0] == 2
	if bl > uint64(len(body)-r.off) {
		return nil, fmt.Errorf("%w: index claims a .bai of %d bytes, only %d left", ErrInvalid, bl, len(body)-r.off)
	}
	f.BAI = append([]byte(nil), r.take(int(bl), "bai")...)
	if r.err != nil {
		return nil, r.err
	}
	if r.off != len(body) {
		return nil, fmt.Errorf("%w: %d unexpected bytes after the index at offset %d", ErrInvalid, len(body)-r.off, r.off)
	}
	return f, nil
}

// errUntrusted and errUntrustedDir mark an index file or a cache
// directory that the trust model of the cache (docs/trust.md, "Cache
// directory and trust") refuses.
var (
	errUntrusted    = errors.New("index file not trusted")
	errUntrustedDir = errors.New("cache directory not trusted")
)

// checkTrusted reports why the cache directory or index file path, of
// status st, may not be trusted (the error wraps kind): it must be owned
// by this user or root and not be writable by group or others; with
// shared, any owner and group write are accepted, never write by others.
func checkTrusted(st *unix.Stat_t, shared bool, kind error, path string) error {
	euid := uint32(os.Geteuid())
	if !shared && st.Uid != euid && st.Uid != 0 {
		return fmt.Errorf("%w: %s is owned by uid %d, not by this user (uid %d) or root (a cache shared with other users needs --shared-cache)", kind, path, st.Uid, euid)
	}
	mask, who := uint32(0o022), "group or others"
	if shared {
		mask, who = 0o002, "others"
	}
	if st.Mode&mask != 0 {
		return fmt.Errorf("%w: %s is writable by %s (mode %04o)", kind, path, who, st.Mode&0o7777)
	}
	return nil
}

// openCacheDir opens the cache directory dir and checks that it may be
// trusted. The caller closes the descriptor.
func openCacheDir(dir string, shared bool) (int, error) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, &fs.PathError{Op: "fstat", Path: dir, Err: err}
	}
	if err := checkTrusted(&st, shared, errUntrustedDir, dir); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// loadIndex reads and parses the index file name in the cache directory
// dir, if the directory and the file may be trusted: the file is opened
// below the directory's descriptor without following a symbolic link, and
// checked with fstat on the descriptor read.
func loadIndex(dir, name string, shared bool) (*indexFile, error) {
	dfd, err := openCacheDir(dir, shared)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dfd)
	path := filepath.Join(dir, name)
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) {
		return nil, fmt.Errorf("%w: index file %s is a symbolic link", errUntrusted, path)
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	fh := os.NewFile(uintptr(fd), path)
	defer fh.Close()
	st, err := fstat(fh)
	if err != nil {
		return nil, err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, fmt.Errorf("%w: index file %s is not a regular file (mode %o)", errUntrusted, path, st.Mode)
	}
	if err := checkTrusted(st, shared, errUntrusted, path); err != nil {
		return nil, err
	}
	if st.Size > maxIndexFile {
		return nil, fmt.Errorf("%w: index file %s of %d bytes", ErrInvalid, path, st.Size)
	}
	b, err := io.ReadAll(io.LimitReader(fh, maxIndexFile+1))
	if err != nil {
		return nil, err
	}
	return readIndex(b)
}

// tempPrefix starts the names of index files being written; the writer's
// pid follows, so that a temporary file left by a killed writer is
// recognisable (see removeStaleTemps).
const tempPrefix = ".tmp-"

// staleTempAge is how old a temporary index file must be to be taken for
// the leftover of a killed writer: a writer writes one in a single write,
// syncs and renames it, in well under a second.
const staleTempAge = 10 * time.Minute

// writeIndex stores f as name in the cache directory dir atomically: a
// temporary file in the same directory, synced, then renamed over name.
// In a shared cache the file is readable by the directory's group.
func writeIndex(dir, name string, f *indexFile, shared bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dfd, err := openCacheDir(dir, shared)
	if err != nil {
		return err
	}
	unix.Close(dfd)
	tmp, err := os.CreateTemp(dir, fmt.Sprintf("%s%s-%d-*", tempPrefix, name, os.Getpid()))
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	_, err = tmp.Write(marshalIndex(f))
	if err == nil && shared {
		err = tmp.Chmod(0o640)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmpName, filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmpName)
	}
	return err
}

// removeStaleTemps removes from dir the temporary index files older than
// staleTempAge (left by writers killed between create and rename) and
// returns how many it removed. An untrusted directory is left alone.
func removeStaleTemps(dir string, shared bool, now time.Time) (int, error) {
	dfd, err := openCacheDir(dir, shared)
	if err != nil {
		return 0, err
	}
	unix.Close(dfd)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, e := range ents {
		if !e.Type().IsRegular() || !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		fi, err := e.Info()
		if err != nil || now.Sub(fi.ModTime()) < staleTempAge {
			continue
		}
		if os.Remove(filepath.Join(dir, e.Name())) == nil {
			n++
		}
	}
	return n, nil
}
