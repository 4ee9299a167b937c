package rolloutflow

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-github/v66/github"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/pipeline"
	"github.com/ripcord/ripcord/internal/ghlimit"
	"github.com/ripcord/ripcord/internal/store"
	"github.com/ripcord/ripcord/records"
)

type api struct {
	x      *executor
	loader *configload.Loader
}

func (a api) routes(d pipeline.Deps) {
	d.Mux.Handle("GET /api/v1/rollouts", d.APIAuth(a.list))
	d.Mux.Handle("POST /api/v1/rollouts", d.APIAuth(a.create))
	d.Mux.Handle("GET /api/v1/rollouts/{id}", d.APIAuth(a.get))
	d.Mux.Handle("POST /api/v1/rollouts/{id}/approve", d.APIAuth(a.approve))
	d.Mux.Handle("POST /api/v1/rollouts/{id}/abort", d.APIAuth(a.abortIt))
	a.probesRoute(d)
}

// Status is a rollout's status JSON, with its audit trail.
func (x *executor) Status(ctx context.Context, id string) (StatusJSON, error) {
	r, err := getRollout(ctx, x.deps.DB.Read, id)
	if err != nil {
		return StatusJSON{}, err
	}
	runs, err := listDispatched(ctx, x.deps.DB.Read, id)
	if err != nil {
		return StatusJSON{}, err
	}
	audit, err := listAudit(ctx, x.deps.DB.Read, id)
	if err != nil {
		return StatusJSON{}, err
	}
	st := statusOf(r, runs, audit)
	return st, pausedBySuspension(ctx, x.deps.DB.Read, []*StatusJSON{&st})
}

// list is GET /api/v1/rollouts: the rollout of ?release_id=, or the
// rollouts of ?app= and ?environment=, newest first, each without its audit
// trail but with its waiting; ?unfinished=true keeps those that have not ended (the one rolling
// out and the ones queued behind it), ?limit= (1-100, default 20).
func (a api) list(w http.ResponseWriter, r *http.Request) {
	if !pipeline.KnownParams(w, r, "release_id", "app", "environment", "unfinished", "limit") {
		return
	}
	q := r.URL.Query()
	if rel := q.Get("release_id"); rel != "" {
		a.listRelease(w, r, rel)
		return
	}
	app, env := q.Get("app"), q.Get("environment")
	switch {
	case app == "" && env == "":
		pipeline.WriteError(w, http.StatusBadRequest, "release_id", "release_id, or app and environment: required")
		return
	case app == "":
		pipeline.WriteError(w, http.StatusBadRequest, "app", "app: required with environment")
		return
	case env == "":
		pipeline.WriteError(w, http.StatusBadRequest, "environment", "environment: required with app")
		return
	}
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			pipeline.WriteError(w, http.StatusBadRequest, "limit", "limit: a whole number from 1 to 100, not "+strconv.Quote(v))
			return
		}
		limit = n
	}
	unfinished := false
	if v := q.Get("unfinished"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			pipeline.WriteError(w, http.StatusBadRequest, "unfinished", "unfinished: true or false, not "+strconv.Quote(v))
			return
		}
		unfinished = b
	}
	ctx := r.Context()
	ros, err := listRollouts(ctx, a.x.deps.DB.Read, app, env, unfinished, limit)
	if err != nil {
		a.internal(w, err)
		return
	}
	ids := make([]string, len(ros))
	for i, ro := range ros {
		ids[i] = ro.ID
	}
	open, err := openUnansweredOf(ctx, a.x.deps.DB.Read, ids)
	if err != nil {
		a.internal(w, err)
		return
	}
	runs, err := dispatchedOf(ctx, a.x.deps.DB.Read, ids)
	if err != nil {
		a.internal(w, err)
		return
	}
	out := make([]StatusJSON, len(ros))
	sts := make([]*StatusJSON, len(ros))
	for i, ro := range ros {
		out[i] = statusOf(ro, runs[ro.ID], nil)
		if l, ok := open[ro.ID]; ok {
			out[i].Waiting = waitingFor(ro.Machine, l)
		}
		sts[i] = &out[i]
	}
	if err := pausedBySuspension(ctx, a.x.deps.DB.Read, sts); err != nil {
		a.internal(w, err)
		return
	}
	pipeline.WriteJSON(w, http.StatusOK, map[string]any{"rollouts": out})
}

func (a api) listRelease(w http.ResponseWriter, r *http.Request, rel string) {
	out := []StatusJSON{}
	ro, err := rolloutOfRelease(r.Context(), a.x.deps.DB.Read, rel)
	if err == nil {
		var st StatusJSON
		if st, err = a.x.Status(r.Context(), ro.ID); err == nil {
			out = append(out, st)
		}
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		a.internal(w, err)
		return
	}
	pipeline.WriteJSON(w, http.StatusOK, map[string]any{"rollouts": out})
}

