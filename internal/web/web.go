// Package web is cramfs' HTTP front end: it serves a source tree as the
// mount shows it (fs.Tree), x.cram as x.bam with its index, to clients
// that read BAM over HTTP with range requests (htslib, htsjdk, IGV,
// @gmod/bam). GET and HEAD only; exact Content-Length, single and multiple
// ranges, an ETag naming the CRAM's version with Last-Modified, and
// If-Range, If-None-Match and If-Modified-Since, as net/http's
// ServeContent does them; a directory answers with a listing (JSON, or
// HTML for a browser); a symbolic link with a redirect to its target.
// Every response reads one version of a file. /reads/{id} is the GA4GH
// htsget reads endpoint (htsget.go); a top directory named reads of the
// tree is therefore served under /reads/ only through htsget ids.
package web

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"syscall"
	"time"

	cfs "github.com/cramfs/cramfs/fs"
)

// Options configure a Handler.
type Options struct {
	// Token, when not empty, is what clients must send as
	// "Authorization: Bearer TOKEN"; others get 401.
	Token string
	// MaxRequests bounds the requests served at once; more wait for one
	// to end (0: 64).
	MaxRequests int
	// Log receives one access line per request and the failures.
	Log *slog.Logger
	// Status, when set, answers GET /.cramfs/status (cramfs status URL):
	// what the server serves, as JSON.
	Status StatusSource
}

// StatusSource gives a server's status (JSON-encodable).
type StatusSource interface {
	Status() any
}

// StatusPath is the path of a server's status.
const StatusPath = "/.cramfs/status"

// DefaultMaxRequests is the bound on requests served at once when
// Options.MaxRequests is 0.
const DefaultMaxRequests = 64

// Handler serves a tree over HTTP. It is safe for concurrent use.
type Handler struct {
	// Dependencies.
	tree *cfs.Tree
	log  *slog.Logger
	// Constant.
	token  []byte
	slots  chan struct{} // one per request in flight
	status StatusSource  // nil: none
}

// New returns the handler of tree.
func New(tree *cfs.Tree, opts Options) *Handler {
	n := opts.MaxRequests
	if n <= 0 {
		n = DefaultMaxRequests
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Handler{tree: tree, log: log, token: []byte(opts.Token), slots: make(chan struct{}, n), status: opts.Status}
}

// statusWriter remembers the status and bytes of a response, for the
// access log.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := time.Now()
	w := &statusWriter{ResponseWriter: rw}
	defer func() {
		h.log.Info("http", "method", r.Method, "path", r.URL.Path, "range", r.Header.Get("Range"),
			"status", w.status, "bytes", w.bytes, "ms", time.Since(start).Milliseconds(), "remote", r.RemoteAddr)
	}()
	if !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="cramfs"`)
		http.Error(w, "401 unauthorized: send Authorization: Bearer TOKEN", http.StatusUnauthorized)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "405 method not allowed: cramfs serves GET and HEAD only", http.StatusMethodNotAllowed)
		return
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	case <-r.Context().Done():
		return
	}
	if r.URL.Path == StatusPath && h.status != nil {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(h.status.Status())
		return
	}
	p, ok := cleanPath(r.URL.Path)
	if !ok {
		http.Error(w, "400 bad request: a path with . or .. components, or a NUL", http.StatusBadRequest)
		return
	}
	if id, ok := strings.CutPrefix(p, "reads/"); ok && id != "" {
		h.serveHtsget(w, r, id)
		return
	}
	h.serve(w, r, p)
}

// authorized compares the request's bearer token with the handler's in
// constant time; every request is authorized without one.
func (h *Handler) authorized(r *http.Request) bool {
	if len(h.token) == 0 {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), h.token) == 1
}

// cleanPath is the tree path of a URL path: no ".", ".." or empty
// components (but a trailing slash), no NUL.
func cleanPath(p string) (string, bool) {
	p = strings.TrimPrefix(p, "/")
	if strings.ContainsRune(p, 0) {
		return "", false
	}
	parts := strings.Split(strings.TrimSuffix(p, "/"), "/")
	for i, c := range parts {
		if c == "." || c == ".." || (c == "" && !(i == 0 && len(parts) == 1)) {
			return "", false
		}
	}
	if p == "" {
		return ".", true
	}
	return strings.TrimSuffix(p, "/"), true
}

// serve answers for the tree path p.
func (h *Handler) serve(w http.ResponseWriter, r *http.Request, p string) {
	ctx := r.Context()
	e, err := h.tree.Lookup(ctx, p)
	if err != nil {
		h.fail(w, r, p, err)
		return
	}
	switch e.Kind {
	case cfs.KindLink:
		http.Redirect(w, r, "/"+(&url.URL{Path: e.Target}).EscapedPath(), http.StatusFound)
	case cfs.KindDir:
		h.serveDir(w, r, e)
	case cfs.KindFile:
		f, err := h.tree.OpenFile(e)
		if err != nil {
			h.fail(w, r, p, err)
			return
		}
		defer f.Close()
		setVersion(w, e.Stat, "")
		http.ServeContent(w, r, "", mtime(e.Stat), f)
	case cfs.KindBAM, cfs.KindIndex:
		h.serveBAM(ctx, w, r, e)
	}
}

// serveBAM answers with the BAM, or its index, of one version of a CRAM.
func (h *Handler) serveBAM(ctx context.Context, w http.ResponseWriter, r *http.Request, e cfs.Entry) {
	f, e, err := h.tree.OpenBAM(ctx, e)
	if err != nil {
		h.fail(w, r, e.Path, err)
		return
	}
	var content io.ReadSeeker
	kind := "bam"
	if e.Kind == cfs.KindIndex {
		content, kind = bytes.NewReader(f.Index()), strings.TrimPrefix(e.IndexExt, ".")
	} else {
		content = io.NewSectionReader(readerAt{ctx, f}, 0, f.Size())
	}
	setVersion(w, e.Stat, kind)
	w.Header().Set("Content-Type", "application/octet-stream")
	http.ServeContent(w, r, "", mtime(e.Stat), content)
}

// readerAt reads f in the context of one request: a client gone ends the
// reads of its response.
type readerAt struct {
	ctx context.Context
	f   cfs.BAMFile
}

// contextReaderAt is implemented by BAMFiles whose reads can be ended with
// their request (engine.VirtualBAM).
type contextReaderAt interface {
	ReadAtContext(ctx context.Context, p []byte, off int64) (int, error)
}

func (r readerAt) ReadAt(p []byte, off int64) (int, error) {
	if c, ok := r.f.(contextReaderAt); ok {
		return c.ReadAtContext(r.ctx, p, off)
	}
	return r.f.ReadAt(p, off)
}

// setVersion sets the ETag of the file version st (its device, inode,
// size, mtime and ctime, and what of it is served) and Last-Modified.
func setVersion(w http.ResponseWriter, st syscall.Stat_t, what string) {
	var b [40]byte
	binary.LittleEndian.PutUint64(b[0:], uint64(st.Dev))
	binary.LittleEndian.PutUint64(b[8:], st.Ino)
	binary.LittleEndian.PutUint64(b[16:], uint64(st.Size))
	binary.LittleEndian.PutUint64(b[24:], uint64(st.Mtim.Nano()))
	binary.LittleEndian.PutUint64(b[32:], uint64(st.Ctim.Nano()))
	sum := sha256.Sum256(append(b[:], what...))
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:12])+`"`)
	w.Header().Set("Accept-Ranges", "bytes")
}

