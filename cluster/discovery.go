package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
)

// Looking for Argo Rollouts again.
const (
	// discoveryMinBackoff is the first pause after a discovery that failed
	// (doubled at each failure, up to the resync): an API server that
	// answered with an error said nothing about Argo Rollouts, so waiting a
	// whole resync would blind the agent to them for nothing.
	discoveryMinBackoff = time.Second
	// rolloutsOnMaxWait caps the pause between two looks with
	// --rollouts=on, where the agent is not ready until it watches them.
	rolloutsOnMaxWait = time.Minute
)

// rolloutsDiscovery is what discovery said of Argo Rollouts: served, not
// served (notServed says why), or nothing (err, a discovery that failed).
type rolloutsDiscovery struct {
	served    bool
	notServed string
	err       error
}

// rolloutsServed asks the API server whether it serves Argo Rollouts.
func (a *Agent) rolloutsServed() rolloutsDiscovery {
	if a.cfg.Rollouts == RolloutsOff {
		return rolloutsDiscovery{notServed: "rollouts=off"}
	}
	gv := RolloutResource.GroupVersion().String()
	list, err := a.kube.Discovery().ServerResourcesForGroupVersion(gv)
	switch {
	case apierrors.IsNotFound(err):
		return rolloutsDiscovery{notServed: gv + " is not served"}
	case err != nil:
		return rolloutsDiscovery{err: fmt.Errorf("discovery of %s: %w", gv, err)}
	}
	for _, r := range list.APIResources {
		if r.Name == RolloutResource.Resource {
			return rolloutsDiscovery{served: true}
		}
	}
	return rolloutsDiscovery{notServed: gv + " has no " + RolloutResource.Resource}
}

// rolloutsNotServedHelp is what an operator who asked for --rollouts=on can
// do about a cluster that does not serve them.
const rolloutsNotServedHelp = "install Argo Rollouts (the agent starts watching them without a restart), " +
	"or run the agent with --rollouts=auto to watch Deployments alone until they are served"

// waitingForRollouts says why the Rollout watch has not started: in the
// log (at debug level unless loud) and, with --rollouts=on, on /healthz,
// which it keeps from being ready.
func (a *Agent) waitingForRollouts(log *slog.Logger, d rolloutsDiscovery, loud bool) {
	gvr := RolloutResource.Resource + "." + RolloutResource.GroupVersion().String()
	var level slog.Level
	var msg string
	switch {
	case a.cfg.Rollouts == RolloutsOff:
		return
	case a.cfg.Rollouts == RolloutsOn && d.err != nil:
		level, msg = slog.LevelWarn, fmt.Sprintf("waiting for Argo Rollouts (--rollouts=on): cannot tell whether this cluster serves %s (%v); "+
			"asking again with backoff, and watching Deployments meanwhile", gvr, d.err)
	case a.cfg.Rollouts == RolloutsOn:
		level, msg = slog.LevelError, fmt.Sprintf("waiting for Argo Rollouts (--rollouts=on): this cluster does not serve %s (%s): %s; "+
			"Deployments are watched meanwhile", gvr, d.notServed, rolloutsNotServedHelp)
	case d.err != nil:
		level, msg = slog.LevelWarn, fmt.Sprintf("cannot tell whether this cluster serves Argo Rollouts (%v); watching Deployments, "+
			"and asking again with backoff", d.err)
	default:
		level, msg = slog.LevelInfo, fmt.Sprintf("Argo Rollouts are not served by this cluster (%s); watching Deployments only, "+
			"and looking again at every resync", d.notServed)
	}
	if a.cfg.Rollouts == RolloutsOn {
		a.mu.Lock()
		a.waitingFor = msg
		a.mu.Unlock()
	}
	if !loud {
		level = slog.LevelDebug
	}
	log.Log(context.Background(), level, msg)
}

