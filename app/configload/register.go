package configload

import (
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
)

// Register adds POST /api/v1/validate and the config check-run worker, and
// returns the push handler that queues checks.
func Register(d pipeline.Deps) []pipeline.EventHandler {
	opts := ServerOptions(d)
	river.AddWorker(d.Workers, &checkWorker{deps: d, loader: NewLoaderWith(opts)})
	d.Mux.HandleFunc("POST /api/v1/validate", d.APIAuth(validateFor(opts)))
	return []pipeline.EventHandler{pushHandler{deps: d}}
}
