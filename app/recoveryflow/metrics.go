package recoveryflow

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	decisions *prometheus.CounterVec // by action and rule
	effects   *prometheus.CounterVec // by effect and outcome
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ripcord_recovery_decisions_total",
			Help: "Recovery decisions stored, by action (retry, rollback, skip, alert) and rule; alerts are manual_intervention_required.",
		}, []string{"action", "rule"}),
		effects: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ripcord_recovery_effects_total",
			Help: "Recovery effects carried out on GitHub, by effect (rerun, dispatch, check_run, issue) and outcome (done, skipped, refused).",
		}, []string{"effect", "outcome"}),
	}
	if reg != nil {
		reg.MustRegister(m.decisions, m.effects)
	}
	return m
}
