// Package sdnotify tells systemd about the service's state (sd_notify(3)):
// a datagram such as "READY=1" to the unix socket named by NOTIFY_SOCKET,
// which systemd sets for a unit of Type=notify. Without NOTIFY_SOCKET
// nothing is sent.
package sdnotify

import (
	"fmt"
	"net"
	"os"
)

// The states a service reports.
const (
	Ready    = "READY=1"
	Stopping = "STOPPING=1"
)

// Notify sends state (one or more NAME=VALUE lines) to systemd, and
// reports whether it was sent: false, with no error, when the process was
// not started by systemd with a notification socket.
func Notify(state string) (bool, error) {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return false, nil
	}
	if name[0] == '@' {
		name = "\x00" + name[1:] // an abstract socket
	} else if name[0] != '/' {
		return false, fmt.Errorf("NOTIFY_SOCKET %q: want an absolute path or an abstract name (@...)", name)
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return false, fmt.Errorf("NOTIFY_SOCKET: %w", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return false, fmt.Errorf("NOTIFY_SOCKET: %w", err)
	}
	return true, nil
}
