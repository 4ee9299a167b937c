package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/ripcord/ripcord/cluster/actionapi"
)

// DefaultPollWait is how long one long poll for actions waits on the server.
const DefaultPollWait = 30 * time.Second

// stopReportGrace bounds the report of an action the agent stopped before
// touching the cluster: a third of the 30 s Kubernetes gives a pod to
// stop by default (terminationGracePeriodSeconds; the chart sets none).
const stopReportGrace = 10 * time.Second

// actionRunner long-polls the server for its cluster's actions and carries
// each out once. The server never connects into the cluster: it queues, the
// agent pulls.
//
// At most once: the server hands a pending action to one agent id and marks
// it claimed; the agent writes it to its journal before it touches the
// cluster; its PATCH carries the action id (ActionAnnotation) and the
// resourceVersion it read. A restarted agent asks for its claimed actions
// again ("resume"), and for each one the journal knows, it reports the
// stored result or resumes without patching twice. Its id does not live in
// the state folder (DefaultAgentID): a new pod that lost the folder with
// its emptyDir resumes its predecessor's claims without their journal,
// reading the Deployment for this action's ActionAnnotation before it
// patches. The processes of one id take turns through a Lease
// (Agent.runActions), so only one of them asks for the id's claims.
type actionRunner struct {
	base  string // server + /api/v1/clusters/{cluster}/actions
	agent string
	// namespace is the one the agent watches, "" for all: the server
	// hands it only actions of workloads there, so two agents of one
	// cluster, each with its own namespace, never take each other's.
	namespace string
	http      *http.Client
	token     func() (string, error)
	journal   *journal
	roll      *Rollbacker
	wait      time.Duration
	// maxBackoff caps the pause between polls while the server is
	// unreachable.
	maxBackoff time.Duration
	// tokenFrom says where the token comes from, logged when the server
	// refuses it (refusedToken); "" when the caller did not say.
	tokenFrom string
	metrics   *metrics
	log       *slog.Logger
	now       func() time.Time

	mu       sync.Mutex
	inflight map[string]bool
	wg       sync.WaitGroup

	// polls is what /healthz says of the polls (pollTrouble).
	polls failureStreak
}

// earlyPause is the pause after a long poll the server answered with no
// action well before its wait (a server that is stopping answers at
// once, and so may a proxy or a server that ignores wait): without it the
// agent would poll in a tight loop.
const earlyPause = time.Second

// run polls until ctx ends, then waits for the actions in flight. After an
// error the next poll asks for this agent's claimed actions too: the
// answer that claimed them may be the one that was lost.
func (r *actionRunner) run(ctx context.Context) {
	defer r.wg.Wait()
	resume := true
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		started := time.Now()
		actions, err := r.poll(ctx, resume)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			r.notePoll(err)
			resume = true
			backoff = min(max(backoff*2, time.Second), r.maxBackoff)
			r.log.Warn("cannot poll for cluster actions", append([]any{"err", err, "retry_in", backoff}, refusedActionsToken(err, r.tokenFrom)...)...)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			continue
		}
		r.notePoll(nil)
		resume, backoff = false, 0
		for _, a := range actions {
			r.start(ctx, a)
		}
		if len(actions) == 0 && time.Since(started) < r.wait/2 {
			select {
			case <-ctx.Done():
			case <-time.After(min(earlyPause, r.wait)):
			}
		}
	}
}

// notePoll records the outcome of one poll: nil when the server answered.
func (r *actionRunner) notePoll(err error) { r.polls.note(err) }

// pollState is what /healthz says of the polls: the last one's error (nil
// after one the server answered), since when they have failed in a row,
// and whether that is longer than the agent's patience.
func (r *actionRunner) pollState() (err error, since time.Time, sustained bool) {
	return r.polls.state()
}

// pollTrouble says, for /healthz, that the polls for cluster actions have
// failed for longer than the agent's patience and why: an agent that
// cannot poll cannot roll back, whatever its deliveries do.
func (r *actionRunner) pollTrouble() string {
	return r.polls.trouble("cannot poll the server for cluster actions", "no rollback reaches this agent", r.tokenFrom)
}

func (r *actionRunner) poll(ctx context.Context, resume bool) ([]actionapi.Action, error) {
	q := url.Values{"agent": {r.agent}, "wait": {r.wait.String()}}
	if r.namespace != "" {
		// A server from before the parameter ignores it and hands out
		// any of the cluster's actions, as it always did.
		q.Set("namespace", r.namespace)
	}
	if resume {
		q.Set("resume", "true")
	}
	var out actionapi.Actions
	client := *r.http
	client.Timeout = r.wait + 30*time.Second
	if err := doJSON(ctx, &client, r.token, http.MethodGet, r.base+"?"+q.Encode(), nil, &out); err != nil {
		return nil, err
	}
	return out.Actions, nil
}

// start carries out an action in its own goroutine unless it is already
// in flight (a resume poll returns those too).
func (r *actionRunner) start(ctx context.Context, a actionapi.Action) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.inflight[a.ID] {
		return
	}
	r.inflight[a.ID] = true
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() {
			r.mu.Lock()
			delete(r.inflight, a.ID)
			r.mu.Unlock()
		}()
		r.carryOut(ctx, a)
	}()
}

