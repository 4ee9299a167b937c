package rollbackflow

import (
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
)

// Register adds the rollback pull-request and release check-run workers,
// POST /api/v1/rollbacks, and the Roll back button's check_run handler.
// The /ripcord rollback command is RollbackCommand (for commands.Register)
// and the recovery executor PullRequestExecutor (for recoveryflow.Register).
func Register(d pipeline.Deps) []pipeline.EventHandler {
	st := newStarter(d)
	river.AddWorker(d.Workers, &pullRequestWorker{deps: d})
	river.AddWorker(d.Workers, &releaseCheckWorker{deps: d})
	d.Mux.Handle("POST /api/v1/rollbacks", d.APIAuth(apiHandler{st: st}.ServeHTTP))
	return []pipeline.EventHandler{buttonHandler{st: st}}
}
