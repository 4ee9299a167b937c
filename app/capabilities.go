package app

import (
	"github.com/ripcord/ripcord/app/clusteractions"
	"github.com/ripcord/ripcord/app/commands"
	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/deployments"
	"github.com/ripcord/ripcord/app/gatesflow"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/app/protection"
	"github.com/ripcord/ripcord/app/recoveryflow"
	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/app/webui"
)

// capabilities registers each capability's workers and routes and returns its
// webhook handlers. One line per capability package.
func capabilities(d pipeline.Deps, opts Options) []EventHandler {
	var hs []EventHandler
	hs = append(hs, configload.Register(d)...)
	hs = append(hs, recoveryflow.Register(d, rollbackflow.PullRequestExecutor(d), clusteractions.KubernetesExecutor(d))...)
	hs = append(hs, commands.Register(d, commandRunners(d)...)...)
	hs = append(hs, rollbackflow.Register(d)...)
	hs = append(hs, clusteractions.Register(d, ClusterTokenCheck(d.Config, d.Log))...)
	hs = append(hs, gatesflow.Register(d, opts.Gates)...)
	hs = append(hs, protection.Register(d)...)
	hs = append(hs, deployments.Register(d)...)
	hs = append(hs, webui.RegisterWith(d, webui.RolloutFlow(d))...)
	hs = append(hs, rolloutflow.Register(d)...)
	return hs
}

// commandRunners are the runners of the /ripcord commands a comment can
// give, one per capability that takes commands.
func commandRunners(d pipeline.Deps) []commands.Runner {
	return []commands.Runner{recoveryflow.RetryCommand(d), rollbackflow.RollbackCommand(d), rolloutflow.ApproveCommand(d)}
}
