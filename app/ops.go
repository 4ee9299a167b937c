package app

import (
	"context"
	"html/template"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ok\n"))
}

// readyz is ready when the database answers, takes writes (a SQLite file
// that can be written, a PostgreSQL that is no standby nor read-only: see
// store.DB.CheckWrite) and every migration is applied.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if err := s.db.Ping(ctx); err != nil {
		s.health.failed(err)
		http.Error(w, "database unreachable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if err := s.db.CheckWrite(ctx); err != nil {
		s.health.failed(err)
		http.Error(w, "database cannot be written: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	s.health.ok()
	pending, err := s.db.Pending(ctx)
	if err != nil {
		http.Error(w, "cannot read migration state: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if pending {
		http.Error(w, "migrations pending: run ripcord migrate", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte("ready\n"))
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
<p><a href="/setup">Register the App on GitHub</a> from the set-up page: it takes a minute and needs no restart.</p>
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
