package app

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the server's Prometheus series. Each server has its own registry
// so tests can run several servers in one process.
type metrics struct {
	registry   *prometheus.Registry
	deliveries *prometheus.CounterVec   // by event and intake outcome
	processed  *prometheus.CounterVec   // by event and processing outcome
	jobSeconds *prometheus.HistogramVec // by job kind and outcome
	batchSize  prometheus.Histogram
	commitTime prometheus.Histogram
	facts      *prometheus.CounterVec // by outcome
	alerts     *prometheus.CounterVec // by type
	cdevents   *prometheus.CounterVec // by type and outcome
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ripcord_webhook_deliveries_total",
			Help: "Webhook deliveries received, by event and outcome (accepted, duplicate, bad_signature, bad_payload, error).",
		}, []string{"event", "outcome"}),
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ripcord_deliveries_processed_total",
			Help: "Deliveries worked by the job queue, by event and outcome (processed, ignored, retried, failed).",
		}, []string{"event", "outcome"}),
		jobSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "ripcord_job_duration_seconds",
			Help:    "Time a job spent working, by kind and outcome.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"kind", "outcome"}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "ripcord_intake_commit_batch_size",
			Help:    "Deliveries written per group commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9),
		}),
	}
	m.commitTime = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "ripcord_intake_commit_seconds",
		Help:    "Time of one group commit of deliveries, fsync included.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
	})
	m.facts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ripcord_facts_total",
		Help: "Facts received, by what they did (applied, duplicate, ignored, drift, opened).",
	}, []string{"outcome"})
	m.alerts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ripcord_alerts_total",
		Help: "Alerts raised, by type (drift, stall, ...).",
	}, []string{"type"})
	m.cdevents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ripcord_cdevents_total",
		Help: "CDEvents delivered to sinks, by event type and outcome (sent, retried, rejected).",
	}, []string{"type", "outcome"})
	m.registry.MustRegister(m.deliveries, m.processed, m.jobSeconds, m.batchSize, m.commitTime, m.facts, m.alerts, m.cdevents,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}