func (a api) get(w http.ResponseWriter, r *http.Request) {
	st, err := a.x.Status(r.Context(), r.PathValue("id"))
	if errors.Is(err, ErrNotFound) {
		pipeline.WriteError(w, http.StatusNotFound, "id", "no rollout with id "+strconv.Quote(r.PathValue("id")))
		return
	}
	if err != nil {
		a.internal(w, err)
		return
	}
	pipeline.WriteJSON(w, http.StatusOK, st)
}

// startRequest is the body of POST /api/v1/rollouts: the release to open
// (or an open one, by release_id) and roll out.
type startRequest struct {
	ReleaseID      string `json:"release_id"`
	Repository     string `json:"repository"`
	App            string `json:"app"`
	Environment    string `json:"environment"`
	Cluster        string `json:"cluster"`
	Version        string `json:"version"`
	Author         string `json:"author"`
	FreezeOverride bool   `json:"freeze_override"`
}

func (a api) create(w http.ResponseWriter, r *http.Request) {
	var q startRequest
	if !decode(w, r, &q, `a JSON object with "release_id", or "app", "environment" and "version"`) {
		return
	}
	ctx := r.Context()
	var bad *badRequest
	rec, err := a.open(ctx, &q)
	if errors.As(err, &bad) {
		pipeline.WriteError(w, bad.status, bad.field, bad.msg)
		return
	} else if err != nil {
		a.internal(w, err)
		return
	}
	args := StartArgs{ReleaseID: q.ReleaseID, Author: q.Author, FreezeOverride: q.FreezeOverride}
	var ro Rollout
	if rec != nil {
		ro, err = a.x.startNew(ctx, a.loader, *rec, args)
	} else {
		ro, err = a.x.start(ctx, a.loader, args)
	}
	var conflict *records.ConflictError
	if errors.As(err, &conflict) { // opened meanwhile, with other content
		pipeline.WriteError(w, http.StatusConflict, conflict.Field, conflict.Error())
		return
	}
	var rb *rollbackNotStarted
	if errors.As(err, &rb) {
		// Not a rollout's start, but it did stop the rolled-back
		// release's: the answer says so, and how the rollback deploys.
		pipeline.WriteError(w, http.StatusUnprocessableEntity, "release_id", "release_id: "+rb.Error())
		return
	}
	var invalid *configInvalid
	if errors.As(err, &invalid) {
		pipeline.WriteError(w, http.StatusUnprocessableEntity, invalid.field(), invalid.Error())
		return
	}
	if errors.Is(err, errNoRollout) {
		pipeline.WriteError(w, http.StatusUnprocessableEntity, "environment", "environment: "+q.Environment+" of "+q.App+" has no rollout: in .github/ripcord.yml")
		return
	}
	if err != nil {
		now := a.x.deps.Now()
		ref := startRefusal(err, now)
		if ref.status >= 500 && !ref.setup {
			a.x.deps.Log.Warn("rollout not started: retry later", "release", args.ReleaseID, "status", ref.status, "error", err)
			err = fmt.Errorf("%w; nothing was stored: send the same request again later", err)
		}
		if !ref.retry.IsZero() {
			secs := int64((ref.retry.Sub(now) + time.Second - 1) / time.Second)
			w.Header().Set("Retry-After", strconv.FormatInt(max(secs, 1), 10))
		}
		msg := err.Error()
		if ref.why != "" {
			msg = ref.why + ": " + msg
		}
		if ref.setup {
			pipeline.WriteNoApp(w, msg)
			return
		}
		pipeline.WriteError(w, ref.status, ref.field, msg)
		return
	}
	st, err := a.x.Status(ctx, ro.ID)
	if err != nil {
		a.internal(w, err)
		return
	}
	pipeline.WriteJSON(w, http.StatusCreated, st)
}

// refusal is how a refused start is answered: its status, the field
// that names what to fix, and when to send it again (zero when unknown).
type refusal struct {
	status int
	field  string
	retry  time.Time
	why    string // put before the error, when it alone does not say
	// setup: the server's own set-up is the cause (no GitHub App), which
	// the error names; sending the request again changes nothing until
	// it is fixed, so the answer does not say to, and carries
	// pipeline.CodeAppNotConfigured for a client to stop at.
	setup bool
}

