package app

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/internal/oidcauth"
	"github.com/ripcord/ripcord/internal/secret"
	"github.com/ripcord/ripcord/records"
)

// maxFactsPerRequest bounds a {"facts": [...]} batch.
const maxFactsPerRequest = 500

// factResult is what a fact did, as the API answers it.
type factResult struct {
	ID        string `json:"id"`
	Outcome   string `json:"outcome"`
	ReleaseID string `json:"release_id,omitempty"`
	State     string `json:"state,omitempty"`
	Reason    string `json:"reason,omitempty"`
}

// postClusterFacts is POST /api/v1/facts/{cluster}: the agent and other
// cluster sources, authenticated by the cluster's bearer token.
func (s *Server) postClusterFacts(w http.ResponseWriter, r *http.Request) {
	cluster := r.PathValue("cluster")
	if status, msg := s.checkClusterToken(r, cluster); status != 0 {
		writeError(w, status, "", msg)
		return
	}
	facts, batch, ok := s.readFacts(w, r, cluster)
	if !ok {
		return
	}
	for i := range facts {
		if facts[i].Cluster != cluster {
			writeError(w, http.StatusForbidden, factField(batch, i, "cluster"),
				fmt.Sprintf("the fact is for cluster %q but was posted to /api/v1/facts/%s with that cluster's token", facts[i].Cluster, cluster))
			return
		}
	}
	if !s.requireClusterTasks(w, r, cluster, facts, batch) {
		return
	}
	s.applyFacts(w, r, facts, batch)
}

// requireClusterTasks refuses with 403 a task fact posted with a cluster's
// token that names a release of another cluster, or of none (a workflow
// deploy), or that releases an app's environment under another repository
// than the one it belongs to (requireOwner). A cluster token vouches for
// that cluster only, and a task fact's repository is whatever its sender
// wrote: without this, any cluster's token could fail (and so start the
// recovery of) a workflow deploy, or open releases of any app under any
// repository, which then count for eligibility.
func (s *Server) requireClusterTasks(w http.ResponseWriter, r *http.Request, cluster string, facts []records.Fact, batch bool) bool {
	owners := map[[3]string]bool{}
	for i, f := range facts {
		if !f.IsTask() {
			continue
		}
		rec, found, ok := s.storedRelease(w, r, f)
		switch {
		case !ok:
			return false
		case found && rec.Cluster != cluster:
			writeError(w, http.StatusForbidden, factField(batch, i, "release_id"), fmt.Sprintf(
				"release %s is not of cluster %s (it is of %s): a cluster's token may post task facts of that cluster's releases only",
				rec.ReleaseID, cluster, cmp.Or(rec.Cluster, "no cluster")))
			return false
		}
		key := [3]string{f.Repository, f.App, f.Environment}
		if owners[key] {
			continue
		}
		if !s.requireOwner(w, r, f.Repository, f.App, f.Environment, factField(batch, i, "app")) {
			return false
		}
		owners[key] = true
	}
	return true
}

// checkClusterToken returns 0 when the bearer is one of the named
// cluster's tokens, 401 when it is no cluster's, 403 when it is another
// cluster's.
func (s *Server) checkClusterToken(r *http.Request, cluster string) (int, string) {
	got, ok := bearer(r)
	if !ok {
		return http.StatusUnauthorized, "missing bearer token: send Authorization: Bearer <the cluster's token>"
	}
	if len(s.cfg.Clusters) == 0 {
		// No token can be right: "wrong token" sent people to check a
		// token the server never had. Still 401, so the agent keeps its
		// facts spooled until the server is configured.
		return http.StatusUnauthorized, fmt.Sprintf("no cluster is configured on this server, so no token of cluster %q is known: "+
			"add it to the server's clusters setting (--clusters, RIPCORD_CLUSTERS=%s=TOKEN, or clusters: in the --config file) "+
			"and restart it", cluster, cluster)
	}
	if toks, known := s.cfg.Clusters[cluster]; known && s.isClusterToken(cluster, toks, got) {
		return 0, ""
	}
	for name, toks := range s.cfg.Clusters {
		if name != cluster && s.isClusterToken(name, toks, got) {
			return http.StatusForbidden, fmt.Sprintf("this token belongs to cluster %q, not %q", name, cluster)
		}
	}
	return http.StatusUnauthorized, fmt.Sprintf("wrong token for cluster %q (clusters are configured in the server's clusters setting)", cluster)
}

