package app

import (
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/ripcord/ripcord/app/deployments"
	"github.com/ripcord/ripcord/app/rollbackflow"
	"github.com/ripcord/ripcord/app/rolloutflow"
	"github.com/ripcord/ripcord/internal/oidcauth"
	"github.com/ripcord/ripcord/internal/secret"
	"github.com/ripcord/ripcord/records"
	"github.com/tidwall/gjson"
)

// releaseRequest is the body of POST /api/v1/releases.
type releaseRequest struct {
	ReleaseID      string       `json:"release_id"`
	App            string       `json:"app"`
	Environment    string       `json:"environment"`
	Cluster        string       `json:"cluster"`
	Repository     string       `json:"repository"`
	Image          string       `json:"image"`
	Digest         string       `json:"digest"`
	GitRevision    string       `json:"git_revision"`
	ConfigRevision string       `json:"config_revision"`
	Kind           records.Kind `json:"kind"`
	RollbackOf     string       `json:"rollback_of"`
	RollbackReason string       `json:"rollback_reason"`
	PR             *struct {
		URL    string `json:"url"`
		Number int    `json:"number"`
	} `json:"pr"`
	FlowStartedAt *time.Time `json:"flow_started_at"`
	// FreezeOverride lets the release's rollout through freeze windows.
	FreezeOverride bool `json:"freeze_override"`
}

func (q releaseRequest) record() records.Record {
	r := records.Record{
		ReleaseID: q.ReleaseID, App: q.App, Environment: q.Environment, Cluster: q.Cluster,
		Repository: q.Repository, Image: q.Image, Digest: q.Digest, GitRevision: q.GitRevision,
		ConfigRevision: q.ConfigRevision, Kind: q.Kind, RollbackOf: q.RollbackOf,
		RollbackReason: q.RollbackReason, FlowStartedAt: q.FlowStartedAt,
	}
	if r.Kind == "" {
		r.Kind = records.KindPromote
	}
	if q.PR != nil {
		r.PRURL, r.PRNumber = q.PR.URL, q.PR.Number
	}
	return r
}