// startRefusal answers a start refused with err: 503 when the database or
// GitHub's rate limit is the cause (with the limit's reset when GitHub
// named it), 502 when GitHub did not answer (a 5xx, or no answer at all),
// so that a caller knows the same request may succeed later (nothing was
// stored); 503 too when the server has no GitHub App (its set-up, not the
// request, is what to fix, as every API answers it); 422 otherwise, a
// cause the caller must fix, named in field: the repository for the App
// not installed there (or its installation deleted or suspended) and for
// GitHub refusing to read it, the file for a missing config. 422 rather
// than 409 for the App not installed: 409 is this endpoint's answer to a
// release opened meanwhile with other content, and a client that reads the
// status alone must not mistake one for the other; like the config, the
// installation is something to fix before sending the same request again.
func startRefusal(err error, now time.Time) refusal {
	var er *github.ErrorResponse
	var ue *url.Error
	var missing *configMissing
	var ni *notInstalled
	switch {
	case store.Unavailable(err):
		return refusal{status: http.StatusServiceUnavailable}
	case pipeline.AppNotConfigured(err):
		return refusal{status: http.StatusServiceUnavailable, setup: true}
	case errors.As(err, &er) && er.Response != nil && er.Response.StatusCode >= 500, tokenUnanswered(err):
		return refusal{status: http.StatusBadGateway}
	}
	if at, named, limited := ghlimit.Lifts(err, now); limited {
		r := refusal{status: http.StatusServiceUnavailable}
		if named {
			r.retry = at
		}
		return r
	}
	if status, ok := installationRefused(err); ok {
		return refusal{status: http.StatusUnprocessableEntity, field: "repository",
			why: fmt.Sprintf("GitHub refuses the ripcord App a token for the repository's installation (%d: deleted or suspended); install the App on the repository again", status)}
	}
	if errors.As(err, &ni) {
		return refusal{status: http.StatusUnprocessableEntity, field: "repository"}
	}
	if errors.As(err, &missing) {
		return refusal{status: http.StatusUnprocessableEntity, field: missing.field()}
	}
	if errors.As(err, &er) {
		// GitHub answered: a refusal to read the repository.
		return refusal{status: http.StatusUnprocessableEntity, field: "repository"}
	}
	if errors.As(err, &ue) || errors.Is(err, context.DeadlineExceeded) {
		return refusal{status: http.StatusBadGateway}
	}
	return refusal{status: http.StatusUnprocessableEntity}
}

// badRequest is a 4xx naming the field that is wrong.
type badRequest struct {
	status     int
	field, msg string
}

func (b *badRequest) Error() string { return b.msg }

func bad(field, msg string) error { return &badRequest{http.StatusBadRequest, field, msg} }

// open finds q's release, stored already, or returns the one to open
// (startNew opens it with its rollout, once nothing can refuse the start):
// repository and cluster default to those of the newest release of the app
// and environment.
func (a api) open(ctx context.Context, q *startRequest) (*records.Record, error) {
	if q.ReleaseID != "" {
		rec, err := a.x.deps.Records.Get(ctx, q.ReleaseID)
		if err == nil {
			q.App, q.Environment = rec.App, rec.Environment
			return nil, nil
		}
		if !errors.Is(err, records.ErrNotFound) {
			return nil, err
		}
	}
	// A release_id that names no release opens one only with app,
	// environment and version; without them the id is what is wrong, not
	// the app the user never meant to send. In order, so that the same
	// request is always refused on the same field.
	for _, f := range [][2]string{{"app", q.App}, {"environment", q.Environment}, {"version", q.Version}} {
		switch {
		case f[1] != "":
		case q.ReleaseID != "":
			return nil, bad("release_id", fmt.Sprintf("release_id: no release %q is stored; send the release_id of an open release "+
				"(GET /api/v1/releases lists them), or app, environment and version to open one (%s is missing)", q.ReleaseID, f[0]))
		default:
			return nil, bad(f[0], f[0]+": required (or release_id of an open release)")
		}
	}
	if q.Repository == "" || q.Cluster == "" {
		last, err := a.x.deps.Records.List(ctx, records.Filter{App: q.App, Environment: q.Environment, Limit: 1})
		if err != nil {
			return nil, err
		}
		if len(last) == 1 {
			q.Repository, q.Cluster = cmp.Or(q.Repository, last[0].Repository), cmp.Or(q.Cluster, last[0].Cluster)
		}
	}
	switch {
	case q.Repository == "":
		return nil, bad("repository", "repository: required, no earlier release of "+q.App+" in "+q.Environment+" names one; "+
			"pass the app's repository (owner/name) as \"repository\" in the request body, or --repository to ripcord rollout start")
	case q.Cluster == "":
		return nil, bad("cluster", "cluster: required, no earlier release of "+q.App+" in "+q.Environment+" names one; "+
			"pass it as \"cluster\" in the request body, or --cluster to ripcord rollout start")
	}
	if q.ReleaseID == "" {
		q.ReleaseID = fmt.Sprintf("%s-%s:%s/%s", q.App, q.Version, q.Cluster, q.Environment)
	}
	rec := records.Record{ReleaseID: q.ReleaseID, App: q.App, Environment: q.Environment, Cluster: q.Cluster,
		Repository: q.Repository, Image: q.Version, Kind: records.KindPromote}
	if err := rec.Validate(); err != nil {
		return nil, bad("", err.Error())
	}
	if _, err := a.x.deps.Records.Get(ctx, rec.ReleaseID); errors.Is(err, records.ErrNotFound) {
		return &rec, nil
	} else if err != nil {
		return nil, err
	}
	// Stored already (the same request sent again, or a release a workflow
	// opened): opening it again writes nothing, or is refused when it says
	// something else.
	err := a.x.deps.DB.InTx(ctx, func(tx *sql.Tx) error {
		_, _, err := a.x.deps.Records.OpenRelease(ctx, tx, rec, a.x.deps.Now())
		return err
	})
	var conflict *records.ConflictError
	if errors.As(err, &conflict) {
		return nil, &badRequest{http.StatusConflict, conflict.Field, conflict.Error()}
	}
	return nil, err
}