// isClusterToken compares got with every token of the cluster in constant
// time, without stopping at a match, so the time taken tells nothing of
// which token (or how many) matched.
func (s *Server) isClusterToken(cluster string, toks *config.Tokens, got string) bool {
	if toks == nil {
		return false
	}
	list, err := toks.List()
	if err != nil {
		s.log.Warn("a cluster's token file cannot be read again", "cluster", cluster, "err", err)
	}
	match := false
	for _, want := range list {
		// Not ||: that would stop comparing at the first match.
		match = secret.Equal(got, want) || match
	}
	return match
}

// postTaskFacts is POST /api/v1/facts: workflows, through the bundled action,
// authenticated by the job's GitHub Actions OIDC token.
func (s *Server) postTaskFacts(w http.ResponseWriter, r *http.Request) {
	claims, ok := s.verifyOIDC(w, r)
	if !ok {
		return
	}
	facts, batch, ok := s.readFacts(w, r, "")
	if !ok {
		return
	}
	for i, f := range facts {
		if f.Source != records.SourceTask {
			writeError(w, http.StatusForbidden, factField(batch, i, "source"),
				"a workflow's OIDC token may post task facts only; cluster facts go to /api/v1/facts/{cluster} with the cluster's token")
			return
		}
		if f.Repository != claims.Repository {
			writeError(w, http.StatusForbidden, factField(batch, i, "repository"),
				fmt.Sprintf("the token was issued to a workflow of %q, not %q", claims.Repository, f.Repository))
			return
		}
	}
	if ok := s.requireInstalled(w, r, claims.Repository); !ok {
		return
	}
	if !s.requireOwnReleases(w, r, claims.Repository, facts, batch) {
		return
	}
	owners := map[[2]string]bool{}
	for i, f := range facts {
		key := [2]string{f.App, f.Environment}
		if owners[key] {
			continue
		}
		if !s.requireOwner(w, r, claims.Repository, f.App, f.Environment, factField(batch, i, "app")) {
			return
		}
		owners[key] = true
	}
	targets, err := s.factTargets(r.Context(), facts, batch)
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	if !s.requireOIDCRule(w, r, claims, targets) {
		return
	}
	s.applyFacts(w, r, facts, batch)
}

// requireOwnReleases refuses with 403 a task fact of a workflow of repo
// that names a release of another repository. The store would ignore it
// (records' foreignTask), but an ignored fact is answered with the state
// of the release it names and leaves a fact_ignored event in that
// release's timeline: another repository's workflow could read the one
// and write the other. A release registered without a repository takes
// any, as the store lets it.
func (s *Server) requireOwnReleases(w http.ResponseWriter, r *http.Request, repo string, facts []records.Fact, batch bool) bool {
	for i, f := range facts {
		if f.ReleaseKey() == "" {
			continue
		}
		rec, found, ok := s.storedRelease(w, r, f)
		switch {
		case !ok:
			return false
		case found && rec.Repository != "" && !strings.EqualFold(rec.Repository, repo):
			field := "release_id"
			if f.ReleaseID == "" {
				field = "deployment_id" // the release's key when it names no release_id
			}
			writeError(w, http.StatusForbidden, factField(batch, i, field), fmt.Sprintf(
				"release %s is not of %s: a workflow's token may post task facts of its own repository's releases only", f.ReleaseKey(), repo))
			return false
		}
	}
	return true
}

// storedRelease is the release fact f names; found is false when none is
// stored, and ok false when reading it failed (answered with a 500).
func (s *Server) storedRelease(w http.ResponseWriter, r *http.Request, f records.Fact) (rec records.Record, found, ok bool) {
	rec, err := s.records.Get(r.Context(), f.ReleaseKey())
	switch {
	case errors.Is(err, records.ErrNotFound):
		return rec, false, true
	case err != nil:
		s.internalError(w, r, err)
		return rec, false, false
	}
	return rec, true, true
}

