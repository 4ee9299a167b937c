package deployments

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
)

// Register adds the deployment sync worker and GET
// /api/v1/releases/{id}/deployment. Record changes reach the worker through
// Queue, which the code that opens releases and applies facts calls in its
// transaction.
func Register(d pipeline.Deps) []pipeline.EventHandler {
	river.AddWorker(d.Workers, newWorker(d))
	d.Mux.Handle("GET /api/v1/releases/{id}/deployment", d.APIAuth(apiHandler{d: d}.ServeHTTP))
	return nil
}

func newWorker(d pipeline.Deps) *syncWorker {
	return &syncWorker{d: d, written: newStatusCounter(d.Registerer), api: func(inst int64) (deploymentsAPI, error) {
		gh, err := d.GitHub.NewInstallationClient(inst)
		if err != nil {
			return nil, err
		}
		return gh.Repositories, nil
	}}
}

// statusCounter counts the deployment statuses written, by state.
type statusCounter struct{ c *prometheus.CounterVec }

func newStatusCounter(reg prometheus.Registerer) *statusCounter {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ripcord_deployment_statuses_total",
		Help: "GitHub deployment statuses written, by state.",
	}, []string{"state"})
	if reg != nil {
		reg.MustRegister(c)
	}
	return &statusCounter{c: c}
}

func (s *statusCounter) inc(st Status) { s.c.WithLabelValues(string(st)).Inc() }