type voteRequest struct {
	User    string `json:"user"`
	Reject  bool   `json:"reject"`
	Comment string `json:"comment"`
}

func (a api) approve(w http.ResponseWriter, r *http.Request) {
	var q voteRequest
	if !decode(w, r, &q, `a JSON object with "user"`) {
		return
	}
	// The api token names the voter; the voter's own GitHub permission is
	// checked as for the button and /ripcord approve, once ripcord's own
	// records say the vote can count (voteCannotCount): a vote on a
	// rollout that waits for none asks GitHub nothing.
	user := strings.TrimPrefix(strings.TrimSpace(q.User), "@")
	if ro, err := getRollout(r.Context(), a.x.deps.DB.Read, r.PathValue("id")); err == nil && user != "" {
		if err := voteCannotCount(ro); err != nil {
			a.answer(w, r, "", err)
			return
		}
		if inst, err := rolloutInstallation(r.Context(), a.x.deps.DB.Read, ro.ID); err != nil && !errors.Is(err, ErrNotFound) {
			a.internal(w, err)
			return
		} else if inst.suspended {
			a.answer(w, r, "", refuse("rollout %s waits while the App's installation %d is suspended: @%s's permission "+
				"cannot be read from GitHub until then; vote again once the installation is unsuspended", ro.ID, inst.id, user))
			return
		}
		if err := a.x.mayVote(r.Context(), ro, ro.InstallationID, user); err != nil {
			a.answer(w, r, "", err)
			return
		}
	}
	reply, err := a.x.vote(r.Context(), r.PathValue("id"), user, !q.Reject, q.Comment, "API")
	a.answer(w, r, reply, err)
}

type abortRequest struct {
	User   string `json:"user"`
	Reason string `json:"reason"`
}

func (a api) abortIt(w http.ResponseWriter, r *http.Request) {
	var q abortRequest
	if !decode(w, r, &q, `a JSON object with "user"`) {
		return
	}
	reply, err := a.x.abort(r.Context(), r.PathValue("id"), q.User, q.Reason)
	a.answer(w, r, reply, err)
}

func (a api) answer(w http.ResponseWriter, r *http.Request, reply string, err error) {
	var refused *Refused
	switch {
	case errors.Is(err, ErrNotFound):
		pipeline.WriteError(w, http.StatusNotFound, "id", "no rollout with id "+strconv.Quote(r.PathValue("id")))
	case errors.As(err, &refused):
		field := ""
		if strings.HasPrefix(refused.Reason, "user:") {
			field = "user"
		}
		pipeline.WriteError(w, http.StatusConflict, field, refused.Reason)
	case err != nil:
		a.internal(w, err)
	default:
		pipeline.WriteJSON(w, http.StatusOK, map[string]string{"message": reply})
	}
}

func (a api) internal(w http.ResponseWriter, err error) {
	a.x.deps.Log.Error("rollouts API", "error", err)
	pipeline.WriteError(w, http.StatusInternalServerError, "", "internal error")
}

// maxBody bounds a rollouts API body; app's limitBodies refuses a larger
// Content-Length before the handler runs, decode a chunked body as it reads.
const maxBody = 1 << 20

// decode reads a strict JSON body (pipeline.DecodeBody): an unknown field
// is a 400 naming it, a body over maxBody a 413 naming the limit, and an
// empty body a 400 naming want, what the route requires, not a request of
// zero values.
func decode(w http.ResponseWriter, r *http.Request, v any, want string) bool {
	return pipeline.DecodeBody(w, r, v, maxBody, want)
}
