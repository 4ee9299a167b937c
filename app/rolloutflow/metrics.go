package rolloutflow

import (
	"errors"

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