// requireOwner refuses with 403, naming field, a workflow of repo that
// releases app in environment when another repository owns them: the one
// of their first release (records.Store.Owner). A workflow's OIDC token
// vouches for its own repository only; without this, any repository the App
// is installed on could open releases of any app, and so move its
// eligibility and recovery. A first release claims the app's environment
// for its repository.
func (s *Server) requireOwner(w http.ResponseWriter, r *http.Request, repo, app, environment, field string) bool {
	owner, err := s.records.Owner(r.Context(), app, environment)
	if err != nil {
		s.internalError(w, r, err)
		return false
	}
	if owner != "" && !strings.EqualFold(owner, repo) {
		writeError(w, http.StatusForbidden, field, fmt.Sprintf(
			"%s in %s belongs to %s, the repository of its first release; a workflow of %s cannot release it", app, environment, owner, repo))
		return false
	}
	return true
}

// verifyOIDC checks a GitHub Actions OIDC bearer token.
func (s *Server) verifyOIDC(w http.ResponseWriter, r *http.Request) (*oidcauth.Claims, bool) {
	raw, ok := bearer(r)
	if !ok {
		writeError(w, http.StatusUnauthorized, "", "missing bearer token: send the job's GitHub Actions OIDC token (permissions: id-token: write)")
		return nil, false
	}
	claims, err := s.oidc.Verify(r.Context(), raw)
	if errors.Is(err, oidcauth.ErrIssuerUnavailable) {
		s.log.Warn("OIDC issuer unavailable", "err", err)
		writeError(w, http.StatusServiceUnavailable, "", "cannot reach the OIDC issuer to check the token; retry later")
		return nil, false
	}
	if err != nil {
		writeError(w, http.StatusUnauthorized, "", "OIDC token refused: "+err.Error()+s.oidcAdvice(err))
		return nil, false
	}
	return claims, true
}

// oidcAdvice says what a workflow author (or ripcord's operator) can do
// about a refused token, after the refusal itself.
func (s *Server) oidcAdvice(err error) string {
	switch {
	case errors.Is(err, oidcauth.ErrWrongAudience):
		return fmt.Sprintf("; request the token for audience %q (the ripcord action's audience input, which defaults to its server input), "+
			"or set ripcord's oidc.audience to the audience the workflow requests", s.cfg.OIDC.Audience)
	case errors.Is(err, oidcauth.ErrWrongIssuer):
		return "; ripcord's oidc.issuer must be the issuer of your GitHub's Actions tokens " +
			"(" + oidcauth.DefaultIssuer + " on github.com, https://HOST/_services/token on GitHub Enterprise Server)"
	case errors.Is(err, oidcauth.ErrExpired), errors.Is(err, oidcauth.ErrNotYetValid):
		return "; the ripcord action requests a fresh token for every post, so the clocks of ripcord's host and GitHub disagree: check ripcord's host's time (NTP)"
	case errors.Is(err, oidcauth.ErrBadSignature):
		return "; the token is not signed by a key of ripcord's oidc.issuer: send the job's own GitHub Actions OIDC token, as the ripcord action does"
	default:
		return "; send the job's GitHub Actions OIDC token, as the ripcord action does (permissions: id-token: write)"
	}
}

func (s *Server) requireInstalled(w http.ResponseWriter, r *http.Request, repo string) bool {
	installed, err := installedOn(r.Context(), s.db.Read, repo)
	if err != nil {
		s.internalError(w, r, err)
		return false
	}
	if !installed {
		writeError(w, http.StatusForbidden, "repository", fmt.Sprintf(
			"the ripcord App is not installed on %s: install it there (the App's page on GitHub, Configure, Repository access), then post again", repo))
		return false
	}
	return true
}

// factsWant is what a facts route takes, said when the body is empty.
const factsWant = `one fact, a JSON object with "source", "observed_at" and the fields of its source, or {"facts": [fact, ...]}`

