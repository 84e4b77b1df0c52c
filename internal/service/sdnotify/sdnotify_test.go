package sdnotify

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

// listen makes a notification socket as systemd does and names it in
// NOTIFY_SOCKET for the test.
func listen(t *testing.T, name string) *net.UnixConn {
	t.Helper()
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func receive(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

// TestNotifyPath sends READY=1 and STOPPING=1 to a socket at a path.
func TestNotifyPath(t *testing.T) {
	p := filepath.Join(t.TempDir(), "notify")
	c := listen(t, p)
	t.Setenv("NOTIFY_SOCKET", p)
	for _, state := range []string{Ready, Stopping} {
		if sent, err := Notify(state); !sent || err != nil {
			t.Fatalf("Notify(%s): %v, %v", state, sent, err)
		}
		if got := receive(t, c); got != state {
			t.Errorf("received %q, want %q", got, state)
		}
	}
}

// TestNotifyAbstract sends to an abstract socket (@name).
func TestNotifyAbstract(t *testing.T) {
	name := "cramfs-test-" + filepath.Base(t.TempDir())
	c := listen(t, "@"+name)
	t.Setenv("NOTIFY_SOCKET", "@"+name)
	if sent, err := Notify(Ready); !sent || err != nil {
		t.Fatalf("Notify: %v, %v", sent, err)
	}
	if got := receive(t, c); got != Ready {
		t.Errorf("received %q", got)
	}
}

// TestNotifyWithoutSystemd sends nothing and fails nothing without
// NOTIFY_SOCKET; a relative name is an error.
func TestNotifyWithoutSystemd(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	if sent, err := Notify(Ready); sent || err != nil {
		t.Errorf("without NOTIFY_SOCKET: %v, %v", sent, err)
	}
	t.Setenv("NOTIFY_SOCKET", "relative")
	if _, err := Notify(Ready); err == nil {
		t.Error("relative NOTIFY_SOCKET: no error")
	}
}
