package app

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ripcord/ripcord/internal/store"
)

// outageReminder is how often an outage that lasts is logged again.
const outageReminder = time.Minute

// dbHealth tells the log when the database becomes unavailable and when it
// is back, once each, instead of a line per request and per poll: while
// PostgreSQL is down the job queue polls five times a second per queue,
// the drain once a second, and every delivery and fact fails. An outage
// that lasts is logged again every outageReminder with the failures
// counted meanwhile. Failures during an outage are logged at debug level.
//
// What fails is what notes it (failed); what succeeds in writing notes the
// end (ok): the intake's group commit, the drain on SQLite, the fact
// commit, and /readyz (store.DB.CheckWrite: on SQLite a committed write,
// on PostgreSQL a session that takes writes and a disk with room). A round
// trip that wrote nothing, or only updated rows in place (the drain's
// rounds on PostgreSQL), notes answered: it ends an outage of a database
// that did not answer, not one of a database that refuses writes (a full
// disk, read-only), which answers reads, and updates in place, all along.
type dbHealth struct {
	log  *slog.Logger
	down atomic.Bool

	mu       sync.Mutex
	since    time.Time
	lastLine time.Time
	failures int  // since lastLine
	refusing bool // the last failure was a write refused (store.RefusesWrites)
}

func newDBHealth(log *slog.Logger) *dbHealth { return &dbHealth{log: log} }

// Down reports whether the last database operation noted failed for the
// database being unavailable.
func (h *dbHealth) Down() bool { return h != nil && h.down.Load() }

// failed notes err and reports whether it is the database being
// unavailable (store.Unavailable): the outage is logged here, and the
// caller logs nothing of its own above debug level.
func (h *dbHealth) failed(err error) bool {
	if h == nil || !store.Unavailable(err) {
		return false
	}
	h.unavailable(err)
	return true
}

func (h *dbHealth) unavailable(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	h.refusing = store.RefusesWrites(err)
	if !h.down.Load() {
		h.since, h.lastLine, h.failures = now, now, 0
		h.down.Store(true)
		h.log.Error("the database is unavailable: webhook deliveries and facts are refused with 503 (GitHub and the agents send them again), queued work waits; further failures are logged at debug level until it is back",
			"err", err)
		return
	}
	h.failures++
	if now.Sub(h.lastLine) >= outageReminder {
		h.log.Error("the database is still unavailable", "for", now.Sub(h.since).Round(time.Second),
			"failures", h.failures, "err", err)
		h.lastLine, h.failures = now, 0
	}
}

// ok notes that the database took a write.
func (h *dbHealth) ok() { h.back(true) }

// answered notes that the database answered a round trip that wrote
// nothing.
func (h *dbHealth) answered() { h.back(false) }

func (h *dbHealth) back(wrote bool) {
	if h == nil || !h.down.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.down.Load() || (h.refusing && !wrote) {
		return
	}
	h.down.Store(false)
	h.log.Info("the database is back: deliveries and facts are acknowledged again and queued work resumes",
		"down_for", time.Since(h.since).Round(time.Millisecond))
}

// outageQuietHandler is the job queue's log handler: River logs an error
// each time a poll fails (five a second per queue while PostgreSQL is
// down), as text. A warning or error that says the database is
// unavailable is noted in h and logged at debug level, as are all of
// River's warnings and errors while h says the database is down.
type outageQuietHandler struct {
	slog.Handler
	h *dbHealth
}

func (q *outageQuietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return q.Handler.Enabled(ctx, l) || l >= slog.LevelWarn
}

func (q *outageQuietHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		if !q.h.Down() {
			msg := ""
			r.Attrs(func(a slog.Attr) bool {
				if a.Key == "err" || a.Key == "error" {
					msg = a.Value.String()
					return false
				}
				return true
			})
			if store.UnavailableMessage(msg) {
				q.h.unavailable(errors.New(msg))
			}
		}
		if q.h.Down() {
			r.Level = slog.LevelDebug
		}
	}
	if !q.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return q.Handler.Handle(ctx, r)
}

func (q *outageQuietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &outageQuietHandler{Handler: q.Handler.WithAttrs(as), h: q.h}
}

func (q *outageQuietHandler) WithGroup(name string) slog.Handler {
	return &outageQuietHandler{Handler: q.Handler.WithGroup(name), h: q.h}
}
