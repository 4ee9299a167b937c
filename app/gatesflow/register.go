package gatesflow

import (
	"cmp"
	"time"

	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/pipeline"
)

// Options tune the waits of the evaluation; a zero field keeps its
// default. Tests shorten them, each for its own server, so tests that do
// can run at once.
type Options struct {
	// SlowAfter is how long a slow gate (one that reaches a registry)
	// may take before its check run is shown in_progress (default 3 s).
	SlowAfter time.Duration
	// EvaluateTimeout bounds an evaluation job (default 5 minutes).
	EvaluateTimeout time.Duration
}

// Defaults of Options.
const (
	slowAfter       = 3 * time.Second
	evaluateTimeout = 5 * time.Minute
)

// Register adds the evaluation, check-run and give-up workers and returns
// the pull_request, check_run and check_suite handlers.
func Register(d pipeline.Deps, o Options) []pipeline.EventHandler {
	river.AddWorker(d.Workers, &evaluateWorker{deps: d, loader: configload.NewLoaderFor(d), registry: newRegistry(d.Config),
		slowAfter: cmp.Or(o.SlowAfter, slowAfter), timeout: cmp.Or(o.EvaluateTimeout, evaluateTimeout)})
	river.AddWorker(d.Workers, &reportWorker{deps: d})
	river.AddWorker(d.Workers, &gaveUpWorker{deps: d})
	return []pipeline.EventHandler{pullRequestHandler{deps: d}, checkRunHandler{deps: d}, checkSuiteHandler{deps: d}}
}
