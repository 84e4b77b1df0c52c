package service

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/cramfs/cramfs/cache"
	"github.com/cramfs/cramfs/engine"
	cfs "github.com/cramfs/cramfs/fs"
	"github.com/cramfs/cramfs/internal/web"
)

// A running mount answers `cramfs status MNT` on a unix socket in a
// directory only its user can enter (mode 0700, checked), and answers
// only peers of its own user (SO_PEERCRED) or root. The socket's name is
// derived from the mount point; its directory from the environment and
// the mount's --cache-dir, which the mount's root names (statusXattr), so
// the client finds it from MNT alone. The client checks what the mount
// names as the mount checks its own: a directory of its user, mode 0700,
// and a peer of its user or root.

// statusXattr is the extended attribute of a mount's root whose value is
// the path of its status socket.
const statusXattr = "user.cramfs.status_socket"

// mountStatus is what a mount reports: itself, its cache and its files.
type mountStatus struct {
	Src       string       `json:"src"`
	Mnt       string       `json:"mnt,omitempty"` // a mount's mount point
	URL       string       `json:"url,omitempty"` // a server's root URL
	PID       int          `json:"pid"`
	Started   time.Time    `json:"started"`
	Threads   int          `json:"threads"`
	Level     int          `json:"level"`
	CacheSize int64        `json:"cache_size"`
	Cache     cacheStatus  `json:"cache"`
	States    stateStatus  `json:"states"`
	Files     []fileStatus `json:"files"`
	Scans     []scanStatus `json:"scans"`
	// Shadowed are the real entries of SRC found hiding a synthetic
	// name, at most fs.MaxShadowed; ShadowedMore says that more were.
	Shadowed     []shadowStatus `json:"shadowed,omitempty"`
	ShadowedMore bool           `json:"shadowed_more,omitempty"`
}

// cacheStatus is the block cache's counters (cache.Stats), named as the
// rest of the status. Hits and misses count lookups of segments (a read
// looks up each segment it spans, readahead those it would build); Adds
// counts the segments built.
type cacheStatus struct {
	Hits      uint64 `json:"hits"`
	Misses    uint64 `json:"misses"`
	Adds      uint64 `json:"adds"`
	Rejected  uint64 `json:"rejected"`
	Evictions uint64 `json:"evictions"`
	Entries   int    `json:"entries"`
	Bytes     int64  `json:"bytes"`
	Reserved  int64  `json:"reserved"`
	Free      int64  `json:"free"`
	MaxBytes  int64  `json:"max_bytes"`
}

func cacheStatusOf(c cache.Stats) cacheStatus {
	return cacheStatus{Hits: c.Hits, Misses: c.Misses, Adds: c.Adds, Rejected: c.Rejected, Evictions: c.Evictions,
		Entries: c.Entries, Bytes: c.Bytes, Reserved: c.Reserved, Free: c.Free, MaxBytes: c.MaxBytes}
}

// stateStatus is the open files' state held (engine.StateStats): bytes of
// headers, container tables and layouts counted against the cache
// budget, and CRAM descriptors, each against its bound.
type stateStatus struct {
	Bytes       int64 `json:"bytes"`
	MaxBytes    int64 `json:"max_bytes"`
	Descriptors int   `json:"descriptors"`
	MaxOpen     int   `json:"max_descriptors"`
}

func stateStatusOf(s engine.StateStats) stateStatus {
	return stateStatus{Bytes: s.Bytes, MaxBytes: s.MaxBytes, Descriptors: s.Files, MaxOpen: s.MaxFiles}
}

// shadowStatus is a real entry of SRC shown instead of the synthetic file
// of the same name (fs.Shadow).
type shadowStatus struct {
	Dir  string `json:"dir"`
	Name string `json:"name"`
	Kind string `json:"kind"`
	CRAM string `json:"cram"`
}

// shadowLister lists a mount's shadowed names (fs.Server).
type shadowLister interface {
	Shadowed() ([]cfs.Shadow, bool)
}

