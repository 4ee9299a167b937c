package rolloutflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/oidcauth"
)

// ProbePost is the body of POST /api/v1/rollouts/{id}/probes: what the
// runners of a probe workflow saw for one reading.
type ProbePost struct {
	Reading       string        `json:"reading"`
	WorkflowRunID int64         `json:"workflow_run_id,omitempty"`
	Results       []RunnerProbe `json:"results"`
}

// ProbeAnswer is the answer to a ProbePost. Outcome is stored, or
// duplicate for results of the reading that were stored before.
type ProbeAnswer struct {
	RolloutID string `json:"rollout_id"`
	Reading   string `json:"reading"`
	Outcome   string `json:"outcome"`
	Results   int    `json:"results"`
}

// probesRoute serves the runners' posts, authenticated like task facts by
// the job's GitHub Actions OIDC token, whose repository must be the
// rollout's, and held like them to the oidc rule of the rollout's
// environment: a reading moves the waves on or stops them, so a workflow
// the rule refuses (a feature branch's) must not post one.
func (a api) probesRoute(d pipeline.Deps) {
	if d.Config == nil {
		return
	}
	if d.AdmitWorkflow == nil {
		// Without it every workflow of the repository would post readings,
		// whatever its environment's rule says.
		d.Log.Warn("POST /api/v1/rollouts/{id}/probes is off: nothing checks the environments' oidc rules")
		return
	}
	v, err := oidcauth.New(oidcauth.Config{Issuer: d.Config.OIDC.Issuer, Audience: d.Config.OIDC.Audience})
	if err != nil {
		d.Log.Warn("POST /api/v1/rollouts/{id}/probes is off: no OIDC verifier", "error", err)
		return
	}
	d.Mux.HandleFunc("POST /api/v1/rollouts/{id}/probes", func(w http.ResponseWriter, r *http.Request) {
		a.postProbes(w, r, v, d.AdmitWorkflow)
	})
}

func (a api) postProbes(w http.ResponseWriter, r *http.Request, v *oidcauth.Verifier,
	admit func(http.ResponseWriter, *http.Request, *oidcauth.Claims, string, string) bool) {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || raw == "" {
		pipeline.WriteError(w, http.StatusUnauthorized, "", "missing bearer token: send the job's GitHub Actions OIDC token (permissions: id-token: write)")
		return
	}
	claims, err := v.Verify(r.Context(), raw)
	if errors.Is(err, oidcauth.ErrIssuerUnavailable) {
		pipeline.WriteError(w, http.StatusServiceUnavailable, "", "cannot reach the OIDC issuer to check the token; retry later")
		return
	}
	if err != nil {
		pipeline.WriteError(w, http.StatusUnauthorized, "", "OIDC token refused: "+err.Error())
		return
	}
	var p ProbePost
	if !decode(w, r, &p, `a JSON object with "reading" and "results"`) {
		return
	}
	ro, err := a.x.probedRollout(r.Context(), r.PathValue("id"), claims.Repository)
	// The rule before the reading is looked at: a workflow it refuses
	// learns nothing of the rollout's readings, and stores none.
	if a.answered(w, err) || !admit(w, r, claims, ro.App, ro.Environment) {
		return
	}
	answer, err := a.x.storeProbes(r.Context(), ro, p)
	if !a.answered(w, err) {
		pipeline.WriteJSON(w, http.StatusOK, answer)
	}
}

// answered answers a probe post that err refuses or failed: false when
// err is nil and nothing was answered.
func (a api) answered(w http.ResponseWriter, err error) bool {
	var bad *badRequest
	switch {
	case errors.As(err, &bad):
		pipeline.WriteError(w, bad.status, bad.field, bad.msg)
	case err != nil:
		a.internal(w, err)
	default:
		return false
	}
	return true
}

// probedRollout is rollout id, which the runners of repository post a
// reading for: 404 when there is none, 403 when it is another
// repository's.
func (x *executor) probedRollout(ctx context.Context, id, repository string) (Rollout, error) {
	r, err := getRollout(ctx, x.deps.DB.Read, id)
	if errors.Is(err, ErrNotFound) {
		return Rollout{}, &badRequest{http.StatusNotFound, "id", fmt.Sprintf("no rollout with id %q", id)}
	}
	if err != nil {
		return Rollout{}, err
	}
	if r.Repository != repository {
		return Rollout{}, &badRequest{http.StatusForbidden, "repository",
			fmt.Sprintf("the token was issued to a workflow of %q, not of the rollout's repository %q", repository, r.Repository)}
	}
	return r, nil
}

// storeProbes stores what the runners saw for a reading of rollout r and
// wakes the rollout. Results are checked against the probes the reading
// asked for; the executor judges them itself.
func (x *executor) storeProbes(ctx context.Context, r Rollout, p ProbePost) (ProbeAnswer, error) {
	id := r.ID
	if p.Reading == "" {
		return ProbeAnswer{}, &badRequest{http.StatusUnprocessableEntity, "reading", "reading: required (the probe workflow's reading input)"}
	}
	ref, _, err := roundOf(ctx, x.deps.DB.Read, id, p.Reading)
	if errors.Is(err, errStaleReading) {
		return ProbeAnswer{}, &badRequest{http.StatusConflict, "reading", fmt.Sprintf(
			"reading %q of rollout %s is not awaited: results that come after the next interval count as missing", p.Reading, id)}
	}
	if err != nil {
		return ProbeAnswer{}, err
	}
	if err := checkResults(r, ref, p); err != nil {
		return ProbeAnswer{}, err
	}
	var stored bool
	err = x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		if stored, err = storeProbeResults(ctx, tx, id, p.Reading, p.WorkflowRunID, p.Results, x.deps.Now()); err != nil || !stored {
			return err
		}
		return queueTickTx(ctx, tx, x.deps.River(), id)
	})
	if err != nil {
		return ProbeAnswer{}, err
	}
	out := ProbeAnswer{RolloutID: id, Reading: p.Reading, Outcome: "stored", Results: len(p.Results)}
	if !stored {
		out.Outcome = "duplicate"
	}
	return out, nil
}

// checkResults refuses results for probes the reading did not ask for.
func checkResults(r Rollout, ref Ref, p ProbePost) error {
	_, hosts, ok := roundScope(r.Snapshot.Plan, ref)
	if !ok {
		return &badRequest{http.StatusConflict, "reading", fmt.Sprintf("reading %q names no pass of the plan", p.Reading)}
	}
	asked := map[[2]string]bool{}
	for _, t := range runnerTargets(r.Snapshot.Plan.Health, hosts) {
		asked[[2]string{t.URL, t.Host}] = true
	}
	for i, res := range p.Results {
		field := fmt.Sprintf("results[%d]", i)
		switch {
		case !asked[[2]string{res.URL, res.Host}]:
			return &badRequest{http.StatusUnprocessableEntity, field + ".url",
				fmt.Sprintf("%s.url: %q on host %q is not a probe of reading %s", field, res.URL, res.Host, p.Reading)}
		case res.Status < 0 || res.Status > 999:
			return &badRequest{http.StatusUnprocessableEntity, field + ".status",
				fmt.Sprintf("%s.status: %d is not an HTTP status (0 when no answer came)", field, res.Status)}
		}
	}
	return nil
}
