package clusteractions

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/cluster/actionapi"
	"github.com/ripcord/ripcord/records"
)

// Long-poll bounds. MaxWait stays under the server's 30 s shutdown grace so
// a poll in flight never holds a graceful stop past it.
const (
	MaxWait      = 25 * time.Second
	pollInterval = 250 * time.Millisecond
	maxBody      = 1 << 20
)

// TokenCheck is the cluster-token rule (app.ClusterTokenCheck): 0 when the
// request carries the cluster's token, else the status and message to send.
type TokenCheck func(r *http.Request, cluster string) (int, string)

// api serves the agent's endpoints.
type api struct {
	store   *actionStore
	auth    TokenCheck
	now     func() time.Time
	log     *slog.Logger
	results *prometheus.CounterVec
	// stopping is closed when the server stops: a poll waiting answers
	// no actions at once, and the agent polls again (another replica, or
	// this one restarted), rather than hold the stop for its wait.
	stopping <-chan struct{}
}

var agentPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

// list is GET /api/v1/clusters/{cluster}/actions?agent=ID[&namespace=NS][&wait=25s][&resume=true]:
// it claims the cluster's pending actions for the agent, waiting up to wait
// for one to appear; with namespace, only those of a workload in that
// namespace (the one the agent watches; without it, any, as agents that
// watch every namespace and agents from before the parameter ask);
// resume=true also returns the actions this agent claimed before and has
// not reported.
func (a *api) list(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	if status, msg := a.auth(r, cluster); status != 0 {
		pipeline.WriteError(w, status, "", msg)
		return
	}
	q := r.URL.Query()
	agent := q.Get("agent")
	if !agentPattern.MatchString(agent) {
		pipeline.WriteError(w, http.StatusBadRequest, "agent", "agent must be the agent's id: 1 to 100 of A-Z a-z 0-9 _ -")
		return
	}
	namespace := q.Get("namespace")
	if namespace != "" && !dnsLabel.MatchString(namespace) {
		pipeline.WriteError(w, http.StatusBadRequest, "namespace",
			fmt.Sprintf("namespace must be the Kubernetes namespace the agent watches, or absent when it watches all, got %q", namespace))
		return
	}
	var wait time.Duration
	if v := q.Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			pipeline.WriteError(w, http.StatusBadRequest, "wait", fmt.Sprintf("wait must be a duration such as 25s, got %q", v))
			return
		}
		wait = min(d, MaxWait)
	}
	resume := q.Get("resume") == "true"
	deadline := time.Now().Add(wait)
	for {
		found, err := a.store.hasWork(r.Context(), cluster, agent, namespace, resume, a.now())
		if err == nil && found {
			var actions []actionapi.Action
			actions, err = a.store.claim(r.Context(), cluster, agent, namespace, resume, a.now())
			if err == nil && len(actions) > 0 {
				pipeline.WriteJSON(w, http.StatusOK, actionapi.Actions{Actions: actions})
				return
			}
		}
		if err != nil {
			if r.Context().Err() == nil {
				a.log.Error("cluster actions: poll", "cluster", cluster, "err", err)
				pipeline.WriteError(w, http.StatusInternalServerError, "", "internal error; see the server log")
			}
			return
		}
		if !time.Now().Before(deadline) {
			pipeline.WriteJSON(w, http.StatusOK, actionapi.Actions{Actions: []actionapi.Action{}})
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-a.stopping:
			pipeline.WriteJSON(w, http.StatusOK, actionapi.Actions{Actions: []actionapi.Action{}})
			return
		case <-time.After(min(pollInterval, time.Until(deadline))):
		}
	}
}

// resultAnswer is what POST …/actions/{id} answers.
type resultAnswer struct {
	ID      string `json:"id"`
	State   string `json:"state"`
	Outcome string `json:"outcome"`
	// Repeat: this result had been recorded before; nothing changed.
	Repeat bool `json:"repeat,omitempty"`
}

