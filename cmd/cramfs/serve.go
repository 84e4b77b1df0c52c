package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/cramfs/cramfs/internal/service"
	"github.com/cramfs/cramfs/internal/service/sdnotify"
)

// serveCmd is `cramfs serve SRC`: the same BAMs as a mount, over HTTP,
// where FUSE cannot go.
type serveCmd struct {
	ef          engineFlags
	lf          logFlags
	listen      string
	tokenFile   string
	noAuth      bool
	tlsCert     string
	tlsKey      string
	maxRequests int
}

// defaultListen is where cramfs serve listens unless told otherwise:
// loopback only.
const defaultListen = "127.0.0.1:8157"

func (c *serveCmd) flags(fs *pflag.FlagSet) {
	c.ef.register(fs)
	fs.StringVar(&c.listen, "listen", defaultListen, "listen on `HOST:PORT` (another than loopback needs --token-file or --no-auth)")
	fs.StringVar(&c.tokenFile, "token-file", "", "clients must send the token in `FILE` (its first line) as Authorization: Bearer TOKEN")
	fs.BoolVar(&c.noAuth, "no-auth", false, "serve clients without a token on an address other than loopback")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "serve HTTPS with the PEM certificate `FILE` (with --tls-key)")
	fs.StringVar(&c.tlsKey, "tls-key", "", "the PEM private key `FILE` of --tls-cert")
	fs.IntVar(&c.maxRequests, "max-requests", 64, "serve at most `N` requests at once; more wait")
	c.lf.register(fs)
}

func (c *serveCmd) run(pos []string, e *env) error {
	if len(pos) != 1 {
		return usageError{fmt.Sprintf("want SRC, got %d arguments", len(pos))}
	}
	sigs := catchHangups()
	defer sigs.release()
	plog, opts, err := openService(&c.lf, &c.ef, e.stderr)
	if err != nil {
		return err
	}
	defer plog.close()
	log := plog.log
	so := service.ServeOptions{Listen: c.listen, NoAuth: c.noAuth, TLSCert: c.tlsCert, TLSKey: c.tlsKey, MaxRequests: c.maxRequests}
	if c.tokenFile != "" {
		if so.Token, err = readToken(c.tokenFile); err != nil {
			return err
		}
	}
	svc, err := service.Open(opts)
	if err != nil {
		return err
	}
	defer svc.Close()
	sigs.catchStop()
	srv, err := svc.Serve(pos[0], so)
	if err != nil {
		return err
	}
	scheme := "http"
	if c.tlsCert != "" {
		scheme = "https"
	}
	log.Info("serving", "src", absPath(pos[0]), "url", scheme+"://"+srv.Addr().String()+"/", "auth", so.Token != "", "threads", opts.Threads, "cache_size", c.ef.cacheSize)
	notify(log, sdnotify.Ready)

	sig := sigs.wait(plog, srv.Done())
	if sig == nil {
		return fmt.Errorf("serving %s stopped", pos[0])
	}
	notify(log, sdnotify.Stopping)
	log.Info("signal received, stopping", "signal", sig.String())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(ctx)
}

// readToken reads the token of a token file: its first line, without
// the line end; an empty token is refused.
func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	tok, _, _ := strings.Cut(string(b), "\n")
	tok = strings.TrimSuffix(tok, "\r")
	if tok == "" {
		return "", usageError{fmt.Sprintf("--token-file %s: the first line is empty", path)}
	}
	return tok, nil
}
