package rolloutflow

import (
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/outbound"
)

// Register adds the rollout workers (start, merge, tick, check run, the
// healthy report of a rollout that succeeded), the
// /api/v1/rollouts routes, and returns the handlers: workflow_run follows
// dispatched batches, check_run takes the Approve button, pull_request
// starts the rollouts of merged release pull requests.
// The /ripcord approve command is ApproveCommand (for commands.Register).
func Register(d pipeline.Deps) []pipeline.EventHandler {
	x := newExecutor(d)
	loader := configload.NewLoaderFor(d)
	river.AddWorker(d.Workers, &startWorker{x: x, loader: loader})
	river.AddWorker(d.Workers, &tickWorker{x: x})
	river.AddWorker(d.Workers, &checkWorker{x: x})
	river.AddWorker(d.Workers, &mergeWorker{x: x, loader: loader})
	river.AddWorker(d.Workers, &healthyWorker{x: x})
	api{x: x, loader: loader}.routes(d)
	if err := registerUnfinished(d.Registerer, d.DB.Read); err != nil {
		d.Log.Warn("ripcord_rollouts_unfinished is not on /metrics", "err", err)
	}
	return []pipeline.EventHandler{runHandler{x: x}, buttonHandler{x: x}, mergeHandler{x: x}, uninstallHandler{x: x},
		unsuspendHandler{x: x}}
}

func newExecutor(d pipeline.Deps) *executor {
	// The gate's URLs are the repository config's (internal/outbound); the
	// server's own Prometheus and Alertmanager stand in for those it does
	// not name, through the same reading, so their hosts are allowed too.
	x := &executor{deps: d, health: serverGate{client: outbound.Client(nil), log: d.Log}, metrics: newMetrics(d.Registerer)}
	if c := d.Config; c != nil {
		x.server = Server{MaxParallel: c.Rollout.MaxParallel, PrometheusURL: c.Rollout.PrometheusURL,
			AlertmanagerURL: c.Rollout.AlertmanagerURL}
		allow := outbound.WithHostsOf(c.Outbound.Allow, c.Rollout.PrometheusURL, c.Rollout.AlertmanagerURL)
		x.health = serverGate{client: outbound.Client(allow), log: d.Log}
	}
	return x
}
