package service

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/cramfs/cramfs/engine"
	cfs "github.com/cramfs/cramfs/fs"
	"github.com/cramfs/cramfs/internal/web"
)

// ServeOptions configure the HTTP front end of a Service (cramfs serve).
type ServeOptions struct {
	// Listen is the address to listen on, host:port (port 0: any free).
	Listen string
	// Token, when not empty, is the bearer token clients must send.
	Token string
	// NoAuth allows listening on an address other than loopback without
	// a Token: every client that reaches it reads every file.
	NoAuth bool
	// TLSCert and TLSKey, both or neither, are PEM files: HTTPS.
	TLSCert, TLSKey string
	// MaxRequests bounds the requests served at once (0: the default).
	MaxRequests int
}

// Timeouts against slow clients: a request's headers must arrive within
// headerTimeout, and an idle keep-alive connection is closed after
// idleTimeout. A response is not bounded in time (a whole BAM streams for
// as long as it takes); the number of requests served at once is.
const (
	headerTimeout = 10 * time.Second
	idleTimeout   = 2 * time.Minute
)

// HTTPServer is a running HTTP front end of a source tree.
type HTTPServer struct {
	// Constant.
	srv  *http.Server
	ln   net.Listener
	tree *cfs.Tree
	op   *opener
	done chan struct{} // closed once it stopped serving and released all
	err  error         // of Serve, once done
}

// Serve serves the tree src over HTTP on o.Listen and returns once it
// listens. Listening on an address other than loopback needs a Token, or
// NoAuth said.
func (s *Service) Serve(src string, o ServeOptions) (*HTTPServer, error) {
	if err := checkListen(o); err != nil {
		return nil, err
	}
	op := newOpener(s.mgr, s.refs, s.copt, s.log)
	op.reports = newFileReports(s.log, absolute(src))
	op.onOpen = s.noteLayout
	tree, err := cfs.OpenTree(src, op, s.log)
	if err != nil {
		op.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		tree.Close()
		op.Close()
		return nil, fmt.Errorf("listening on %s: %w", o.Listen, err)
	}
	scheme := "http"
	if o.TLSCert != "" {
		scheme = "https"
	}
	status := &serverStatus{
		base: mountStatus{Src: absolute(src), URL: scheme + "://" + ln.Addr().String() + "/", PID: os.Getpid(), Started: time.Now(),
			Threads: s.mgr.Options().Threads, Level: s.opts.Level, CacheSize: s.mgr.Options().CacheSize},
		mgr: s.mgr, reports: op.reports}
	srv := &http.Server{
		Handler:           web.New(tree, web.Options{Token: o.Token, MaxRequests: o.MaxRequests, Log: s.log, Status: status}),
		ReadHeaderTimeout: headerTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
	if o.TLSCert != "" {
		cert, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
		if err != nil {
			ln.Close()
			tree.Close()
			op.Close()
			return nil, &OptionError{"TLSCert", err.Error()}
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	h := &HTTPServer{srv: srv, ln: ln, tree: tree, op: op, done: make(chan struct{})}
	go h.serve()
	return h, nil
}

// serverStatus is what cramfs status URL reports of a server.
type serverStatus struct {
	base    mountStatus // constant fields
	mgr     *engine.Manager
	reports *fileReports
}

// Status implements web.StatusSource.
func (s *serverStatus) Status() any { return statusNow(s.base, s.mgr, s.reports, nil) }

// checkListen refuses an address other than loopback without a token,
// unless NoAuth says so, and a certificate without its key.
func checkListen(o ServeOptions) error {
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return &OptionError{"TLSCert", "a certificate needs its key, and a key its certificate"}
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return &OptionError{"Listen", fmt.Sprintf("%q: want HOST:PORT", o.Listen)}
	}
	if o.Token != "" || o.NoAuth {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return &OptionError{"Listen", fmt.Sprintf("%s is not a loopback address: give a token file, or say --no-auth to let every client that reaches it read every file", o.Listen)}
}

func (h *HTTPServer) serve() {
	err := h.srv.Serve(h.ln)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	h.err = err
	h.tree.Close()
	h.op.Close()
	close(h.done)
}

// Addr is the address the server listens on.
func (h *HTTPServer) Addr() net.Addr { return h.ln.Addr() }

// Done is closed once the server stopped and released what it held.
func (h *HTTPServer) Done() <-chan struct{} { return h.done }

// Shutdown stops listening, lets the requests in flight end (until ctx
// ends), and waits for Done.
func (h *HTTPServer) Shutdown(ctx context.Context) error {
	err := h.srv.Shutdown(ctx)
	if err != nil {
		h.srv.Close()
	}
	<-h.done
	if err == nil {
		err = h.err
	}
	return err
}
