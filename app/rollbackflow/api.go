package rollbackflow

import (
	"database/sql"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/ripcord/ripcord/app/ghclient"
	"github.com/ripcord/ripcord/app/pipeline"

	"github.com/ripcord/ripcord/records"
)

// maxBody bounds a POST /api/v1/rollbacks body.
const maxBody = 64 << 10

// rollbackBody is the body of POST /api/v1/rollbacks.
type rollbackBody struct {
	App         string `json:"app"`
	Environment string `json:"environment"`
	Cluster     string `json:"cluster"`
	To          string `json:"to"`
	Reason      string `json:"reason"`
	// Repository is the app's repository (where .github/ripcord.yml is);
	// by default the one the newest release of the app there names.
	Repository string `json:"repository"`
}

// Accepted is the 202 answer: the rollback's release id and the job that
// opens its pull request. GET /api/v1/releases/{release_id} shows the pull
// request once the job has opened it.
type Accepted struct {
	ReleaseID         string `json:"release_id"`
	RollbackOf        string `json:"rollback_of"`
	TargetReleaseID   string `json:"target_release_id"`
	Eligible          bool   `json:"eligible"`
	EligibilityReason string `json:"eligibility_reason"`
	// Repository is where the pull request is opened. Its branch is not
	// named: the job finds it (a rollback gets a branch of its own when
	// another rollback of the same target holds the usual one), and the
	// release's pull request says where it is once it is open.
	Repository string `json:"repository"`
	// JobID is the job that opens the pull request; 0 when the rollback is
	// open already (PRURL names its pull request) and nothing was queued.
	JobID int64 `json:"job_id"`
	// Duplicate is true when the same rollback was asked for already: its
	// job carries on, or its pull request is open (PRURL, PRNumber).
	Duplicate bool   `json:"duplicate"`
	Release   string `json:"release"` // the API path of the release record
	PRURL     string `json:"pr_url,omitempty"`
	PRNumber  int    `json:"pr_number,omitempty"`
}

type apiHandler struct{ st *starter }

// ServeHTTP is POST /api/v1/rollbacks (api token). It decides at once, so a
// refusal is a 422 with the reason, and queues the pull request as a job:
// GitHub may be slow or down, the job retries, and every way to start a
// rollback shares that one idempotent job.
func (h apiHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var b rollbackBody
	if !pipeline.DecodeBody(w, r, &b, maxBody, `a JSON object with "app", "environment" and "reason", and optionally "cluster", "to" and "repository"`) {
		return
	}
	for _, f := range []struct{ name, v string }{{"app", b.App}, {"environment", b.Environment}, {"reason", b.Reason}} {
		if strings.TrimSpace(f.v) == "" {
			pipeline.WriteError(w, http.StatusBadRequest, f.name, f.name+" is required")
			return
		}
	}
	ctx, d := r.Context(), h.st.deps
	repo, err := h.repository(r, b)
	if err != nil {
		h.answerError(w, r, "repository", err)
		return
	}
	inst, err := installationOf(ctx, d, repo)
	if err != nil {
		h.answerError(w, r, "repository", err)
		return
	}
	gh, err := d.GitHub.NewInstallationClient(inst)
	if errors.Is(err, ghclient.ErrNotConfigured) {
		// The same words as before an installation was stored: the
		// operator's fix (register the App at /setup) is the same.
		noApp := &pipeline.NoApp{Repository: repo}
		err = &Refused{Reason: noApp.Error(), cause: noApp}
	}
	if err != nil {
		h.answerError(w, r, "", err)
		return
	}
	cfg, err := h.st.loader.Load(ctx, gh.Repositories, repo, "")
	if err != nil {
		h.answerError(w, r, "", err)
		return
	}
	if !cfg.Valid() {
		pipeline.WriteError(w, http.StatusUnprocessableEntity, cfg.Field(), cfg.Explain(repo))
		return
	}
	// An open rollback is a duplicate: the answer says so and names its
	// pull request, and nothing is queued (its job may long be gone, and a
	// new one would only find the record). begin skips attempts whose pull
	// requests were closed unmerged.
	started, err := h.st.begin(ctx, gh, cfg.Config, repo, Start{App: b.App, Environment: b.Environment, Cluster: b.Cluster,
		To: b.To, Reason: b.Reason, RequestedBy: "the API"})
	if err != nil {
		h.answerError(w, r, "", err)
		return
	}
	if open := started.open; open != nil {
		acc := accepted(started.plan, Queued{Duplicate: true})
		acc.PRURL, acc.PRNumber = open.PRURL, open.PRNumber
		pipeline.WriteJSON(w, http.StatusAccepted, acc)
		return
	}
	var q Queued
	err = d.DB.InDurableTx(ctx, func(tx *sql.Tx) error {
		if err := h.st.claim(ctx, tx, started.plan, started.merged); err != nil {
			return err // another rollback of the environment came first: 409
		}
		q, err = h.st.queue(ctx, tx, argsFor(started.plan, nil))
		return err
	})
	if err != nil {
		h.answerError(w, r, "", err)
		return
	}
	pipeline.WriteJSON(w, http.StatusAccepted, accepted(started.plan, q))
}

func accepted(plan Plan, q Queued) Accepted {
	rb := plan.Request.Rollback
	return Accepted{ReleaseID: plan.Record.ReleaseID, RollbackOf: plan.Record.RollbackOf,
		TargetReleaseID: plan.Target, Eligible: rb.Eligibility.Eligible, EligibilityReason: rb.Eligibility.Reason,
		Repository: plan.Request.Repository, JobID: q.JobID, Duplicate: q.Duplicate,
		Release: "/api/v1/releases/" + url.PathEscape(plan.Record.ReleaseID)}
}

// repository is the body's, or the one the newest release there names.
func (h apiHandler) repository(r *http.Request, b rollbackBody) (string, error) {
	if b.Repository != "" {
		if o, n, ok := strings.Cut(b.Repository, "/"); !ok || o == "" || n == "" || strings.Contains(n, "/") {
			return "", refuse("repository %q is not owner/name", b.Repository)
		}
		return b.Repository, nil
	}
	rs, err := h.st.deps.Records.List(r.Context(), records.Filter{App: b.App, Environment: b.Environment, Cluster: b.Cluster, Limit: 1})
	if err != nil {
		return "", err
	}
	if len(rs) == 0 || rs[0].Repository == "" {
		return "", refuse("no release of %s in %s names its repository; pass the app's repository (owner/name) "+
			"as \"repository\" in the request body, or --repository to ripcord rollback", b.App, b.Environment)
	}
	return rs[0].Repository, nil
}

func (h apiHandler) answerError(w http.ResponseWriter, r *http.Request, field string, err error) {
	if pipeline.AppNotConfigured(err) {
		// The server's set-up, not the request, is what to fix: 503, as
		// POST /api/v1/rollouts answers it, naming the settings.
		var noApp *pipeline.NoApp
		msg := err.Error()
		if errors.As(err, &noApp) {
			msg = noApp.Error()
		}
		pipeline.WriteNoApp(w, msg)
		return
	}
	var refused *Refused
	if errors.As(err, &refused) {
		status := http.StatusUnprocessableEntity
		if refused.Open != nil {
			// Another rollback's pull request is open: the request is
			// fine, the environment is busy until it is merged or closed.
			status = http.StatusConflict
		}
		pipeline.WriteError(w, status, field, refused.Reason)
		return
	}
	h.st.deps.Log.Error("rollback request failed", "path", r.URL.Path, "err", err)
	pipeline.WriteError(w, http.StatusInternalServerError, "", "internal error; the server log has the details")
}