// shadowedOf returns the shadowed names of l (none when l is nil).
func shadowedOf(l shadowLister) ([]shadowStatus, bool) {
	if l == nil {
		return nil, false
	}
	list, more := l.Shadowed()
	out := make([]shadowStatus, len(list))
	for i, s := range list {
		out[i] = shadowStatus{Dir: s.Dir, Name: s.Name, Kind: s.Kind, CRAM: s.CRAM}
	}
	return out, more
}

// writeShadowed prints the shadowed names of a status for people.
func writeShadowed(w io.Writer, st mountStatus) {
	for _, s := range st.Shadowed {
		fmt.Fprintf(w, "shadowed: %s (%s) is shown instead of the synthetic file of %s\n",
			filepath.Join(s.Dir, s.Name), s.Kind, filepath.Join(s.Dir, s.CRAM))
	}
	if st.ShadowedMore {
		fmt.Fprintf(w, "shadowed: more names than the %d kept (see the mount's log)\n", len(st.Shadowed))
	}
}

// scanStatus is a layout scan in progress: the first access of a file
// whose layout is not yet known waits for it.
type scanStatus struct {
	Path  string `json:"path"`
	Done  int    `json:"containers_done"`
	Total int    `json:"containers"`
}

// scansOf returns the scans in progress of mgr.
func scansOf(mgr *engine.Manager) []scanStatus {
	scans := mgr.Scans()
	out := make([]scanStatus, len(scans))
	for i, sc := range scans {
		out[i] = scanStatus{Path: sc.File, Done: sc.Done, Total: sc.Total}
	}
	return out
}

// fileStatus is one CRAM file the mount was asked for (its newest version).
type fileStatus struct {
	Path      string `json:"path"`
	Size      int64  `json:"bam_size"` // 0 until opened
	Index     string `json:"index"`
	Segments  int    `json:"segments"`
	Reads     int64  `json:"reads"`
	BytesRead int64  `json:"bytes_read"`
	// The failure that still holds (see failure): what, when, and the
	// BAM offset of the read that failed (none for a failed open).
	Error       string    `json:"error,omitempty"`
	ErrorTime   time.Time `json:"error_time,omitzero"`
	ErrorOffset *int64    `json:"error_offset,omitempty"`
}

// snapshot returns the files' states, sorted by path.
func (n *fileReports) snapshot() []fileStatus {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]fileStatus, 0, n.files.Len())
	for _, st := range n.files.Values() {
		f := fileStatus{Path: n.name(st.key), Size: st.size, Index: st.indexExt, Segments: st.segments,
			Reads: st.reads.Load(), BytesRead: st.bytesRead.Load(), Error: st.fail.msg, ErrorTime: st.fail.at}
		if st.fail.msg != "" && st.fail.off != openFailed {
			f.ErrorOffset = &st.fail.off
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b fileStatus) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// statusDir is the directory of the status sockets: $XDG_RUNTIME_DIR/cramfs,
// else the run directory of the cache directory.
func statusDir(cacheDir string) string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "cramfs")
	}
	if cacheDir == "" {
		cacheDir = engine.DefaultCacheDir()
	}
	return filepath.Join(cacheDir, "run")
}

// statusSocket is the socket path of the mount at mnt: named by a hash of
// the host name and the mount point's absolute, resolved path (a unix
// socket path is short). The host is in it because, without
// XDG_RUNTIME_DIR, the socket is in the cache directory, which the nodes
// of a cluster may share, each mounting on the same path.
func statusSocket(cacheDir, mnt string) string {
	abs, err := filepath.Abs(mnt)
	if err != nil {
		abs = mnt
	}
	if r, err := filepath.EvalSymlinks(abs); err == nil {
		abs = r
	}
	host, _ := os.Hostname()
	sum := sha256.Sum256([]byte(host + "\x00" + abs))
	// Absolute, as the mount names it to clients running elsewhere.
	dir := statusDir(cacheDir)
	if d, err := filepath.Abs(dir); err == nil {
		dir = d
	}
	return filepath.Join(dir, "status-"+hex.EncodeToString(sum[:8])+".sock")
}

