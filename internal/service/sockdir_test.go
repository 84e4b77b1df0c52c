package service

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestSocketDir: sockets of a directory of any depth get a short address
// through its descriptor; without /proc, a path too long for a socket
// address is an error naming it and its length; a directory that is a
// link, or that others may enter, is refused as private directory.
func TestSocketDir(t *testing.T) {
	deep := filepath.Join(t.TempDir(), strings.Repeat("d", 100), strings.Repeat("e", 100))
	d, err := openPrivateDir(deep)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	const name = "status-0123456789abcdef.sock"
	addr, err := d.addr(name)
	if want := "/proc/self/fd/" + strconv.Itoa(int(d.f.Fd())) + "/" + name; err != nil || addr != want {
		t.Errorf("addr = %q, %v; want %q", addr, err, want)
	}

	noProc := &socketDir{path: deep, via: deep}
	long := filepath.Join(deep, name)
	if _, err := noProc.addr(name); err == nil || !strings.Contains(err.Error(), long) || !strings.Contains(err.Error(), strconv.Itoa(len(long))+" bytes") {
		t.Errorf("a %d-byte path without /proc: %v, want an error naming it and its length", len(long), err)
	}
	short := &socketDir{path: "/run/x", via: "/run/x"}
	if addr, err := short.addr(name); err != nil || addr != "/run/x/"+name {
		t.Errorf("a short path without /proc: %q, %v", addr, err)
	}

	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(deep, link); err != nil {
		t.Fatal(err)
	}
	if d, err := openPrivateDir(link); err == nil {
		d.Close()
		t.Error("a link to a private directory accepted")
	}
	open := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	if d, err := openPrivateDir(open); err == nil || !strings.Contains(err.Error(), "want 0700") {
		if d != nil {
			d.Close()
		}
		t.Errorf("a directory of mode 0755: %v, want refused", err)
	}
}
