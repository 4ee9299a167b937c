package gatesflow

import (
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/pipeline"
)

// Register adds the evaluation, check-run and give-up workers and returns the
// pull_request, check_run and check_suite handlers.
func Register(d pipeline.Deps) []pipeline.EventHandler {
	river.AddWorker(d.Workers, &evaluateWorker{deps: d, loader: configload.NewLoaderFor(d), registry: newRegistry(d.Config)})
	river.AddWorker(d.Workers, &reportWorker{deps: d})
	river.AddWorker(d.Workers, &gaveUpWorker{deps: d})
	return []pipeline.EventHandler{pullRequestHandler{deps: d}, checkRunHandler{deps: d}, checkSuiteHandler{deps: d}}
}
