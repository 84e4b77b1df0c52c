package service

import (
	"context"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/cramfs/cramfs/engine/cram"
)

// Indexed is what Index did of one file.
type Indexed struct {
	// Scanned is true when the file was scanned (and its layout stored),
	// false when a valid layout was already in the cache directory.
	Scanned bool
	// Containers is the file's number of containers.
	Containers int
}

// Index scans the CRAM at path and persists its layout in the cache
// directory, as a mount's first access would, under the same memory
// bound; a layout already stored and valid is loaded, not scanned again.
// An error for a missing or mismatching reference says what to do.
func (s *Service) Index(ctx context.Context, path string) (Indexed, error) {
	src, err := cram.Open(path, cram.Path(path), s.copt)
	if err != nil {
		return Indexed{}, WithReferenceHelp(err)
	}
	defer src.Close()
	v, err := s.mgr.Open(ctx, src)
	if err != nil {
		return Indexed{}, WithReferenceHelp(err)
	}
	s.noteLayout(v.Layout())
	return Indexed{Scanned: v.Scanned(), Containers: src.NumContainers()}, nil
}

// Scan is a layout scan in progress: containers done of the file's total.
type Scan struct {
	File        string
	Done, Total int
}

// Scans returns the layout scans in progress.
func (s *Service) Scans() []Scan {
	scans := s.mgr.Scans()
	out := make([]Scan, len(scans))
	for i, sc := range scans {
		out[i] = Scan{File: sc.File, Done: sc.Done, Total: sc.Total}
	}
	return out
}

// FindCRAMs lists the regular files and links named *.cram below root
// (a user-given directory; Index refuses a link to anything not regular
// without blocking). FIFOs, sockets and devices are left out; a directory
// that cannot be read is logged to log and passed over.
func FindCRAMs(root string, log *slog.Logger) []string {
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			log.Warn("walk", "path", p, "err", err)
			return nil
		}
		if (d.Type().IsRegular() || d.Type()&fs.ModeSymlink != 0) && strings.HasSuffix(d.Name(), ".cram") {
			out = append(out, p)
		}
		return nil
	})
	return out
}
