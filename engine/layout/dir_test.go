package layout

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cramfs/cramfs/engine/source"
)

// TestDirRoundTrip: a File saved under a key loads back equal, a key
// never saved is fs.ErrNotExist, a removed one too, and removing it again
// is not an error.
func TestDirRoundTrip(t *testing.T) {
	d := Dir{Path: filepath.Join(t.TempDir(), "cache")} // made by Save
	f := &File{
		Depends: Depends(0, "md=1"),
		ID:      source.Identity{Dev: 1, Ino: 2, Size: 3, MTime: 4, CTime: 5, Head: [32]byte{6}, Tail: [32]byte{7}},
		Layout: Layout{Header: Segment{CompLen: 40, RawLen: 30, Digest: 9},
			Segments: []Segment{{Offset: 40, CompLen: 10, RawLen: 5, NoDigest: true, Sum: 3, HasSum: true}}, Size: 50 + 28},
		HasBAI:  true,
		BAI:     []byte("BAI\x01"),
		Learned: map[int]uint32{0: 0xfeed},
	}
	key := Key(f.ID, f.Depends)
	if _, err := d.Load(key); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of a key never saved: %v, want fs.ErrNotExist", err)
	}
	if err := d.Save(key, f); err != nil {
		t.Fatal(err)
	}
	g, err := d.Load(key)
	if err != nil || !reflect.DeepEqual(g, f) {
		t.Fatalf("Load after Save: %+v (%v), want %+v", g, err, f)
	}
	if d.PathOf(key) != filepath.Join(d.Path, key+".idx") {
		t.Errorf("PathOf %q: %s", key, d.PathOf(key))
	}
	for range 2 {
		if err := d.Remove(key); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Load(key); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load after Remove: %v, want fs.ErrNotExist", err)
	}
}

// TestDirRefusesWritableByOthers: an index file others may write is not
// trusted (ErrUntrusted), nor a directory group may write unless Shared
// (ErrUntrustedDir), whose files the group may then write.
func TestDirRefusesWritableByOthers(t *testing.T) {
	d := Dir{Path: t.TempDir()}
	f := &File{Depends: Depends(1, "md=1"), Layout: Layout{Header: Segment{CompLen: 1, RawLen: 1}, Size: 29}}
	if err := d.Save("k", f); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d.PathOf("k"), 0o666); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Load("k"); !errors.Is(err, ErrUntrusted) {
		t.Fatalf("file writable by others: %v, want ErrUntrusted", err)
	}
	if err := os.Chmod(d.PathOf("k"), 0o664); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d.Path, 0o775); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Load("k"); !errors.Is(err, ErrUntrustedDir) {
		t.Fatalf("directory writable by its group: %v, want ErrUntrustedDir", err)
	}
	d.Shared = true
	if _, err := d.Load("k"); err != nil {
		t.Fatalf("shared directory and file writable by their group: %v", err)
	}
}