// findStatusSocket returns the path of the status socket of the mount at
// mnt: in the directory cacheDir gives when given or when the socket is
// there, else the one the mount's root names, once checked.
func findStatusSocket(cacheDir, mnt string) (string, error) {
	path := statusSocket(cacheDir, mnt)
	if cacheDir != "" {
		return path, nil
	}
	if _, err := os.Lstat(path); err == nil {
		return path, nil
	}
	named, err := mountXattr(mnt, statusXattr)
	if err != nil {
		// Not a cramfs mount, or one of an earlier cramfs: the dial says
		// there is no socket.
		return path, nil
	}
	if err := trustedSocket(named, filepath.Base(path)); err != nil {
		return "", fmt.Errorf("the mount at %s names status socket %s, refused: %w", mnt, named, err)
	}
	return named, nil
}

// xattrWait bounds how long the client waits for a mount to answer the
// getxattr of its root (a hung FUSE server never does).
const xattrWait = 5 * time.Second

// mountXattr returns the extended attribute name of mnt, given up on after
// xattrWait.
func mountXattr(mnt, name string) (string, error) {
	type answer struct {
		v   string
		err error
	}
	ch := make(chan answer, 1) // the getxattr may outlive the wait
	go func() {
		buf := make([]byte, 4096)
		n, err := unix.Getxattr(mnt, name, buf)
		if err != nil {
			ch <- answer{err: err}
			return
		}
		ch <- answer{v: string(buf[:n])}
	}()
	select {
	case a := <-ch:
		return a.v, a.err
	case <-time.After(xattrWait):
		return "", fmt.Errorf("getxattr %s %s: no answer in %v", mnt, name, xattrWait)
	}
}

// trustedSocket checks the status socket path a mount named: an absolute
// path with the name the client derives for the mount point (base), a
// socket in a directory that is not a link, of mode 0700, both owned by
// this user (any user's, for root).
func trustedSocket(path, base string) error {
	if !filepath.IsAbs(path) || filepath.Base(path) != base {
		return fmt.Errorf("want an absolute path to a socket named %s", base)
	}
	dir := filepath.Dir(path)
	for _, p := range []string{dir, path} {
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		switch {
		case !ok:
			return fmt.Errorf("%s: no owner known", p)
		case !trustedUID(int(st.Uid)):
			return fmt.Errorf("%s is owned by user %d, not by you", p, st.Uid)
		case p == dir && !fi.IsDir():
			return fmt.Errorf("%s is not a directory", p)
		case p == dir && fi.Mode().Perm()&0o077 != 0:
			return fmt.Errorf("%s has mode %v, want 0700", p, fi.Mode().Perm())
		case p == path && fi.Mode().Type() != os.ModeSocket:
			return fmt.Errorf("%s is not a socket", p)
		}
	}
	return nil
}

// trustedUID reports whether a file or peer of user uid is trusted by the
// status client: its own, or root's; root trusts every user's.
func trustedUID(uid int) bool {
	return uid == os.Geteuid() || uid == 0 || os.Geteuid() == 0
}

// statusServer answers status requests of one mount.
type statusServer struct {
	// dependencies
	ln      *net.UnixListener
	reports *fileReports
	mgr     *engine.Manager
	log     *slog.Logger
	shadows shadowLister // nil: none
	dir     *socketDir   // the socket's, held open: addr leads through it
	// constant
	path string
	addr string      // path's address through dir
	base mountStatus // the mount's own fields; Cache and Files are filled per request
}

// newStatusServer listens on path, whatever its length (see socketDir);
// a socket left by a dead mount is replaced.
func newStatusServer(path string, base mountStatus, reports *fileReports, mgr *engine.Manager, log *slog.Logger, shadows shadowLister) (*statusServer, error) {
	dir, err := openPrivateDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	s := &statusServer{reports: reports, mgr: mgr, log: log, shadows: shadows, dir: dir, path: path, base: base}
	if err := s.listen(); err != nil {
		dir.Close()
		return nil, err
	}
	go s.serve()
	return s, nil
}