// report is POST /api/v1/clusters/{cluster}/actions/{id}: the agent that
// claimed the action says how it ended.
func (a *api) report(w http.ResponseWriter, r *http.Request) {
	cluster, id := r.PathValue("cluster"), r.PathValue("id")
	if status, msg := a.auth(r, cluster); status != 0 {
		pipeline.WriteError(w, status, "", msg)
		return
	}
	var res actionapi.Result
	if status, field, msg := decodeResult(w, r, &res); msg != "" {
		pipeline.WriteError(w, status, field, msg)
		return
	}
	st, outcome, why, err := a.store.finish(r.Context(), cluster, id, res, a.now())
	switch {
	case err != nil:
		a.log.Error("cluster actions: record result", "cluster", cluster, "action", id, "err", err)
		pipeline.WriteError(w, http.StatusInternalServerError, "", "internal error; see the server log")
	case outcome == finishNotFound:
		pipeline.WriteError(w, http.StatusNotFound, "", why)
	case outcome == finishConflict:
		pipeline.WriteError(w, http.StatusConflict, "", why)
	default:
		switch {
		case outcome == finishRecorded && res.Status == actionapi.StatusNotStarted:
			a.results.WithLabelValues(res.Outcome).Inc()
			a.log.Info("cluster action given back without being started; it is pending again", "cluster", cluster, "action", id,
				"agent", res.Agent, "error_type", res.ErrorType, "reason", res.Reason)
		case outcome == finishRecorded:
			a.results.WithLabelValues(res.Outcome).Inc()
			a.log.Info("cluster action finished", "cluster", cluster, "action", id, "status", res.Status,
				"outcome", res.Outcome, "error_type", res.ErrorType, "reason", res.Reason)
		}
		pipeline.WriteJSON(w, http.StatusOK, resultAnswer{ID: st.ID, State: st.State, Outcome: res.Outcome, Repeat: outcome == finishRepeat})
	}
}

var outcomes = map[string]string{
	actionapi.OutcomeRolledBack: actionapi.StatusDone, actionapi.OutcomeSkipped: actionapi.StatusFailed,
	actionapi.OutcomeAlert: actionapi.StatusFailed, actionapi.OutcomeRollbackFailed: actionapi.StatusFailed,
	actionapi.OutcomeNotStarted: actionapi.StatusNotStarted,
}

// decodeResult reads the body strictly; a problem comes back as the status
// (413 for a body over the limit, 400 otherwise), the field and the message.
func decodeResult(w http.ResponseWriter, r *http.Request, res *actionapi.Result) (int, string, string) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return http.StatusRequestEntityTooLarge, "", "request body larger than 1 MiB"
	case err != nil:
		// Cut short: the client went away, or sent less than it said.
		return http.StatusBadRequest, "", "could not read the request body: " + err.Error()
	}
	field, msg := checkResult(body, res)
	return http.StatusBadRequest, field, msg
}

// checkResult decodes body into res strictly; a problem comes back as the
// field and the message of a 400.
func checkResult(body []byte, res *actionapi.Result) (string, string) {
	if err := pipeline.DecodeStrict(body, res, "", `a JSON object with "agent", "status" and "outcome"`); err != nil {
		var fe *pipeline.FieldError
		errors.As(err, &fe)
		return fe.Field, fe.Error()
	}
	if !agentPattern.MatchString(res.Agent) {
		return "agent", "agent must be the id of the agent that claimed the action"
	}
	status, known := outcomes[res.Outcome]
	if !known {
		return "outcome", fmt.Sprintf("outcome must be rolled_back, skipped, alert, rollback_failed or not_started, got %q", res.Outcome)
	}
	if res.Status != status {
		return "status", fmt.Sprintf("status must be %q for outcome %s, got %q", status, res.Outcome, res.Status)
	}
	if res.Status == actionapi.StatusNotStarted && len(res.Audit) > 0 {
		return "audit", "a not_started result carries no audit events: nothing happened yet"
	}
	for i, e := range res.Audit {
		if !records.AuditType(e.Type).Valid() {
			return fmt.Sprintf("audit[%d].type", i), fmt.Sprintf("unknown audit type %q", e.Type)
		}
	}
	return "", ""
}
