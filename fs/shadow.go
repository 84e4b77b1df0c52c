package fs

import (
	"os"
	"path"
	"slices"
	"strings"
	"sync"
)

// Shadow is a real entry of the source named like a synthetic file of a
// CRAM beside it (a directory v.bam beside v.cram, a real x.bai beside
// x.cram): the mount shows the real entry, and not the synthetic file.
type Shadow struct {
	Dir  string // the directory, relative to the source (and mount) root: "." for the root
	Name string // the name, which the real entry keeps
	Kind string // what the real entry is: "file", "directory", "symbolic link", "FIFO", ...
	CRAM string // the CRAM in Dir whose synthetic file of that name is not shown
}

// MaxShadowed bounds the shadowed names a mount keeps and logs, so that
// memory stays bounded whatever the source holds.
const MaxShadowed = 1000

// maxNotes bounds the other things a mount says once (links it does not
// show, and why).
const maxNotes = 1000

// onceSet remembers up to max keys, so that a thing is said once per
// mount; full is set once a key did not fit.
type onceSet struct {
	mu   sync.Mutex
	keys map[string]struct{}
	max  int
	full bool
}

// add reports whether key is new, remembering it; overflow reports that
// it is the first key that did not fit.
func (s *onceSet) add(key string) (isNew, overflow bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[key]; ok {
		return false, false
	}
	if len(s.keys) >= s.max {
		overflow = !s.full
		s.full = true
		return false, overflow
	}
	if s.keys == nil {
		s.keys = map[string]struct{}{}
	}
	s.keys[key] = struct{}{}
	return true, false
}

// has reports whether key is remembered, or the set is full (nothing more
// to say).
func (s *onceSet) has(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.keys[key]
	return ok || s.full
}

// shadowList is a mount's shadowed names, in the order found.
type shadowList struct {
	seen onceSet
	mu   sync.Mutex
	list []Shadow
}

// noteShadow records and logs, once, that the real entry name of dir (of
// lstat fi) hides a synthetic file: when a CRAM of dir would give that
// name (the CRAM that would claim it when no real entry has it).
func (m *mountFS) noteShadow(dir, name string, fi os.FileInfo) {
	key := dir + "\x00" + name
	if m.shadows.seen.has(key) {
		return
	}
	cram, ok := m.claimant(dir, name)
	if !ok {
		return
	}
	isNew, overflow := m.shadows.seen.add(key)
	if overflow {
		m.log.Warn("cramfs: more real entries hide synthetic names than are kept; further ones are neither logged nor listed by `cramfs status`",
			"max", MaxShadowed)
	}
	if !isNew {
		return
	}
	s := Shadow{Dir: dir, Name: name, Kind: kindName(fi.Mode()), CRAM: cram}
	m.shadows.mu.Lock()
	m.shadows.list = append(m.shadows.list, s)
	m.shadows.mu.Unlock()
	m.log.Warn("cramfs: a real entry of the source hides the synthetic file of the same name; the real entry is shown",
		"dir", dir, "name", name, "kind", s.Kind, "cram", cram)
}

// claimant is the CRAM of dir (its name) whose synthetic file would be
// named name: the first suffix of synthetic whose CRAM is a regular file,
// or a link to one inside the source.
func (m *mountFS) claimant(dir, name string) (string, bool) {
	for _, s := range synthetic {
		base, ok := strings.CutSuffix(name, s.suffix)
		if !ok || base == "" {
			continue
		}
		fi, err := m.root.Lstat(path.Join(dir, base+".cram"))
		switch {
		case err != nil:
			continue
		case fi.Mode().IsRegular():
			return base + ".cram", true
		case fi.Mode()&os.ModeSymlink != 0:
			if _, st, err := m.resolveSource(dir, base+".cram"); err == nil && isReg(&st) {
				return base + ".cram", true
			}
		}
	}
	return "", false
}

// kindName names a file type for people.
func kindName(mode os.FileMode) string {
	switch {
	case mode.IsRegular():
		return "file"
	case mode.IsDir():
		return "directory"
	case mode&os.ModeSymlink != 0:
		return "symbolic link"
	case mode&os.ModeNamedPipe != 0:
		return "FIFO"
	case mode&os.ModeSocket != 0:
		return "socket"
	}
	return "device"
}

// noteOnce logs msg with args at warning level, once per key and mount
// (up to maxNotes keys; later ones at debug level).
func (m *mountFS) noteOnce(key, msg string, args ...any) {
	if isNew, _ := m.notes.add(key); isNew {
		m.log.Warn(msg, args...)
		return
	}
	m.log.Debug(msg, args...)
}

// Shadowed returns the real entries found so far (by listings and
// lookups) that hide a synthetic file, in the order found: at most
// MaxShadowed, and truncated set when more were found.
func (s *Server) Shadowed() (list []Shadow, truncated bool) {
	sh := &s.m.shadows
	sh.mu.Lock()
	list = slices.Clone(sh.list)
	sh.mu.Unlock()
	sh.seen.mu.Lock()
	truncated = sh.seen.full
	sh.seen.mu.Unlock()
	return list, truncated
}