// listen binds the socket s.path (mode 0600) through s.dir.
func (s *statusServer) listen() error {
	addr, err := s.dir.addr(filepath.Base(s.path))
	if err != nil {
		return err
	}
	if c, err := net.Dial("unix", addr); err == nil {
		c.Close()
		return fmt.Errorf("%s is in use by another cramfs mount of the same mount point", s.path)
	}
	os.Remove(addr)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: addr, Net: "unix"})
	if err != nil {
		return fmt.Errorf("status socket %s: %w", s.path, err)
	}
	// Removed by Close through s.dir, which closing the listener would
	// not: it would unlink addr once s.dir may be closed.
	ln.SetUnlinkOnClose(false)
	if err := os.Chmod(addr, 0o600); err != nil {
		ln.Close()
		os.Remove(addr)
		return err
	}
	s.ln, s.addr = ln, addr
	return nil
}

func (s *statusServer) serve() {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return // closed
		}
		s.answer(c)
	}
}

// answer writes the status to one peer of this user (or root) and closes.
func (s *statusServer) answer(c *net.UnixConn) {
	defer c.Close()
	uid, err := peerUID(c)
	if err != nil || uid != os.Geteuid() && uid != 0 {
		s.log.Warn("status request refused", "peer_uid", uid, "err", err)
		return
	}
	c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if err := json.NewEncoder(c).Encode(s.status()); err != nil {
		s.log.Debug("status reply", "err", err)
	}
}

// status is the mount's status now.
func (s *statusServer) status() mountStatus {
	return statusNow(s.base, s.mgr, s.reports, s.shadows)
}

// statusNow is the status of a front end with the constant fields base:
// the cache, the files, the scans and the shadowed names now.
func statusNow(base mountStatus, mgr *engine.Manager, reports *fileReports, shadows shadowLister) mountStatus {
	st := base
	st.Cache = cacheStatusOf(mgr.CacheStats())
	st.States = stateStatusOf(mgr.StateStats())
	st.Files = reports.snapshot()
	st.Scans = scansOf(mgr)
	st.Shadowed, st.ShadowedMore = shadowedOf(shadows)
	return st
}

// peerUID is the user id of the process at the other end of c.
func peerUID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	var cred *unix.Ucred
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return -1, err
	}
	if cerr != nil {
		return -1, cerr
	}
	return int(cred.Uid), nil
}

// Close stops answering and removes the socket.
func (s *statusServer) Close() {
	s.ln.Close()
	os.Remove(s.addr)
	s.dir.Close()
}

// QueryStatus asks the running mount at mnt for its status and returns
// it as the mount sent it (JSON). cacheDir is the mount's --cache-dir,
// needed only for a mount made by an earlier cramfs (the mount's root
// names its socket). The socket and the process answering are checked
// to be the user's (or root's).
func QueryStatus(mnt, cacheDir string) ([]byte, error) {
	if err := checkAlive(mnt); err != nil {
		return nil, err
	}
	path, err := findStatusSocket(cacheDir, mnt)
	if err != nil {
		return nil, err
	}
	conn, err := dialStatus(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("no cramfs mount of yours is running at %s (no status socket %s)", mnt, path)
		}
		return nil, fmt.Errorf("cannot reach the status of %s: %w", mnt, err)
	}
	defer conn.Close()
	if uid, err := peerUID(conn.(*net.UnixConn)); err != nil || !trustedUID(uid) {
		return nil, fmt.Errorf("the status socket %s of %s is served by user %d, not by you or root (%v)", path, mnt, uid, err)
	}
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	raw, err := io.ReadAll(conn)
	if err != nil {
		return nil, fmt.Errorf("reading the status of %s: %w", mnt, err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("the mount at %s refused to tell its status (not your mount?)", mnt)
	}
	return raw, nil
}

