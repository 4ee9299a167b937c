package configload

import (
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/pipeline"
)

// Register adds POST /api/v1/validate and the config check-run worker, and
// returns the push handler that queues checks.
func Register(d pipeline.Deps) []pipeline.EventHandler {
	river.AddWorker(d.Workers, &checkWorker{deps: d, loader: NewLoader()})
	d.Mux.HandleFunc("POST /api/v1/validate", d.APIAuth(validateHandler))
	return []pipeline.EventHandler{pushHandler{deps: d}}
}
