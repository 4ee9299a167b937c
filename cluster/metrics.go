package cluster

import "github.com/prometheus/client_golang/prometheus"

// metrics is what the agent's /metrics shows.
type metrics struct {
	registry      *prometheus.Registry
	factsSent     prometheus.Counter
	factsSpooled  prometheus.Gauge
	factsFailed   *prometheus.CounterVec
	factsSkipped  *prometheus.CounterVec
	sendErrors    prometheus.Counter
	watchRestarts *prometheus.CounterVec
	actions       *prometheus.CounterVec
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		factsSent: prometheus.NewCounter(prometheus.CounterOpts{Name: "ripcord_agent_facts_sent_total",
			Help: "Facts the server accepted."}),
		factsSpooled: prometheus.NewGauge(prometheus.GaugeOpts{Name: "ripcord_agent_facts_spooled",
			Help: "Facts on disk waiting to be delivered (the server is down, or they were just observed)."}),
		factsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ripcord_agent_facts_failed_total",
			Help: "Facts given up: rejected (the server answered 4xx), overflow (dropped, oldest first, past the spool bound), corrupt (unreadable spool file)."},
			[]string{"reason"}),
		factsSkipped: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ripcord_agent_facts_skipped_total",
			Help: "Status changes not sent: not_observed (status.observedGeneration behind metadata.generation), no_release_id, unknown_phase, " +
				"workload_ref (a Rollout's spec.workloadRef Deployment cannot be read), referenced_by_rollout (a Deployment a tracked Rollout runs the template of)."},
			[]string{"reason"}),
		sendErrors: prometheus.NewCounter(prometheus.CounterOpts{Name: "ripcord_agent_send_errors_total",
			Help: "Deliveries that failed (server unreachable, 5xx, 401/403, 429); their facts stay spooled."}),
		watchRestarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ripcord_agent_watch_restarts_total",
			Help: "Watches of tracked workloads that ended in an error and were restarted."}, []string{"resource"}),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ripcord_agent_actions_total",
			Help: "Cluster actions carried out, by kind and outcome."}, []string{"kind", "outcome"}),
	}
	m.registry.MustRegister(m.factsSent, m.factsSpooled, m.factsFailed, m.factsSkipped, m.sendErrors,
		m.watchRestarts, m.actions)
	for _, r := range []string{"rejected", "overflow", "corrupt"} {
		m.factsFailed.WithLabelValues(r)
	}
	return m
}
