package main

import (
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cramfs/cramfs/internal/service"
)

// statusCmd is `cramfs status MNT`.
type statusCmd struct {
	cacheDir  string
	tokenFile string
	json      bool
}

func (c *statusCmd) flags(fs *pflag.FlagSet) {
	fs.StringVar(&c.cacheDir, "cache-dir", "", "the mount's --cache-dir `DIR`, where its status socket is when XDG_RUNTIME_DIR is not set (default: where the mount says, else $XDG_CACHE_HOME/cramfs)")
	fs.StringVar(&c.tokenFile, "token-file", "", "for a server (MNT an http:// or https:// URL), the token `FILE` it was started with")
	fs.BoolVar(&c.json, "json", false, "print the status as JSON")
}

func (c *statusCmd) run(pos []string, e *env) error {
	if len(pos) != 1 {
		return usageError{fmt.Sprintf("want one mount point, got %d arguments", len(pos))}
	}
	var raw []byte
	var err error
	if strings.HasPrefix(pos[0], "http://") || strings.HasPrefix(pos[0], "https://") {
		token := ""
		if c.tokenFile != "" {
			if token, err = readToken(c.tokenFile); err != nil {
				return err
			}
		}
		raw, err = service.QueryServerStatus(pos[0], token)
	} else {
		raw, err = service.QueryStatus(pos[0], c.cacheDir)
	}
	if err != nil {
		return err
	}
	if c.json {
		_, err := e.stdout.Write(raw)
		return err
	}
	return service.WriteStatus(e.stdout, pos[0], raw)
}
