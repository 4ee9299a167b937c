package app

import (
	"context"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ripcord/ripcord/internal/store"
)

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// readyz is ready when the database answers, takes writes (a SQLite file
// that can be written, a PostgreSQL that is no standby nor read-only: see
// store.DB.CheckWrite) and every migration is applied. Its answer is
// public and says what is wrong in a few words: the database's own error
// names PostgreSQL's user, database and host, so it goes to the log, once
// per outage.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if err := s.db.Ping(ctx); err != nil {
		s.notReady(w, "database unreachable", err)
		return
	}
	if err := s.db.CheckWrite(ctx); err != nil {
		reason := "database cannot be written"
		if why := writeRefusal(err); why != "" {
			reason += ": " + why
		}
		s.notReady(w, reason, err)
		return
	}
	s.health.ok()
	pending, err := s.db.Pending(ctx)
	if err != nil {
		s.notReady(w, "migration state unreadable", err)
		return
	}
	if pending {
		s.notReady(w, "migrations pending: run ripcord migrate", nil)
		return
	}
	s.notReadyLog.ready(s.log)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ready\n"))
}

// notReady answers 503 with reason. An error that is the database being
// unavailable is logged by the server's outage log (dbhealth.go); any
// other is logged here, once while /readyz keeps failing for that reason.
func (s *Server) notReady(w http.ResponseWriter, reason string, err error) {
	if !s.health.failed(err) {
		s.notReadyLog.failed(s.log, reason, err)
	}
	http.Error(w, reason, http.StatusServiceUnavailable)
}

// writeRefusal says in a few words why the database refused CheckWrite's
// write, or "" when that is not known.
func writeRefusal(err error) string {
	if errors.Is(err, store.ErrReadOnly) {
		// ripcord's own words, which name no user, database or host.
		return "it is read-only: " + strings.TrimPrefix(err.Error(), store.ErrReadOnly.Error()+": ")
	}
	msg := strings.ToLower(err.Error())
	has := func(texts ...string) bool {
		return slices.ContainsFunc(texts, func(t string) bool { return strings.Contains(msg, t) })
	}
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT),
		has("(sqlstate 53100)", "disk is full", "no space left on device", "disk quota exceeded"):
		return "its disk is full"
	case errors.Is(err, syscall.EFBIG), has("file too large"):
		return "its file cannot grow (a file size limit)"
	case errors.Is(err, syscall.EROFS), has("(sqlstate 25006)", "readonly database", "read-only file system"):
		return "it is read-only"
	}
	return ""
}

// readyzLog logs why /readyz fails, once while it fails for one reason,
// and when it is ready again.
type readyzLog struct {
	mu      sync.Mutex
	failing string // the reason /readyz answers now; "" when ready
}

func (l *readyzLog) failed(log *slog.Logger, reason string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failing == reason {
		return
	}
	l.failing = reason
	if err == nil {
		log.Warn("/readyz answers 503: " + reason)
		return
	}
	log.Warn("/readyz answers 503: "+reason, "err", err)
}

func (l *readyzLog) ready(log *slog.Logger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failing != "" {
		log.Info("/readyz answers ready again", "after", l.failing)
		l.failing = ""
	}
}

func (s *Server) metricsHandler() http.Handler {
	queueDepth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "ripcord_queue_depth",
		Help: "Jobs waiting in the queue (available, scheduled or retryable).",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		var n int64
		if err := s.db.Read.QueryRowContext(ctx, `SELECT COUNT(*) FROM river_job WHERE state IN ('available', 'scheduled', 'retryable')`).Scan(&n); err != nil {
			return -1
		}
		return float64(n)
	})
	s.metrics.registry.MustRegister(queueDepth)
	return promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{})
}

var homePage = template.Must(template.New("home").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>ripcord</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem}code{background:#f3f3f3;padding:0 .25rem}</style>
</head><body>
<h1>ripcord</h1>
{{if .Configured}}
<p>The GitHub App is configured (App id {{.AppID}}). Webhooks are received at <code>{{.Hook}}</code>.</p>
{{else}}
<p><strong>Set-up is not finished:</strong> ripcord has no GitHub App yet, so it cannot act on GitHub.</p>
<p>Register the App on GitHub from the set-up page: it takes a minute and needs no restart. Open it with the link ripcord's start-up log gives
(the line <q>the GitHub App is not configured</q>: <code>…/setup?token=…</code>); the page asks for that set-up token, so only who can read the log registers the App.</p>
<p>Or create one by hand (webhook URL <code>{{.Hook}}</code>) and start ripcord with <code>RIPCORD_GITHUB_APP_ID</code>,
<code>RIPCORD_GITHUB_PRIVATE_KEY</code> (PEM text or a file path) and <code>RIPCORD_GITHUB_WEBHOOK_SECRET</code>.</p>
{{end}}
<p>Operators: <a href="/healthz">/healthz</a> · <a href="/readyz">/readyz</a> · <a href="/metrics">/metrics</a> · API under <code>/api/v1</code> (bearer token).</p>
</body></html>
`))

func (s *Server) home(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	app := s.appIdentity()
	_ = homePage.Execute(w, map[string]any{
		"Configured": app.Configured,
		"AppID":      app.ID,
		"Hook":       s.cfg.PublicURL + "/api/github/hook",
	})
}
