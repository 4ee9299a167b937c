package cluster

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"
)

// clientGoRepeatWindow is how long a line client-go logged is not logged
// again: its informers retry a failing list every few seconds, up to a
// minute apart, and log every failure. The first is kept; a repeat after
// the window says how many were left out in between.
const clientGoRepeatWindow = 10 * time.Minute

// clientGoMaxLines bounds the lines remembered; past it they are forgotten
// (and logged again at their next repeat).
const clientGoMaxLines = 1000

// LogClientGoTo routes client-go's own log lines (klog), which it writes on
// stderr in its own format by default, into log, tagged component=client-go:
// its errors at warning level, as it retries what failed and the agent
// says itself, at error level and on /healthz, what keeps it from
// watching; its info lines at info level, and its verbose ones at debug
// level. A line repeated within clientGoRepeatWindow is left out, so a
// failing list retried with backoff makes one line, not one per retry.
// It is meant to be called once, before the agent starts.
func LogClientGoTo(log *slog.Logger) {
	h := &clientGoHandler{next: log.Handler().WithAttrs([]slog.Attr{slog.String("component", "client-go")}),
		seen: &repeats{lines: map[string]*repeat{}}}
	klog.SetSlogLogger(slog.New(h))
}

// clientGoHandler maps client-go's levels onto the agent's, and leaves
// repeats out.
type clientGoHandler struct {
	next slog.Handler
	seen *repeats
	// scope is the attributes and groups added to the handler, part of
	// what makes a line a repeat.
	scope string
}

// repeats are the lines logged lately, by their text.
type repeats struct {
	mu    sync.Mutex
	lines map[string]*repeat
}

type repeat struct {
	at      time.Time // when it was last logged
	dropped int       // repeats left out since
}

// level maps a level client-go's logger (logr) asks for: errors are
// warnings, V(0) is info, V(1) and beyond are debug.
func (h *clientGoHandler) level(l slog.Level) slog.Level {
	switch {
	case l >= slog.LevelError:
		return slog.LevelWarn
	case l >= slog.LevelInfo:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

func (h *clientGoHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, h.level(l))
}

func (h *clientGoHandler) Handle(ctx context.Context, r slog.Record) error {
	var key strings.Builder
	key.WriteString(h.scope + "|" + r.Message)
	r.Attrs(func(a slog.Attr) bool {
		key.WriteString(" " + a.String())
		return true
	})
	now := r.Time
	if now.IsZero() {
		now = time.Now()
	}
	dropped, ok := h.seen.log(key.String(), now)
	if !ok {
		return nil
	}
	out := slog.NewRecord(r.Time, h.level(r.Level), r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool { out.AddAttrs(a); return true })
	if dropped > 0 {
		out.AddAttrs(slog.Int("repeats_left_out", dropped))
	}
	return h.next.Handle(ctx, out)
}

func (h *clientGoHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	scope := h.scope
	for _, a := range attrs {
		scope += " " + a.String()
	}
	return &clientGoHandler{next: h.next.WithAttrs(attrs), seen: h.seen, scope: scope}
}

func (h *clientGoHandler) WithGroup(name string) slog.Handler {
	return &clientGoHandler{next: h.next.WithGroup(name), seen: h.seen, scope: h.scope + " " + name + "."}
}

// log reports whether line, at now, is to be logged, and how many of its
// repeats were left out before it.
func (s *repeats) log(line string, now time.Time) (dropped int, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.lines[line]
	if r != nil && now.Sub(r.at) < clientGoRepeatWindow {
		r.dropped++
		return 0, false
	}
	if r == nil {
		if len(s.lines) >= clientGoMaxLines {
			clear(s.lines)
		}
		r = &repeat{}
		s.lines[line] = r
	}
	dropped, r.at, r.dropped = r.dropped, now, 0
	return dropped, true
}
