package rollbackflow

import (
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/rollbackpr"
)

// The rollback base cache: one entry per GitOps base branch. Push webhooks
// keep it current on the replica that handles them; baseCacheMaxAge bounds
// how long another replica trusts a branch it heard nothing about.
const (
	baseCacheBranches = 1024
	baseCacheMaxAge   = 10 * time.Minute
)

// Register adds the rollback pull-request and release check-run workers,
// POST /api/v1/rollbacks, the Roll back button's check_run handler, the
// push handler that keeps the pull-request worker's base cache current, and
// the pull_request handler that withdraws the release of a rollback pull
// request closed without merging and records the merge of a merged one.
// The /ripcord rollback command is RollbackCommand (for commands.Register)
// and the recovery executor PullRequestExecutor (for recoveryflow.Register).
func Register(d pipeline.Deps) []pipeline.EventHandler {
	st := newStarter(d)
	now := d.Now
	if now == nil {
		now = time.Now
	}
	cache := rollbackpr.NewMemoryCache(baseCacheBranches, baseCacheMaxAge, now)
	river.AddWorker(d.Workers, &pullRequestWorker{deps: d, cache: cache})
	river.AddWorker(d.Workers, &releaseCheckWorker{deps: d})
	d.Mux.Handle("POST /api/v1/rollbacks", d.APIAuth(apiHandler{st: st}.ServeHTTP))
	return []pipeline.EventHandler{buttonHandler{st: st}, pushHandler{cache: cache}, closedHandler{deps: d, loader: st.loader}}
}
