package commands

import (
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/pipeline"
)

// Register adds the reaction and reply workers and returns the one
// issue_comment handler, which routes commands to runners by name. A known
// command without a runner is answered "not available yet". Call it once,
// with every capability's runners: there is one command router.
func Register(d pipeline.Deps, runners ...Runner) []pipeline.EventHandler {
	river.AddWorker(d.Workers, &reactionWorker{deps: d})
	river.AddWorker(d.Workers, &replyWorker{deps: d})
	h := &handler{deps: d, loader: configload.NewLoaderFor(d), runners: map[string]Runner{}}
	for _, r := range runners {
		h.runners[r.Name()] = r
	}
	return []pipeline.EventHandler{h}
}