func mtime(st syscall.Stat_t) time.Time { return time.Unix(st.Mtim.Sec, st.Mtim.Nsec) }

// listing is a directory's JSON answer.
type listing struct {
	Path    string         `json:"path"`
	Entries []listingEntry `json:"entries"`
}

type listingEntry struct {
	Name string `json:"name"`
	Type string `json:"type"` // directory, file, bam, index, link
}

var kindNames = map[cfs.EntryKind]string{cfs.KindDir: "directory", cfs.KindFile: "file", cfs.KindBAM: "bam", cfs.KindIndex: "index", cfs.KindLink: "link"}

var listingPage = template.Must(template.New("dir").Parse(`<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>cramfs: /{{.Path}}</title></head>
<body><h1>/{{.Path}}</h1><ul>
{{range .Entries}}<li><a href="{{.Href}}">{{.Name}}</a> ({{.Type}})</li>
{{end}}</ul></body></html>
`))

// serveDir answers with the listing of directory e: HTML for a client
// that asks for it first (a browser), JSON otherwise.
func (h *Handler) serveDir(w http.ResponseWriter, r *http.Request, e cfs.Entry) {
	list, err := h.tree.List(r.Context(), e)
	if err != nil {
		h.fail(w, r, e.Path, err)
		return
	}
	dir := e.Path
	if dir == "." {
		dir = ""
	}
	out := listing{Path: dir, Entries: make([]listingEntry, len(list))}
	for i, d := range list {
		out.Entries[i] = listingEntry{Name: d.Name, Type: kindNames[d.Kind]}
		if d.Kind == cfs.KindDir {
			out.Entries[i].Name += "/"
		}
	}
	if wantsHTML(r) {
		type row struct{ Name, Href, Type string }
		rows := make([]row, len(out.Entries))
		for i, le := range out.Entries {
			rows[i] = row{le.Name, "/" + (&url.URL{Path: path.Join(dir, le.Name)}).EscapedPath(), le.Type}
			if strings.HasSuffix(le.Name, "/") {
				rows[i].Href += "/"
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.Method == http.MethodHead {
			return
		}
		listingPage.Execute(w, struct {
			Path    string
			Entries []row
		}{dir, rows})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.Method == http.MethodHead {
		return
	}
	json.NewEncoder(w).Encode(out)
}

// wantsHTML reports whether the client lists text/html before JSON in
// its Accept header, as browsers do.
func wantsHTML(r *http.Request) bool {
	a := r.Header.Get("Accept")
	h, j := strings.Index(a, "text/html"), strings.Index(a, "application/json")
	return h >= 0 && (j < 0 || h < j)
}

// fail answers with the status of err: 404 for a name that does not
// exist or is not shown, 403 for one that cannot be read, 409 for a CRAM
// that kept changing, 500 (with one log line naming the file) for the
// rest, a broken CRAM among them.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, p string, err error) {
	if errors.Is(err, context.Canceled) {
		return
	}
	code := http.StatusInternalServerError
	switch cfs.ToErrno(err) {
	case syscall.ENOENT, syscall.ENOTDIR:
		code = http.StatusNotFound
	case syscall.EACCES, syscall.EPERM:
		code = http.StatusForbidden
	case syscall.ESTALE:
		code = http.StatusConflict
	}
	if code == http.StatusInternalServerError {
		h.log.Warn("http request failed", "file", p, "method", r.Method, "range", r.Header.Get("Range"), "err", err)
	}
	http.Error(w, fmt.Sprintf("%d %s: /%s", code, http.StatusText(code), p), code)
}
