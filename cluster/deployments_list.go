package cluster

import (
	"context"
	"fmt"
	"log/slog"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// The Deployment watch is the agent's first duty: while its requests to
// list or watch them fail, no Deployment's fact reaches the server, and
// client-go's informer only logs the error and retries for ever. The agent
// says so itself, on /healthz and once in its log: at once when the RBAC
// forbids them, as asking again changes nothing until someone grants the
// permission; after Config.ListPatience for any other error (an API
// server that restarts is got past by client-go's first retries).

// deploymentsTrouble is why the Deployment watch keeps the agent from
// being ready once it has listed them: its requests fail
// (listState.failing); "" when they do not.
func (a *Agent) deploymentsTrouble() string {
	if err, _ := a.deployList.failing(); err != nil {
		return a.deploymentsProblem(err, true)
	}
	return ""
}

// deploymentsStarting is what keeps the Deployment watch from its first
// list: the last request's error, however short the failure, since the
// agent is not ready anyway; "" while none failed.
func (a *Agent) deploymentsStarting() string {
	err := a.deployList.last()
	if err == nil {
		return ""
	}
	_, wait := a.deployList.failing()
	return a.deploymentsProblem(err, wait <= 0)
}

// deploymentsProblem says what the failing requests of the Deployment
// watch (err) mean and what to do: the permission to grant when the RBAC
// forbids them, otherwise the error, and whether they have failed in a
// row for Config.ListPatience (patienceOver).
func (a *Agent) deploymentsProblem(err error, patienceOver bool) string {
	if !apierrors.IsForbidden(err) {
		failed := fmt.Sprintf("has failed for more than %s", a.cfg.ListPatience)
		if !patienceOver {
			failed = "failed"
		}
		return fmt.Sprintf("cannot watch Deployments: listing deployments.apps/v1 %s (%v); "+
			"fix what the error names (the API server, the way to it): no Deployment's fact is sent meanwhile, "+
			"and they are within a minute of a list succeeding, without a restart", failed, err)
	}
	scope := "in namespace " + a.cfg.Namespace + " (a Role there)"
	if a.cfg.Namespace == "" {
		scope = "in every namespace (a ClusterRole)"
	}
	return fmt.Sprintf("cannot watch Deployments: the agent may not list deployments.apps/v1 (%v); "+
		"grant the agent's service account get, list and watch on deployments and replicasets in API group apps %s, "+
		"as the Helm chart's agent RBAC does: no Deployment's fact is sent meanwhile, "+
		"and they are within a minute of the permission being granted, without a restart", err, scope)
}

// followDeployments says in the log, until ctx ends, when the requests of
// the Deployment watch start to fail, and when they succeed again
// (followList).
func (a *Agent) followDeployments(ctx context.Context, log *slog.Logger) {
	followList(ctx, log, a.deployList, a.deploymentsProblem, "the agent lists Deployments again; watching them")
}