// postRelease is POST /api/v1/releases: release tooling (api token) or a
// workflow (OIDC token of the repository named in the body) opens a release.
func (s *Server) postRelease(w http.ResponseWriter, r *http.Request) {
	viaToken := s.isAPIToken(r)
	if !viaToken && s.oidc == nil {
		writeError(w, http.StatusUnauthorized, "", "missing or wrong bearer token: send Authorization: Bearer <api_token>")
		return
	}
	var claims *oidcauth.Claims
	var repoClaim string
	if !viaToken {
		// Release tooling sends the api_token: a missing or mistyped one is
		// not a refused OIDC token, and must not be answered as one.
		if raw, ok := bearer(r); !ok || strings.Count(raw, ".") != 2 {
			writeError(w, http.StatusUnauthorized, "", "missing or wrong bearer token: it is neither the api_token nor a GitHub Actions OIDC token; "+
				"send Authorization: Bearer <api_token>, or from a workflow the job's OIDC token (permissions: id-token: write)")
			return
		}
		var ok bool
		if claims, ok = s.verifyOIDC(w, r); !ok {
			return
		}
		repoClaim = claims.Repository
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var q releaseRequest
	if err := decodeStrict(body, &q, "", `a JSON object with "release_id", "app", "environment", "cluster" and "image"`); err != nil {
		writeFieldError(w, nestedUnknownField(body, err))
		return
	}
	rec := q.record()
	if err := rec.ValidateRegistered(s.storedID(r.Context())); err != nil {
		field, msg := fieldProblems(err, requestField)
		writeError(w, http.StatusBadRequest, field, msg)
		return
	}
	if !viaToken {
		if rec.Repository != repoClaim {
			writeError(w, http.StatusForbidden, "repository",
				fmt.Sprintf("the token was issued to a workflow of %q, not %q", repoClaim, rec.Repository))
			return
		}
		if !s.requireInstalled(w, r, repoClaim) {
			return
		}
		if !s.requireOwner(w, r, repoClaim, rec.App, rec.Environment, "app") {
			return
		}
		if !s.requireOIDCRule(w, r, claims, []oidcTarget{{app: rec.App, environment: rec.Environment}}) {
			return
		}
		if q.FreezeOverride {
			// A freeze restrains what the repository's workflows deploy:
			// one of them must not lift it for itself.
			writeError(w, http.StatusForbidden, "freeze_override", "a workflow's OIDC token cannot override freezes; "+
				"open the release without freeze_override, and start its rollout with the api_token: ripcord rollout start --freeze-override")
			return
		}
	}
	var opened records.Record
	var created bool
	err := s.db.InDurableTx(r.Context(), func(tx *sql.Tx) error {
		var events []records.AuditEvent
		var err error
		opened, events, err = s.records.OpenRelease(r.Context(), tx, rec, time.Now().UTC())
		if err != nil {
			return err
		}
		created = len(events) > 0
		if !created {
			return nil
		}
		if err := rollbackflow.QueueReleaseChecks(r.Context(), tx, s.river, []records.Record{opened}); err != nil {
			return err
		}
		if err := deployments.Queue(r.Context(), tx, s.river, s.log, []records.Record{opened}); err != nil {
			return err
		}
		if err := rolloutflow.QueueStart(r.Context(), tx, s.river, rolloutflow.StartArgs{ReleaseID: opened.ReleaseID,
			FreezeOverride: q.FreezeOverride}); err != nil {
			return err
		}
		return s.scheduleStallCheck(r.Context(), tx, opened)
	})
	var conflict *records.ConflictError
	var invalid *records.FieldError
	switch {
	case errors.As(err, &invalid):
		// What only the store can check: rollback_of naming a release
		// of another app, environment or cluster.
		field, msg := fieldProblems(invalid, requestField)
		writeError(w, http.StatusBadRequest, field, msg)
		return
	case errors.As(err, &conflict):
		if !viaToken && !s.ownRelease(w, r, q.ReleaseID, repoClaim) {
			return
		}
		c := *conflict
		c.Field = requestField(c.Field)
		writeError(w, http.StatusConflict, c.Field, c.Error())
		return
	case err != nil:
		s.internalError(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, opened)
}

// nestedUnknownField names an unknown field inside pr by its path: Go's
// decoder names it alone ("nuber"), which reads as a top-level field.
func nestedUnknownField(body []byte, err error) error {
	var fe *fieldError
	if !errors.As(err, &fe) || fe.Message != "unknown field" || fe.Field == "" {
		return err
	}
	key := gjson.Escape(fe.Field)
	if !gjson.GetBytes(body, key).Exists() && gjson.GetBytes(body, "pr."+key).Exists() {
		return &fieldError{Field: "pr." + fe.Field, Message: fe.Message}
	}
	return err
}

// requestField is the name a POST /api/v1/releases body gives a record
// field: the pull request is sent as pr {url, number}.
func requestField(field string) string {
	switch field {
	case "pr_url":
		return "pr.url"
	case "pr_number":
		return "pr.number"
	}
	return field
}

// fieldProblems turns validation problems (records.FieldErrors, joined)
// into a 400's field (the first problem's) and message (every problem,
// "; " apart, on one line), each field renamed to what the request calls it.
func fieldProblems(err error, rename func(string) string) (field, msg string) {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	parts := make([]string, 0, len(errs))
	for _, e := range errs {
		var fe *records.FieldError
		if !errors.As(e, &fe) {
			parts = append(parts, e.Error())
			continue
		}
		name := rename(fe.Field)
		if field == "" {
			field = name
		}
		parts = append(parts, name+": "+fe.Message)
	}
	return field, strings.Join(parts, "; ")
}

// ownRelease answers 403, naming no value of it, when release id is of
// another repository than repo, the workflow's that sent it: the 409 of a
// release sent again names what the stored one holds, which is for its
// own repository's workflows to read. A release registered without a
// repository is answered as before.
func (s *Server) ownRelease(w http.ResponseWriter, r *http.Request, id, repo string) bool {
	stored, err := s.records.Get(r.Context(), id)
	if errors.Is(err, records.ErrNotFound) {
		return true // swept since: the conflict's answer is all there is
	}
	if err != nil {
		s.internalError(w, r, err)
		return false
	}
	if stored.Repository != "" && !strings.EqualFold(stored.Repository, repo) {
		writeError(w, http.StatusForbidden, "release_id", fmt.Sprintf(
			"release %s is not of %s: a workflow's token may open its own repository's releases only", id, repo))
		return false
	}
	return true
}

func (s *Server) isAPIToken(r *http.Request) bool {
	got, ok := bearer(r)
	return ok && s.cfg.APIToken != "" && secret.Equal(got, s.cfg.APIToken)
}

func (s *Server) listReleases(w http.ResponseWriter, r *http.Request) {
	if !knownParams(w, r, "app", "environment", "cluster", "state", "limit") {
		return
	}
	limit, ok := listLimit(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	f := records.Filter{App: q.Get("app"), Environment: q.Get("environment"), Cluster: q.Get("cluster"),
		State: records.State(q.Get("state")), Limit: limit}
	if f.State != "" && !f.State.Valid() {
		writeError(w, http.StatusBadRequest, "state", fmt.Sprintf("unknown state %q; states are %s", f.State, joinNames(records.States)))
		return
	}
	rs, err := s.records.List(r.Context(), f)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"releases": orEmpty(rs)})
}

// orEmpty is s, or an empty slice for none: a list the API answers is a
// JSON array even when nothing matches, as on /api/v1/deliveries and
// /api/v1/rollouts, never null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func (s *Server) getRelease(w http.ResponseWriter, r *http.Request) {
	rec, err := s.records.Get(r.Context(), r.PathValue("id"))
	if errors.Is(err, records.ErrNotFound) {
		writeError(w, http.StatusNotFound, "id", "no release with id "+strconv.Quote(r.PathValue("id")))
		return
	}
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

// getReleaseAudit is a release's timeline, oldest first.
func (s *Server) getReleaseAudit(w http.ResponseWriter, r *http.Request) {
	if !knownParams(w, r, "limit") {
		return
	}
	limit, ok := listLimit(w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	if _, err := s.records.Get(r.Context(), id); errors.Is(err, records.ErrNotFound) {
		writeError(w, http.StatusNotFound, "id", "no release with id "+strconv.Quote(id))
		return
	}
	events, err := s.records.Audit(r.Context(), records.AuditFilter{ReleaseID: id, Limit: limit, Oldest: true})
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"release_id": id, "events": orEmpty(events)})
}

// getAudit is GET /api/v1/audit: drift and stall events have no record of
// their own, so this is where they are found.
func (s *Server) getAudit(w http.ResponseWriter, r *http.Request) {
	if !knownParams(w, r, "release_id", "type", "delivery_id", "limit") {
		return
	}
	limit, ok := listLimit(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	f := records.AuditFilter{ReleaseID: q.Get("release_id"), Type: records.AuditType(q.Get("type")),
		DeliveryID: q.Get("delivery_id"), Limit: limit}
	if f.Type != "" && !f.Type.Valid() {
		writeError(w, http.StatusBadRequest, "type", fmt.Sprintf("unknown audit event type %q; types are %s", f.Type, joinNames(records.AuditTypes)))
		return
	}
	events, err := s.records.Audit(r.Context(), f)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": orEmpty(events)})
}

// joinNames lists the values a filter takes as a person writes them, comma
// apart: fmt's %v of a slice printed "[opened progressing …]".
func joinNames[T ~string](names []T) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = string(n)
	}
	return strings.Join(out, ", ")
}
