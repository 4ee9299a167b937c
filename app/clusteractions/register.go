package clusteractions

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
)

// Register adds the agent's endpoints, guarded by auth (the cluster-token
// rule, app.ClusterTokenCheck), and the worker of the expiry sweep, whose
// periodic job is SweepJob. Cluster actions react to no webhook.
func Register(d pipeline.Deps, auth TokenCheck) []pipeline.EventHandler {
	s := &actionStore{db: d.DB, records: d.Records, river: d.River, log: d.Log, started: d.Now()}
	river.AddWorker(d.Workers, &expirySweepWorker{store: s, now: d.Now})
	a := &api{store: s, auth: auth, now: d.Now, log: d.Log, stopping: d.Stopping,
		results: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "ripcord_cluster_actions_finished_total",
			Help: "Results agents reported for cluster actions, by outcome; not_started gives the action back, and its next result is counted again."}, []string{"outcome"})}
	if d.Registerer != nil {
		d.Registerer.MustRegister(a.results)
	}
	d.Mux.HandleFunc("GET /api/v1/clusters/{cluster}/actions", a.list)
	d.Mux.HandleFunc("POST /api/v1/clusters/{cluster}/actions/{id}", a.report)
	return nil
}
