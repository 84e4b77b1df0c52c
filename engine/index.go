package engine

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/cramfs/cramfs/encode/bgzf"
)

// identity pins the content of a CRAM file: its size, its modification
// time and SHA-256 digests of its first and last 64 KiB.
type identity struct {
	Size  int64
	MTime int64 // nanoseconds since the Unix epoch
	Head  [32]byte
	Tail  [32]byte
}

// identityWindow is how much of each end of the file is hashed.
const identityWindow = 64 << 10

// fileIdentity reads the identity of the file at path.
func fileIdentity(path string) (identity, error) {
	f, err := os.Open(path)
	if err != nil {
		return identity{}, err
	}
	defer f.Close()
	return readIdentity(f, path)
}

// readIdentity reads the identity of the open file f (named name).
func readIdentity(f *os.File, name string) (identity, error) {
	fi, err := f.Stat()
	if err != nil {
		return identity{}, err
	}
	if !fi.Mode().IsRegular() {
		return identity{}, fmt.Errorf("%s: not a regular file", name)
	}
	id := identity{Size: fi.Size(), MTime: fi.ModTime().UnixNano()}
	buf := make([]byte, min(identityWindow, id.Size))
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

// indexFormat is the version of the layout index file format. Format 3
// stores segmentDigest where format 2 stored a CRC-32C of all the bytes.
const indexFormat = 3

// dependsOn describes everything the bytes of a virtual BAM depend on
// besides the CRAM itself; it is stored in and keys each index file.
func dependsOn(level int) string {
	return fmt.Sprintf("cramfs-layout format=%d level=%d cut=%d encoder=%d", indexFormat, level, bgzf.MaxBlockData, EncoderVersion)
}

// indexKey names the index file of a CRAM with identity id.
func indexKey(id identity, level int) string {
	h := sha256.New()
	h.Write([]byte(dependsOn(level)))
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], uint64(id.Size))
	binary.LittleEndian.PutUint64(b[8:], uint64(id.MTime))
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
}

const (
	indexMagic     = "CRAMFSLX"
	maxDependsLen  = 1 << 10
	segRecordLen   = 8 + 8 + 4
	maxSegmentLen  = 1 << 40
	maxIndexFile   = 1 << 30
	indexFixedHead = 8 + 4 + 4 // magic, format, depends length
)

// marshalIndex encodes f; see readIndex for the format.
func marshalIndex(f *indexFile) []byte {
	b := make([]byte, 0, 128+len(f.Depends)+segRecordLen*len(f.Layout.Segments)+len(f.BAI))
	b = append(b, indexMagic...)
	b = binary.LittleEndian.AppendUint32(b, indexFormat)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(f.Depends)))
	b = append(b, f.Depends...)
	b = binary.LittleEndian.AppendUint64(b, uint64(f.ID.Size))
	b = binary.LittleEndian.AppendUint64(b, uint64(f.ID.MTime))
	b = append(b, f.ID.Head[:]...)
	b = append(b, f.ID.Tail[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(int32(f.Layout.Level)))
	putSeg := func(s Segment) {
		b = binary.LittleEndian.AppendUint64(b, uint64(s.CompLen))
		b = binary.LittleEndian.AppendUint64(b, uint64(s.RawLen))
		b = binary.LittleEndian.AppendUint32(b, s.Digest)
	}
	putSeg(f.Layout.Header)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(f.Layout.Segments)))
	for _, s := range f.Layout.Segments {
		putSeg(s)
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
	b   []byte
	off int
	err error
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

func (r *indexReader) seg(what string) Segment {
	c, u, crc := r.u64(what), r.u64(what), r.u32(what)
	if r.err == nil && (c > maxSegmentLen || u > maxSegmentLen || (c == 0) != (u == 0)) {
		r.err = fmt.Errorf("%w: index %s has implausible lengths %d/%d at offset %d", ErrInvalid, what, c, u, r.off-segRecordLen)
	}
	return Segment{CompLen: int64(c), RawLen: int64(u), Digest: crc}
}

// readIndex parses a persisted layout index (untrusted bytes). The format,
// little-endian: magic "CRAMFSLX"; u32 format version; u32 length and the
// dependency string; the CRAM identity (i64 size, i64 mtime in ns, SHA-256
// of the first and of the last 64 KiB); i32 level; the header segment and
// u64 count of container segments, each segment as u64 compressed length,
// u64 raw length, u32 segmentDigest; u8 has-index flag, u64 length and the .bai
// (SAMv1 §5.2); a trailing u32 CRC-32C of all preceding bytes. Offsets are
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
	if v := r.u32("format"); v != indexFormat {
		return nil, fmt.Errorf("%w: index format %d, want %d", ErrInvalid, v, indexFormat)
	}
	f := &indexFile{}
	dl := r.u32("dependency length")
	if dl > maxDependsLen {
		return nil, fmt.Errorf("%w: index dependency string of %d bytes", ErrInvalid, dl)
	}
	f.Depends = string(r.take(int(dl), "dependency string"))
	f.ID.Size = int64(r.u64("size"))
	f.ID.MTime = int64(r.u64("mtime"))
	copy(f.ID.Head[:], r.take(32, "head hash"))
	copy(f.ID.Tail[:], r.take(32, "tail hash"))
	f.Layout.Level = int(int32(r.u32("level")))
	f.Layout.Header = r.seg("header segment")
	n := r.u64("segment count")
	if r.err != nil {
		return nil, r.err
	}
	if f.Layout.Header.CompLen == 0 {
		return nil, fmt.Errorf("%w: index has an empty header segment", ErrInvalid)
	}
	if n > uint64(len(body)-r.off)/segRecordLen {
		return nil, fmt.Errorf("%w: index claims %d segments, only %d bytes left", ErrInvalid, n, len(body)-r.off)
	}
	f.Layout.Segments = make([]Segment, 0, n)
	off := f.Layout.Header.CompLen
	for i := uint64(0); i < n && r.err == nil; i++ {
		s := r.seg("segment")
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

// loadIndex reads and parses the index file at path.
func loadIndex(path string) (*indexFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > maxIndexFile {
		return nil, fmt.Errorf("%w: index file %s of %d bytes", ErrInvalid, path, fi.Size())
	}
	b, err := io.ReadAll(io.LimitReader(fh, maxIndexFile+1))
	if err != nil {
		return nil, err
	}
	return readIndex(b)
}

// writeIndex stores f at path atomically: a temporary file in the same
// directory, synced, then renamed over path.
func writeIndex(path string, f *indexFile) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	_, err = tmp.Write(marshalIndex(f))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(name, path)
	}
	if err != nil {
		os.Remove(name)
	}
	return err
}
