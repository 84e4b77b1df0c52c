package logging

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// Repeats of one failure (a warning or error with the same message about
// the same file) within Window of its last line are not written; the next
// line written for it, after the window, says how many were left out
// (repeated=N). At most MaxKeys failures are remembered, the least
// recently seen forgotten first, so memory stays bounded whatever the
// number of files failing.
const (
	Window  = time.Minute
	MaxKeys = 1024
)

// Limit wraps h so that repeated failures of one file are said once per
// Window, then counted. Records below warning level, and those without a
// "file" attribute, all pass.
func Limit(h slog.Handler) slog.Handler {
	keys, _ := simplelru.NewLRU[limitKey, *limitEntry](MaxKeys, nil) // fails only for a size <= 0
	return &limitHandler{next: h, state: &limitState{keys: keys, now: time.Now}}
}

// limitKey is one failure: a message about a file.
type limitKey struct{ msg, file string }

// limitEntry is what is known of one failure.
type limitEntry struct {
	last    time.Time // when its last line was written
	skipped int       // repeats left out since
}

// limitState is shared by a handler and those WithAttrs and WithGroup
// make of it.
type limitState struct {
	now func() time.Time // constant; tests replace it

	mu   sync.Mutex // guards keys
	keys *simplelru.LRU[limitKey, *limitEntry]
}

type limitHandler struct {
	next  slog.Handler
	state *limitState
	file  string // a "file" attribute added by WithAttrs
}

func (h *limitHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h *limitHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		return h.next.Handle(ctx, r)
	}
	file := h.file
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "file" {
			file = a.Value.String()
			return false
		}
		return true
	})
	if file == "" {
		return h.next.Handle(ctx, r)
	}
	skipped, ok := h.state.admit(limitKey{r.Message, file})
	if !ok {
		return nil
	}
	if skipped > 0 {
		r = r.Clone()
		r.AddAttrs(slog.Int("repeated", skipped))
	}
	return h.next.Handle(ctx, r)
}

// admit reports whether a line for k is written now, and how many were
// left out before it.
func (s *limitState) admit(k limitKey) (int, bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.keys.Get(k)
	if !ok {
		s.keys.Add(k, &limitEntry{last: now})
		return 0, true
	}
	if now.Sub(e.last) < Window {
		e.skipped++
		return 0, false
	}
	skipped := e.skipped
	e.last, e.skipped = now, 0
	return skipped, true
}

func (h *limitHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	for _, a := range attrs {
		if a.Key == "file" {
			c.file = a.Value.String()
		}
	}
	c.next = h.next.WithAttrs(attrs)
	return &c
}

func (h *limitHandler) WithGroup(name string) slog.Handler {
	c := *h
	c.next = h.next.WithGroup(name)
	return &c
}