// readFacts decodes one fact or {"facts": [...]} strictly and validates every
// fact before any is applied. A fact that names no cluster takes cluster
// (the one the path and token name; "" for none) before it is validated.
func (s *Server) readFacts(w http.ResponseWriter, r *http.Request, cluster string) ([]records.Fact, bool, bool) {
	body, ok := readBody(w, r)
	if !ok {
		return nil, false, false
	}
	var facts []records.Fact
	batch := gjson.GetBytes(body, "facts").IsArray()
	if batch {
		// Each fact is decoded on its own so an error names its index.
		var b struct {
			Facts []json.RawMessage `json:"facts"`
		}
		if err := decodeStrict(body, &b, "", factsWant); err != nil {
			writeFieldError(w, err)
			return nil, false, false
		}
		facts = make([]records.Fact, len(b.Facts))
		for i, raw := range b.Facts {
			if err := decodeStrict(raw, &facts[i], fmt.Sprintf("facts[%d]", i), ""); err != nil {
				writeFieldError(w, err)
				return nil, false, false
			}
		}
	} else {
		var f records.Fact
		if err := decodeStrict(body, &f, "", factsWant); err != nil {
			writeFieldError(w, err)
			return nil, false, false
		}
		facts = []records.Fact{f}
	}
	if len(facts) == 0 || len(facts) > maxFactsPerRequest {
		writeError(w, http.StatusBadRequest, "facts", fmt.Sprintf("send 1 to %d facts", maxFactsPerRequest))
		return nil, false, false
	}
	for i := range facts {
		if facts[i].Cluster == "" {
			facts[i].Cluster = cluster
		}
		if err := facts[i].ValidateSent(s.storedID(r.Context())); err != nil {
			field, msg := fieldProblems(err, func(f string) string { return factField(batch, i, f) })
			writeError(w, http.StatusBadRequest, field, msg)
			return nil, false, false
		}
	}
	return facts, batch, true
}

// storedID is records.StoredID read from the store: an id over the cap,
// built by ripcord before its ids were shortened, passes when its release
// is stored, and when the store cannot say (the request then fails where
// the store is needed, as any request does while it is down).
func (s *Server) storedID(ctx context.Context) records.StoredID {
	return func(id string) bool {
		_, err := s.records.Get(ctx, id)
		return !errors.Is(err, records.ErrNotFound)
	}
}

func factField(batch bool, i int, field string) string {
	if !batch {
		return field
	}
	return join(fmt.Sprintf("facts[%d]", i), field)
}

// applyFacts applies the facts with their effects' jobs, all of them or, on
// any error, none, in a group commit with other requests' (factcommit.go).
func (s *Server) applyFacts(w http.ResponseWriter, r *http.Request, facts []records.Fact, batch bool) {
	results, err := s.commitFacts(facts, time.Now().UTC())
	if err != nil {
		s.internalError(w, r, err)
		return
	}
	for i, res := range results {
		s.metrics.facts.WithLabelValues(res.Outcome).Inc()
		// A duplicate or ignored fact changes no record; answer with the
		// state of the release it names all the same.
		if res.State == "" && facts[i].ReleaseKey() != "" {
			if rec, err := s.records.Get(r.Context(), facts[i].ReleaseKey()); err == nil {
				results[i].ReleaseID, results[i].State = rec.ReleaseID, string(rec.State)
			}
		}
	}
	if batch {
		writeJSON(w, http.StatusOK, map[string]any{"results": results})
		return
	}
	writeJSON(w, http.StatusOK, results[0])
}

// applyOwnFacts applies facts that ripcord reports itself (pipeline.Deps'
// ApplyFacts) through the group commit POST /api/v1/facts uses, so their
// effects follow as a workflow's facts' do. The caller built them: they
// pass no token or owner check.
func (s *Server) applyOwnFacts(facts []records.Fact) error {
	results, err := s.commitFacts(facts, time.Now().UTC())
	if err != nil {
		return err
	}
	for i, res := range results {
		s.metrics.facts.WithLabelValues(res.Outcome).Inc()
		if res.Outcome != string(records.OutcomeApplied) {
			s.log.Info("a fact ripcord reported itself changed nothing", "release_id", facts[i].ReleaseKey(),
				"fact_id", res.ID, "outcome", res.Outcome, "reason", res.Reason)
		}
	}
	return nil
}

func resultOf(res records.Result) factResult {
	out := factResult{ID: res.FactID, Outcome: string(res.Outcome), Reason: res.Reason}
	if len(res.Records) > 0 {
		out.ReleaseID = res.Records[0].ReleaseID
		out.State = string(res.Records[0].State)
	}
	return out
}