// discoverRollouts looks for Argo Rollouts again when the agent started
// without their watch, and starts it once the cluster serves them: Argo
// Rollouts installed after the agent need no restart. It looks again at
// every resync while the cluster answers that it does not serve them
// (sooner with --rollouts=on), and after a failed discovery with backoff,
// from seconds up to the resync. Their watch joins the inventory once it
// has listed them; with --rollouts=on the agent is ready from then on.
func (a *Agent) discoverRollouts(ctx context.Context, log *slog.Logger, d rolloutsDiscovery) {
	backoff := time.Duration(0)
	for {
		wait := a.cfg.Resync
		if d.err != nil || a.cfg.Rollouts == RolloutsOn {
			limit := a.cfg.Resync
			if a.cfg.Rollouts == RolloutsOn {
				limit = min(limit, rolloutsOnMaxWait)
			}
			backoff = min(max(backoff*2, discoveryMinBackoff), limit)
			wait = backoff
		} else {
			backoff = 0
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		prev := d
		if d = a.rolloutsServed(); !d.served {
			// Said out loud when the answer changes kind, not at every look.
			a.waitingForRollouts(log, d, (d.err == nil) != (prev.err == nil))
			continue
		}
		break
	}
	log.Info("Argo Rollouts are served by this cluster now; watching them")
	w := a.watch.rollouts(ctx, a.kube, a.dyn, a.cfg.Namespace, a.cfg.Resync, a.deployList)
	a.mu.Lock()
	a.rolloutWatch = &w
	a.mu.Unlock()
	followed := make(chan struct{})
	go func() { defer close(followed); a.followRollouts(ctx, log, w) }()
	defer func() { <-followed }()
	if !cache.WaitForCacheSync(ctx.Done(), w.listedOrFailing) {
		return
	}
	if !w.synced() {
		a.mu.Lock()
		a.rolloutsPending = true
		a.mu.Unlock()
	}
	a.joinRollouts(ctx, w)
}

// listedOrFailing reports that the Rollout watch w has listed them, or that
// its requests fail (listState.failing): either way, nothing need wait for
// it any longer.
func (w startedWatch) listedOrFailing() bool {
	if w.synced() {
		return true
	}
	err, _ := w.list.failing()
	return err != nil
}

// joinRollouts adds the Rollout watch w to the inventory once it has
// listed them (at once when it has): a list that failed is asked again by
// the informer, with client-go's backoff, so a permission granted or an
// error fixed later needs no restart. The agent is ready from then on,
// as long as the Rollouts list (rolloutsTrouble).
func (a *Agent) joinRollouts(ctx context.Context, w startedWatch) {
	if !cache.WaitForCacheSync(ctx.Done(), w.synced) {
		return
	}
	a.watch.hold(w)
	select {
	case a.watchJoined <- struct{}{}:
	default:
	}
	a.mu.Lock()
	a.waitingFor = ""
	a.rolloutsPending = false
	a.mu.Unlock()
}

// followRollouts says in the log, until ctx ends, when the requests of the
// Rollout watch w start to fail, and when they succeed again (followList):
// a permission revoked after the Rollouts were listed is said as at the
// start.
func (a *Agent) followRollouts(ctx context.Context, log *slog.Logger, w startedWatch) {
	followList(ctx, log, w.list, a.rolloutsProblem, "the agent lists Argo Rollouts again; watching them")
}

// followList says in the log, until ctx ends, when the requests of a
// watch whose listState is list start to fail (listState.failing), at error
// level with problem's words, and when they succeed again, with again: the
// same error is said once, not at every retry.
func followList(ctx context.Context, log *slog.Logger, list *listState, problem func(err error, logged bool) string, again string) {
	var said error
	for {
		err, wait := list.failing()
		switch {
		case err != nil && (said == nil || apierrors.IsForbidden(err) != apierrors.IsForbidden(said)):
			log.Error(problem(err, true))
			said = err
		case said != nil && list.last() == nil:
			log.Info(again)
			said = nil
		}
		// A failure that is not one yet becomes one without a request:
		// look again when it does.
		timer := time.NewTimer(max(wait, 0))
		if wait <= 0 {
			timer.Stop()
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-list.changed:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// rolloutsTrouble is why the Rollout watch keeps the agent from being
// ready, whatever --rollouts: its requests fail (listState.failing), or
// the Deployments were released without it and it has not listed the
// Rollouts since; "" when nothing is wrong with it (or it does not run).
func (a *Agent) rolloutsTrouble() string {
	a.mu.Lock()
	w, pending := a.rolloutWatch, a.rolloutsPending
	a.mu.Unlock()
	if w == nil {
		return ""
	}
	err, _ := w.list.failing()
	patienceOver := err != nil
	if err == nil && pending {
		err = w.list.last()
	}
	switch {
	case err != nil:
		return a.rolloutsProblem(err, patienceOver)
	case pending:
		return "waiting for the Rollout watch to list Argo Rollouts: its earlier lists failed, and it is listing them again"
	}
	return ""
}

// rolloutsProblem says what the failing requests of the Rollout watch
// (err) mean and what to do: the permission to grant when the RBAC
// forbids them, otherwise the error, and whether they have failed in a
// row for Config.ListPatience (patienceOver; not so for one that fails
// again while the Deployments are watched without the Rollouts, after one
// succeeded). The Deployments are watched meanwhile.
func (a *Agent) rolloutsProblem(err error, patienceOver bool) string {
	gvr := RolloutResource.Resource + "." + RolloutResource.GroupVersion().String()
	if !apierrors.IsForbidden(err) {
		failed := fmt.Sprintf("has failed for more than %s", a.cfg.ListPatience)
		if !patienceOver {
			failed = "fails again"
		}
		return fmt.Sprintf("cannot watch Argo Rollouts: listing %s %s (%v); "+
			"fix what the error names (a conversion webhook of the Rollout CRD, the API server), "+
			"or run the agent with --rollouts=off to watch Deployments alone; "+
			"Deployments are watched meanwhile (one a tracked Rollout references is reported as a workload of its own), "+
			"and the Rollouts within a minute of a list succeeding, without a restart", gvr, failed, err)
	}
	scope := "in namespace " + a.cfg.Namespace + " (a Role there)"
	if a.cfg.Namespace == "" {
		scope = "in every namespace (a ClusterRole)"
	}
	return fmt.Sprintf("cannot watch Argo Rollouts: this cluster serves %s, but the agent may not list them (%v); "+
		"grant the agent's service account get, list and watch on rollouts in API group argoproj.io %s, "+
		"as the Helm chart's agent RBAC does, or run the agent with --rollouts=off to watch Deployments alone; "+
		"Deployments are watched meanwhile, and the Rollouts within a minute of the permission being granted, without a restart",
		gvr, err, scope)
}