func (r *actionRunner) carryOut(ctx context.Context, a actionapi.Action) {
	log := r.log.With("action", a.ID, "kind", a.Kind, "deployment", a.Namespace+"/"+a.Deployment)
	e, found, err := r.journal.get(a.ID)
	if err != nil {
		log.Error("cannot read the action journal; not touching the cluster", "err", err)
		return
	}
	switch {
	case found && e.Result != nil:
		log.Info("reporting the result of an action finished before a restart")
	default:
		if !found {
			e = journalEntry{Action: a, StartedAt: r.now()}
			if err := r.journal.put(e); err != nil {
				// Without the journal a restart could repeat the action.
				res := journalFailure(a, err)
				_ = r.report(ctx, log, a, res)
				return
			}
		} else {
			log.Info("resuming an action started before a restart")
		}
		res, touched := r.execute(ctx, a, found)
		if ctx.Err() != nil {
			if touched {
				// The patch may have landed: only a start that reads the
				// Deployment again can tell how the action ended.
				log.Info("stopping with the action unfinished; the next start resumes it")
				return
			}
			// Nothing was changed: saying so now spares the server
			// waiting out its claim timeout, within the grace period the
			// agent is given to stop.
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), stopReportGrace)
			defer cancel()
			if res.ErrorType == ErrTypeAgentStopped {
				log.Info("stopping before the action touched the cluster; giving it back to the server")
				r.giveBack(ctx, log, a, res)
				return
			}
		}
		e.Result = &res
		if err := r.journal.put(e); err != nil {
			log.Error("cannot record the action's result in the journal", "err", err)
		}
	}
	r.metrics.actions.WithLabelValues(a.Kind, e.Result.Outcome).Inc()
	_ = r.report(ctx, log, a, *e.Result)
}

// execute carries out an action; touched says whether the cluster may
// have been changed (see Rollbacker.rollback). earlierRun: the journal
// says an earlier run of the agent started it.
func (r *actionRunner) execute(ctx context.Context, a actionapi.Action, earlierRun bool) (actionapi.Result, bool) {
	if a.Kind != actionapi.KindRollback {
		rec := &recorder{now: r.now}
		return rec.end(failed(ErrTypeUnsupported, "this agent does not know action kind %q", a.Kind), rollbackPlan{}), false
	}
	return r.roll.rollback(ctx, a, earlierRun)
}

// giveBack reports an action the agent was stopped before starting
// (stopped, its rollback_failed agent_stopped result) as not_started, so
// the server puts it back to pending for this agent's next start or another
// replica, rather than end the episode with an alert about a rollback that
// was never tried. The journal keeps the action started without a result:
// if the server never heard, the next start with this state folder resumes
// it, reading the Deployment before it patches. A server from before
// not_started refuses it naming the field (400 on outcome or status): it
// then gets stopped, as it always did, and the journal keeps that result
// so the action is not carried out after all.
func (r *actionRunner) giveBack(ctx context.Context, log *slog.Logger, a actionapi.Action, stopped actionapi.Result) {
	back := actionapi.Result{Status: actionapi.StatusNotStarted, Outcome: actionapi.OutcomeNotStarted,
		ErrorType: stopped.ErrorType, Reason: stopped.Reason + "; the action goes back to the server for the agent's next start or another replica"}
	err := r.report(ctx, log, a, back)
	var se *statusError
	if !errors.As(err, &se) || se.Status != http.StatusBadRequest || !se.refusesFields("outcome", "status") {
		r.metrics.actions.WithLabelValues(a.Kind, back.Outcome).Inc()
		return
	}
	log.Info("the server does not know not_started results; reporting the action failed, as servers before it expect")
	e := journalEntry{Action: a, StartedAt: r.now(), Result: &stopped}
	if old, found, _ := r.journal.get(a.ID); found {
		e.StartedAt = old.StartedAt
	}
	if err := r.journal.put(e); err != nil {
		log.Error("cannot record the action's result in the journal", "err", err)
	}
	r.metrics.actions.WithLabelValues(a.Kind, stopped.Outcome).Inc()
	_ = r.report(ctx, log, a, stopped)
}

func journalFailure(a actionapi.Action, err error) actionapi.Result {
	rec := &recorder{now: time.Now}
	return rec.end(failed(ErrTypeJournal, "not started: %v", err), rollbackPlan{})
}

// report posts the result until the server takes it, refuses it for good,
// or the agent stops (the journal keeps it for the next start). It returns
// nil once the server took it, else the last error.
func (r *actionRunner) report(ctx context.Context, log *slog.Logger, a actionapi.Action, res actionapi.Result) error {
	res.Agent = r.agent
	body, err := json.Marshal(res)
	if err != nil {
		log.Error("cannot encode the action's result", "err", err)
		return err
	}
	u := r.base + "/" + url.PathEscape(a.ID)
	backoff := time.Second
	for {
		err := doJSON(ctx, r.http, r.token, http.MethodPost, u, body, nil)
		var se *statusError
		switch {
		case err == nil:
			log.Info("action finished", "status", res.Status, "outcome", res.Outcome, "reason", res.Reason)
			return nil
		case errors.As(err, &se) && se.Status/100 == 4 && !retryable4xx(se):
			log.Error("the server refused the action's result", "err", err)
			return err
		case ctx.Err() != nil:
			return err
		}
		log.Warn("cannot report the action's result; retrying", append([]any{"err", err, "retry_in", backoff}, refusedActionsToken(err, r.tokenFrom)...)...)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, r.maxBackoff)
	}
}

// retryable4xx: a token being rotated, a timeout or a rate limit may pass.
// A 403 that names a field is the server refusing what was sent, not the
// token: it would answer the same for ever and hold up what waits behind.
func retryable4xx(se *statusError) bool {
	switch se.Status {
	case http.StatusForbidden:
		return !se.namesField()
	case http.StatusUnauthorized, http.StatusRequestTimeout, http.StatusTooManyRequests:
		return true
	}
	return false
}

// actionsURL is the base of the actions API for a cluster.
func actionsURL(server, cluster string) string {
	return fmt.Sprintf("%s/api/v1/clusters/%s/actions", strings.TrimSuffix(server, "/"), url.PathEscape(cluster))
}
