package rolloutflow

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/ripcord/ripcord/rollout"
	"github.com/ripcord/ripcord/rollout/health"
)

// Scope is what one reading looks at: a pass of a stage, or the hosts of a
// batch for a batch gate, which reads probes only (seed 001: metrics and
// alerts describe the whole pass and stay at the stage's gate).
type Scope struct {
	health.Scope
	ProbesOnly bool
}

// gateReader takes readings for the executor; tests may read elsewhere.
type gateReader interface {
	read(ctx context.Context, snap Snapshot, s Scope, at time.Time) health.Reading
}

// serverGate reads the gate from the server: probes with from: server,
// Prometheus metrics (no data is red) and Alertmanager alerts, through
// rollout/health. Probes with from: runners are the runners' (probes.go).
type serverGate struct {
	client *http.Client
	log    *slog.Logger
}

func (g serverGate) read(ctx context.Context, snap Snapshot, s Scope, at time.Time) health.Reading {
	h := snap.Plan.Health
	if h != nil && s.ProbesOnly {
		probes := *h
		probes.Metrics, probes.Alerts = nil, nil
		h = &probes
	}
	r := health.Reader{HTTP: g.client, PrometheusURL: snap.Settings.PrometheusURL,
		AlertmanagerURL: snap.Settings.AlertmanagerURL, Health: h, Log: g.log}
	return r.Read(ctx, s.Scope, at)
}

func hasRunnerProbes(h *rollout.Health) bool {
	if h == nil {
		return false
	}
	for _, p := range h.Probes {
		if p.From == rollout.FromRunners {
			return true
		}
	}
	return false
}

// hasProbes reports whether a batch gate has anything to read.
func hasProbes(h *rollout.Health) bool { return h != nil && len(h.Probes) > 0 }
