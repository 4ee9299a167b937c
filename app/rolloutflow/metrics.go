package rolloutflow

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the rollout's series on /metrics.
type metrics struct {
	passes *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{passes: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ripcord_rollout_passes_total",
		Help: "Passes of rollouts that concluded, by outcome (succeeded, failed, rolled-back).",
	}, []string{"application", "environment", "region", "az", "outcome"})}
	if reg != nil {
		if err := reg.Register(m.passes); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				m.passes = are.ExistingCollector.(*prometheus.CounterVec)
			}
		}
	}
	return m
}

// count adds the passes that concluded in evs.
func (m *metrics) count(r *Rollout, evs []Event) {
	for _, e := range evs {
		if e.Pass != nil {
			m.passes.WithLabelValues(r.App, r.Environment, e.Pass.Region, e.Pass.AZ, e.Outcome).Inc()
		}
	}
}

// unfinished is ripcord_rollouts_unfinished{app, environment, status}: the
// rollouts that have not ended, read from the database at each scrape, so
// every replica reports the same. status is the rollout's: paused-queue
// counts the rollouts waiting behind another (an alert on it lasting
// hours finds a queue stuck behind a forgotten approval), paused-hold
// those held after a failure ahead of them, failed those still rolling
// back.
type unfinished struct {
	db   *sql.DB
	desc *prometheus.Desc
}

// registerUnfinished adds the collector to reg; one registered before is
// kept.
func registerUnfinished(reg prometheus.Registerer, db *sql.DB) error {
	if reg == nil {
		return nil
	}
	c := unfinished{db: db, desc: prometheus.NewDesc("ripcord_rollouts_unfinished",
		"Rollouts that have not ended, by app, environment and rollout status (paused-queue: waiting behind an older rollout; paused-hold: held after one failed ahead of it).",
		[]string{"app", "environment", "status"}, nil)}
	var are prometheus.AlreadyRegisteredError
	if err := reg.Register(c); err != nil && !errors.As(err, &are) {
		return err
	}
	return nil
}

func (c unfinished) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect reports nothing when the database does not answer: an invalid
// metric would fail the whole scrape, and /metrics matters most then
// (ripcord_queue_depth is -1 meanwhile).
func (c unfinished) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// 'done' is a literal: the index of the rollouts not done matches.
	rows, err := c.db.QueryContext(ctx, `SELECT app, environment, status, COUNT(*) FROM rollouts
		WHERE phase <> 'done' GROUP BY app, environment, status`)
	if err != nil {
		return
	}
	defer rows.Close()
	var out []prometheus.Metric
	for rows.Next() {
		var app, env, status string
		var n float64
		if err := rows.Scan(&app, &env, &status, &n); err != nil {
			return
		}
		out = append(out, prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, n, app, env, status))
	}
	if rows.Err() != nil {
		return
	}
	for _, m := range out {
		ch <- m
	}
}
