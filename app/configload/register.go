package configload

import (
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/repoconfig"
)

// Register adds POST /api/v1/validate and the config check-run worker, and
// returns the push handler that queues checks.
func Register(d pipeline.Deps) []pipeline.EventHandler {
	opts := repoconfig.Options{}
	if d.Config != nil {
		opts.MaxParallel = d.Config.Rollout.MaxParallel
	}
	river.AddWorker(d.Workers, &checkWorker{deps: d, loader: NewLoaderWith(opts)})
	d.Mux.HandleFunc("POST /api/v1/validate", d.APIAuth(validateFor(opts)))
	return []pipeline.EventHandler{pushHandler{deps: d}}
}