// checkAlive refuses a dead mount point (its process killed: ENOTCONN),
// saying how to clear it.
func checkAlive(mnt string) error {
	// A stat may be answered from the kernel's attribute cache; an open
	// reaches the (dead) server.
	f, err := os.Open(mnt)
	if err == nil {
		f.Close()
	}
	if errors.Is(err, unix.ENOTCONN) {
		return fmt.Errorf("the mount at %s is dead: its cramfs process ended without unmounting (transport endpoint is not connected); clear it with `cramfs unmount %s`, then mount again", mnt, mnt)
	}
	return nil
}

// QueryServerStatus asks the cramfs server at url (its root URL) for its
// status, sending token (when not empty) as its bearer token.
func QueryServerStatus(url, token string) ([]byte, error) {
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(url, "/")+web.StatusPath, nil)
	if err != nil {
		return nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the cramfs server at %s: %w", url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the status of %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the server at %s answers %s (not a cramfs server, or give its --token-file)", url, resp.Status)
	}
	return raw, nil
}

// WriteStatus prints the status raw of the mount at mnt, as QueryStatus
// returned it, for people.
func WriteStatus(w io.Writer, mnt string, raw []byte) error {
	var st mountStatus
	if err := json.Unmarshal(raw, &st); err != nil {
		return fmt.Errorf("the status of %s is not what this cramfs reads (another version?): %w", mnt, err)
	}
	writeStatus(w, st)
	writeShadowed(w, st)
	return nil
}

// dialStatus connects to the status socket path, whatever its length,
// through its directory (see socketDir).
func dialStatus(path string) (net.Conn, error) {
	dir, err := openSocketDir(filepath.Dir(path), false)
	if err != nil {
		return nil, err
	}
	defer dir.Close() // once connected, the address is no longer needed
	addr, err := dir.addr(filepath.Base(path))
	if err != nil {
		return nil, err
	}
	return net.DialTimeout("unix", addr, 5*time.Second)
}

// writeStatus prints a status for people.
func writeStatus(w io.Writer, st mountStatus) {
	what, at := "mount", st.Mnt
	if st.URL != "" {
		what, at = "server", st.URL
	}
	fmt.Fprintf(w, "cramfs %s of %s at %s: pid %d, up %s, %d threads, level %d\n",
		what, st.Src, at, st.PID, time.Since(st.Started).Round(time.Second), st.Threads, st.Level)
	cs := st.Cache
	fmt.Fprintf(w, "cache: %s of %s in %d segments (%s reserved, %s free for reuse); %d hits, %d misses, %d built, %d evictions\n",
		humanBytes(cs.Bytes), humanBytes(cs.MaxBytes), cs.Entries, humanBytes(cs.Reserved), humanBytes(cs.Free), cs.Hits, cs.Misses, cs.Adds, cs.Evictions)
	ss := st.States
	fmt.Fprintf(w, "open files: %d of %d CRAM descriptors, %s of %s of state\n",
		ss.Descriptors, ss.MaxOpen, humanBytes(ss.Bytes), humanBytes(ss.MaxBytes))
	for _, sc := range st.Scans {
		fmt.Fprintf(w, "scanning %s: %d of %d containers\n", sc.Path, sc.Done, sc.Total)
	}
	if len(st.Files) == 0 {
		fmt.Fprintln(w, "no file opened yet")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FILE\tBAM SIZE\tINDEX\tSEGMENTS\tREADS\tREAD\tSTATE")
	for _, f := range st.Files {
		state := "ok"
		if f.Error != "" {
			at := "at open"
			if f.ErrorOffset != nil {
				at = fmt.Sprintf("read at byte %d", *f.ErrorOffset)
			}
			state = fmt.Sprintf("failing: %s (%s, since %s)", f.Error, at, f.ErrorTime.Local().Format(time.DateTime))
		}
		index := strings.TrimPrefix(f.Index, ".")
		if index == "" {
			index = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", f.Path, humanBytes(f.Size), index, f.Segments, f.Reads, humanBytes(f.BytesRead), state)
	}
	tw.Flush()
}

// humanBytes formats a byte count for people: bytes, KiB, MiB or GiB.
func humanBytes(n int64) string {
	switch {
	case n < 1<<10:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
